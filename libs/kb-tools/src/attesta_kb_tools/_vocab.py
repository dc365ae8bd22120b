"""Seed templates and vocabulary for the synthetic knowledge base.

Everything here is invented. Eponyms, biomarkers, drug classes, medicines,
companies and hospitals are fictional; body parts and generic symptoms are the
only real-world words. Nothing in this file is medical advice.

`attesta_kb_tools.builder` combines these seeds with a fixed RNG seed to produce the
committed data files; `attesta_kb_tools.generate` reuses a few lists for scale-out.
"""

from __future__ import annotations

from typing import TypedDict


class BodySystem(TypedDict):
    """One body system: the seeds of its conditions, medicines and procedures."""

    key: str
    adj: str
    organ: str
    organ_short: str
    specialist: str
    nouns: list[str]
    features: list[str]
    symptoms: list[str]
    biomarker: tuple[str, str, tuple[int, int]]  # name, unit, (low, high) diagnostic cut-off
    imaging: list[str]
    routes: list[str]
    classes: list[tuple[str, str, str]]  # drug class, mechanism, generic-name suffix
    adverse: list[str]
    # name, approach, (min, max) minutes, stay, device
    procedures: list[tuple[str, str, tuple[int, int], str, str]]


class RefSite(TypedDict):
    """A reference site hosting cards: its origin, licence and path per card kind."""

    base: str
    license: str
    paths: dict[str, str]

# --------------------------------------------------------------------------------------
# Invented surnames used as eponyms for conditions, procedures and their describers.
# Chosen to avoid real eponymous diseases.
SURNAMES: list[str] = [
    "Ashcombe", "Bellweather", "Carrow", "Dallimore", "Emberley", "Fenwright", "Garroway",
    "Hesketh", "Ingleby", "Jessop", "Lathrop", "Marchbank", "Netherby", "Oakhurst", "Pendry",
    "Quarles", "Rudyard", "Stanfield", "Thorncliffe", "Upwood", "Vexley", "Wetherell",
    "Yarrow", "Zelland", "Abelard", "Blakiston", "Corbishley", "Denholm", "Esterby",
    "Fairlie", "Gilmartin", "Harcastle", "Jardine", "Kinloch", "Lorimer", "Mossop",
    "Norcott", "Ormsby", "Penhallow", "Ravenhill", "Selwood", "Tarrant", "Uttley", "Verrall",
    "Wimbourne", "Aldous", "Birtwistle", "Cheverton", "Dovey", "Eskdale", "Gorringe",
    "Hollins", "Ivesdale", "Jolliffe", "Kersey", "Lindqvist", "Mabry", "Nevins", "Ottley",
    "Prewitt", "Quenby", "Sorensby", "Trevask", "Umberleigh", "Wrexford", "Aubery",
    "Brisco", "Castellane", "Dravick", "Elmsworth", "Galbraith", "Hadleigh", "Kalder",
    "Merriden", "Nolloth", "Orwin", "Redfern", "Sallow", "Ulrick", "Voskuijlen",
    "Whitcombe", "Ysander", "Zorrilla", "Okonkwo", "Haraldsen", "Moreau-Vidal", "Takahara",
    "Szeleny", "Kowalczyk", "Oyelaran", "Castelbranco", "Lindahl", "Virtanen", "Achterberg",
    "Bramhall", "Coverdale", "Duquesne", "Eversholt", "Fitzalan", "Grimsdyke", "Holloran",
    "Iredale", "Kettlewell", "Loxley", "Mayhall", "Northam", "Oldroyd", "Pilkerton",
    "Rothwell", "Saltonstall", "Treharne", "Vantongeren", "Wardle", "Adebayo", "Brennsvik",
    "Cassavetti", "Delacourt", "Engelbrecht", "Ferreira-Lobo", "Gudmundsen", "Hvidberg",
]

# Names reserved for hand-written anchor conditions (never drawn by the RNG).
ANCHOR_SURNAMES: list[str] = [
    "Ostrander", "Halloway", "Harrow-Lind", "Quessel", "Pellmore", "Varnholt", "Dunmore",
    "Mercival",
]

HOSPITALS: list[str] = [
    "Marrowgate University Hospital", "Kelderwick Medical Centre", "St. Oswin's Infirmary",
    "Brackenfield General Hospital", "Ravensholm Institute", "Tidemoor Clinic",
    "Ashbury Royal Infirmary", "Northvale University Medical Center",
    "Greyhaven Children's Hospital", "Lowmere Institute of Surgery",
    "Cinderford Teaching Hospital", "Wyndmoor Regional Medical Center",
]

FIRST_NAMES: list[str] = [
    "Aurelie", "Bastian", "Celeste", "Dorian", "Elodie", "Florian", "Greta", "Hugo",
    "Ines", "Jonas", "Katarina", "Lucian", "Mirela", "Nikolai", "Odette", "Pascal",
    "Rosalind", "Soren", "Tamsin", "Viggo", "Wilhelmina", "Yusuf", "Zofia", "Anselm",
]

# --------------------------------------------------------------------------------------
# Medicine name syllables (brand names) and generic stems.
BRAND_START = [
    "Tor", "Ami", "Cal", "Dex", "Fen", "Gal", "Hex", "Ilo", "Jun", "Kav", "Lor", "Mer",
    "Nov", "Pra", "Quin", "Rav", "Sel", "Tam", "Ulv", "Ves", "Wyn", "Xal", "Zor", "Bri",
    "Cor", "Del", "Eph", "Fal", "Gry", "Hal", "Isp", "Kel", "Lun", "Mav", "Nyr", "Opt",
    "Pel", "Ryv", "Sab", "Tes", "Uma", "Var", "Zen", "Alv", "Bel", "Cyr", "Dra", "Elt",
]
BRAND_MID = ["a", "e", "i", "o", "ra", "ne", "li", "vo", "ta", "mi", "ro", "si", "du", "ze"]
BRAND_END = [
    "rex", "lin", "via", "tra", "dex", "zol", "cept", "vance", "quil", "tor", "nix", "sta",
    "lyn", "mera", "dia", "pax", "ren", "vel", "zia", "ton",
]
GENERIC_START = [
    "tor", "ami", "cal", "dex", "fen", "gal", "hex", "ilo", "jun", "kav", "lor", "mer",
    "nov", "pra", "quin", "rav", "sel", "tam", "ulv", "ves", "wyn", "xal", "zor", "bri",
    "cor", "del", "eph", "fal", "gry", "hal", "isp", "kel", "lun", "mav", "nyr", "opt",
]
GENERIC_MID = ["a", "e", "i", "o", "u", "ra", "ri", "vo", "ta", "mi", "lo", "se", "du", "xe"]

# --------------------------------------------------------------------------------------
# Routes of administration: noun phrase used in prose, and dosing pattern family.
ROUTES: dict[str, dict[str, str]] = {
    "oral_tablet": {"form": "film-coated oral tablet", "noun": "tablet", "family": "oral"},
    "oral_capsule": {"form": "oral capsule", "noun": "capsule", "family": "oral"},
    "oral_solution": {"form": "oral solution", "noun": "oral solution", "family": "oral"},
    "sc_injection": {"form": "subcutaneous injection in a prefilled pen", "noun": "injection", "family": "sc"},
    "iv_infusion": {"form": "intravenous infusion", "noun": "infusion", "family": "iv"},
    "topical": {"form": "topical cream", "noun": "cream", "family": "topical"},
    "eye_drops": {"form": "ophthalmic solution (eye drops)", "noun": "eye drop", "family": "eye"},
    "inhaler": {"form": "dry-powder inhaler", "noun": "inhaler", "family": "inhaled"},
    "nasal_spray": {"form": "nasal spray", "noun": "nasal spray", "family": "nasal"},
    "intravitreal": {"form": "intravitreal injection", "noun": "eye injection", "family": "intravitreal"},
}

ORAL_STRENGTHS = [2.5, 5, 10, 20, 25, 40, 50, 75, 100, 150, 200, 250, 300, 400, 500]
ORAL_FREQS = ["once daily", "twice daily", "three times daily", "once daily at bedtime"]
SC_DOSES: list[float] = [30, 50, 70, 90, 120, 150, 180, 210, 300]
SC_FREQS = ["once weekly", "every 2 weeks", "every 4 weeks", "once monthly", "every 8 weeks"]
IV_DOSES = [3, 5, 7.5, 10, 15]  # mg/kg
IV_FREQS = ["every 4 weeks", "every 6 weeks", "every 8 weeks", "every 12 weeks"]
TOPICAL_STRENGTHS = [0.05, 0.1, 0.5, 1, 2]  # percent
EYE_STRENGTHS = [0.1, 0.25, 0.5, 1]  # percent
INHALED_MCG = [50, 100, 160, 200, 250, 400]
NASAL_MG = [5, 10, 15, 20]

COMMON_ADVERSE = [
    "headache", "nausea", "dizziness", "fatigue", "diarrhea", "constipation", "insomnia",
    "dry mouth", "rash", "upper respiratory tract infection", "back pain", "abdominal pain",
]

CONTRAINDICATIONS = [
    "severe hepatic impairment (Child-Pugh C)", "pregnancy", "breastfeeding",
    "a history of angioedema", "congenital long QT syndrome",
    "an eGFR below 15 mL/min/1.73 m2", "active tuberculosis or other serious infection",
    "concurrent use of strong CYP3A4 inhibitors", "uncontrolled hypertension",
    "a history of pancreatitis", "severe heart failure (NYHA class IV)",
    "known hypersensitivity to any component of the formulation",
]

PEDIATRIC_NOTES = [
    "It is not approved for patients younger than 18 years.",
    "It is not approved for children under 12; adolescents aged 12 to 17 receive the adult dose.",
    "Children aged 6 to 11 receive half the adult dose; it is not studied below age 6.",
    "Safety and efficacy in children have not been established.",
    "Adolescents weighing at least 40 kg may use the adult dose; it is not approved under 12.",
]

PREVALENCES = [
    "about 1 in 2,500 adults", "about 1 in 8,000 people", "roughly 1 in 12,000 adults",
    "an estimated 4 per 100,000 people", "about 1 in 40,000 people", "roughly 1 in 600 adults",
    "an estimated 15 per 100,000 people", "about 1 in 1,200 people",
    "about 2 per 10,000 people", "roughly 1 in 20,000 people",
]
ONSETS = ["18 and 30", "20 and 40", "30 and 50", "40 and 60", "50 and 70", "5 and 15", "25 and 45", "55 and 75"]
SEX_NOTES = [
    "Women are affected about twice as often as men.",
    "Men and women are affected equally.",
    "It is roughly three times more common in men.",
    "About 70% of diagnosed patients are women.",
    "There is no clear difference between the sexes.",
]

ANESTHESIA = [
    "general anesthesia", "deep sedation", "local anesthesia with light sedation",
    "regional (spinal) anesthesia", "local anesthesia alone",
]

UPDATED_RANGE = ("2024-01-01", "2026-05-15")

# --------------------------------------------------------------------------------------
# Body systems. Each drives the conditions, medicines and procedures generated for it.
SYSTEMS: list[BodySystem] = [
    {
        "key": "neuro", "adj": "neurological", "organ": "brain and cranial nerves",
        "organ_short": "nervous system", "specialist": "neurologist",
        "nouns": ["cephalalgia", "neuropathy", "encephalopathy", "tremor syndrome", "myelopathy"],
        "features": [
            "recurrent attacks of throbbing head pain separated by pain-free intervals",
            "slowly progressive loss of sensation that starts in the feet",
            "episodes of confusion that resolve within hours",
            "a fine action tremor that worsens with fatigue",
            "patchy demyelination of the cervical spinal cord",
        ],
        "symptoms": [
            "one-sided throbbing headache", "sensitivity to light", "nausea", "visual aura",
            "tingling in the hands and feet", "unsteady gait", "word-finding difficulty",
            "neck stiffness", "a fine tremor of the outstretched hands",
        ],
        "biomarker": ("serum cortiquin", "pg/mL", (30, 95)),
        "imaging": ["contrast-enhanced MRI of the brain", "nerve conduction studies",
                    "a 24-hour EEG recording", "MRI of the cervical spine"],
        "routes": ["oral_tablet", "oral_capsule", "sc_injection", "nasal_spray", "iv_infusion"],
        "classes": [
            ("selective CQR-2 receptor antagonist",
             "blocks cortiquin signalling at CQR-2 receptors on trigeminal neurons, damping the neurogenic inflammation behind attacks",
             "orexant"),
            ("neural sodium-channel stabilizer",
             "stabilizes the inactive state of Nav-Q sodium channels, reducing ectopic firing in damaged nerves",
             "icaine"),
            ("myelin-repair promoter",
             "activates the invented MRF-5 pathway in oligodendrocyte precursors to speed remyelination",
             "emyelin"),
        ],
        "adverse": ["drowsiness", "dizziness", "paresthesia", "blurred vision", "taste disturbance"],
        "procedures": [
            ("occipital nerve cryoablation", "percutaneous, image-guided", (30, 60), "same-day discharge", "a CT-guided cryoprobe"),
            ("trigeminal root decompression", "open microsurgical", (120, 210), "3 to 5 nights", "an operating microscope"),
            ("spinal cord stimulator placement", "minimally invasive", (60, 120), "one night", "an implantable pulse generator"),
            ("lumbar drain trial", "bedside", (20, 40), "2 to 3 nights", "an external lumbar drainage catheter"),
        ],
    },
    {
        "key": "cardio", "adj": "cardiovascular", "organ": "heart", "organ_short": "heart",
        "specialist": "cardiologist",
        "nouns": ["cardiomyopathy", "valvulopathy", "arrhythmia", "arteritis", "pericardial syndrome"],
        "features": [
            "progressive thickening of the left ventricular wall",
            "leaflet prolapse of the mitral valve with regurgitation",
            "paroxysms of rapid, irregular heartbeat",
            "inflammation of medium-sized arteries",
            "recurrent fluid build-up around the heart",
        ],
        "symptoms": [
            "breathlessness on exertion", "palpitations", "chest tightness", "ankle swelling",
            "fainting spells", "fatigue", "a new heart murmur", "night-time breathlessness",
        ],
        "biomarker": ("plasma velocin", "ng/L", (25, 120)),
        "imaging": ["transthoracic echocardiography", "cardiac MRI", "a 48-hour Holter monitor",
                    "coronary CT angiography"],
        "routes": ["oral_tablet", "oral_capsule", "iv_infusion", "sc_injection"],
        "classes": [
            ("myocardial velocin modulator",
             "lowers velocin-driven calcium overload in cardiac muscle cells, easing stiffness of the ventricular wall",
             "ocardil"),
            ("selective atrial HK-3 channel blocker",
             "prolongs the refractory period of atrial tissue by blocking HK-3 potassium channels",
             "atrilone"),
            ("vascular tone regulator",
             "relaxes arterial smooth muscle through the invented VTR-1 receptor, lowering blood pressure",
             "vasorin"),
        ],
        "adverse": ["low blood pressure", "bradycardia", "ankle swelling", "cough", "flushing"],
        "procedures": [
            ("valve plication", "transcatheter", (75, 140), "1 to 2 nights", "a catheter-delivered leaflet clip"),
            ("septal reduction ablation", "catheter-based", (60, 120), "2 to 3 nights", "an ablation catheter"),
            ("atrial appendage banding", "thoracoscopic", (90, 150), "2 nights", "a titanium appendage band"),
            ("pericardial window creation", "subxiphoid surgical", (45, 90), "3 to 4 nights", "a pericardial drain"),
        ],
    },
    {
        "key": "resp", "adj": "respiratory", "organ": "lungs and airways", "organ_short": "lungs",
        "specialist": "pulmonologist",
        "nouns": ["bronchiolitis", "pneumonitis", "airway syndrome", "alveolar disease"],
        "features": [
            "fixed narrowing of the small airways",
            "patchy inflammation of the lung tissue after inhaled exposures",
            "episodic wheeze triggered by cold air",
            "gradual filling of the air sacs with protein-rich material",
        ],
        "symptoms": [
            "dry cough", "wheeze", "shortness of breath", "chest tightness",
            "reduced exercise tolerance", "low-grade fever", "night sweats", "clubbing of the fingers",
        ],
        "biomarker": ("sputum pulmonin", "ug/mL", (8, 45)),
        "imaging": ["high-resolution chest CT", "spirometry with bronchodilator testing",
                    "bronchoalveolar lavage", "a six-minute walk test"],
        "routes": ["inhaler", "oral_tablet", "sc_injection", "oral_capsule"],
        "classes": [
            ("inhaled pulmonin antagonist",
             "blocks pulmonin receptors on airway smooth muscle, reducing bronchospasm and mucus production",
             "opulmide"),
            ("alveolar macrophage modulator",
             "dampens macrophage activation in the alveoli through the invented AMX-2 kinase",
             "almitinib"),
        ],
        "adverse": ["hoarse voice", "oral thrush", "cough", "throat irritation", "tremor"],
        "procedures": [
            ("airway lumen reshaping", "bronchoscopic", (40, 80), "same-day discharge", "a flexible bronchoscope with a balloon dilator"),
            ("whole-lung lavage", "bronchoscopic", (120, 240), "2 to 3 nights", "a double-lumen endotracheal tube"),
            ("pleural microsealing", "video-assisted thoracoscopic", (60, 100), "2 to 4 nights", "a fibrin-based sealant applicator"),
        ],
    },
    {
        "key": "hepatic", "adj": "hepatic", "organ": "liver and bile ducts", "organ_short": "liver",
        "specialist": "hepatologist",
        "nouns": ["hepatopathy", "cholangiopathy", "hepatic storage disorder", "portal syndrome"],
        "features": [
            "fat and protein deposits that gradually scar the liver",
            "narrowing and beading of the intrahepatic bile ducts",
            "accumulation of an abnormal glycoprotein in liver cells",
            "raised pressure in the portal vein without cirrhosis",
        ],
        "symptoms": [
            "itching", "yellowing of the skin and eyes", "right upper abdominal discomfort",
            "fatigue", "dark urine", "pale stools", "easy bruising", "abdominal swelling",
        ],
        "biomarker": ("serum hepatoglobulin-K", "mg/L", (12, 60)),
        "imaging": ["liver elastography", "MR cholangiography", "abdominal ultrasound with Doppler",
                    "a percutaneous liver biopsy"],
        "routes": ["oral_tablet", "oral_capsule", "iv_infusion", "oral_solution"],
        "classes": [
            ("bile-acid transport modulator",
             "increases bile flow by activating the invented BTX-4 transporter on hepatocytes",
             "ocholate"),
            ("hepatic glycoprotein clearance enhancer",
             "speeds lysosomal clearance of hepatoglobulin-K from liver cells",
             "glucerase"),
        ],
        "adverse": ["itching", "diarrhea", "abdominal pain", "raised liver enzymes", "nausea"],
        "procedures": [
            ("biliary stricture dilation", "endoscopic (ERCP)", (45, 90), "one night", "a balloon dilation catheter"),
            ("transjugular portal shunt", "interventional radiology", (90, 150), "2 to 3 nights", "a covered stent"),
            ("segmental liver resection", "laparoscopic", (180, 300), "5 to 7 nights", "an ultrasonic dissector"),
        ],
    },
    {
        "key": "renal", "adj": "renal", "organ": "kidneys", "organ_short": "kidneys",
        "specialist": "nephrologist",
        "nouns": ["nephropathy", "glomerular syndrome", "tubulopathy", "renal cyst disease"],
        "features": [
            "immune deposits in the glomeruli that leak protein into the urine",
            "loss of salt and potassium through faulty kidney tubules",
            "multiple fluid-filled cysts in both kidneys",
            "slowly falling kidney function with little protein loss",
        ],
        "symptoms": [
            "foamy urine", "swelling of the legs", "high blood pressure", "blood in the urine",
            "flank pain", "muscle cramps", "excessive thirst", "fatigue",
        ],
        "biomarker": ("urinary nephrin-Q", "mg/g creatinine", (50, 400)),
        "imaging": ["renal ultrasound", "a kidney biopsy", "24-hour urine collection",
                    "contrast-free MR urography"],
        "routes": ["oral_tablet", "oral_capsule", "iv_infusion", "sc_injection"],
        "classes": [
            ("glomerular complement inhibitor",
             "blocks the invented C-9r complement fragment that injures the glomerular filter",
             "ecoplan"),
            ("tubular electrolyte stabilizer",
             "restores sodium and potassium reabsorption through the invented TES-2 channel",
             "olytide"),
        ],
        "adverse": ["high potassium", "dizziness", "headache", "urinary tract infection", "nausea"],
        "procedures": [
            ("cyst sclerotherapy", "ultrasound-guided percutaneous", (30, 60), "same-day discharge", "an ethanol sclerosant kit"),
            ("laparoscopic cyst deroofing", "laparoscopic", (90, 150), "1 to 2 nights", "a harmonic scalpel"),
            ("plasma exchange course", "apheresis", (120, 180), "outpatient sessions", "a centrifugal apheresis machine"),
        ],
    },
    {
        "key": "derm", "adj": "dermatologic", "organ": "skin", "organ_short": "skin",
        "specialist": "dermatologist",
        "nouns": ["dermatosis", "keratoderma", "urticaria", "folliculitis", "photodermatitis"],
        "features": [
            "itchy, sharply demarcated plaques on the shins and forearms",
            "thickening of the skin on the palms and soles",
            "recurrent weals that last longer than 24 hours",
            "painful inflamed nodules around hair follicles",
            "blistering rash on sun-exposed skin",
        ],
        "symptoms": [
            "intense itching", "red scaly plaques", "skin cracking", "burning sensation",
            "blisters", "hair loss in the affected area", "skin darkening after healing",
        ],
        "biomarker": ("skin dermicin", "ng/mg protein", (5, 40)),
        "imaging": ["a 4 mm punch biopsy", "dermoscopy", "patch testing", "phototesting"],
        "routes": ["topical", "oral_tablet", "sc_injection"],
        "classes": [
            ("topical dermicin inhibitor",
             "blocks dermicin release from mast cells in the skin, calming itch and inflammation",
             "odermib"),
            ("anti-IL-37 monoclonal antibody",
             "neutralizes the invented interleukin-37 variant that drives plaque formation",
             "ikimab"),
            ("keratinocyte maturation regulator",
             "normalizes keratinocyte turnover through the invented KMR-1 receptor",
             "orotene"),
        ],
        "adverse": ["application-site burning", "injection-site reaction", "dry skin", "conjunctivitis", "acne"],
        "procedures": [
            ("narrowband phototherapy course", "outpatient", (5, 15), "outpatient sessions", "a 311 nm phototherapy cabinet"),
            ("fractional laser resurfacing", "outpatient", (30, 60), "same-day discharge", "a fractional CO2 laser"),
            ("nodule deroofing", "office-based", (15, 30), "same-day discharge", "a 4 mm biopsy punch"),
        ],
    },
    {
        "key": "eye", "adj": "ophthalmic", "organ": "eyes", "organ_short": "eye",
        "specialist": "ophthalmologist",
        "nouns": ["keratopathy", "retinopathy", "uveitis", "optic neuropathy"],
        "features": [
            "clouding of the central cornea",
            "leaky new blood vessels beneath the retina",
            "inflammation of the middle layer of the eye",
            "painless swelling of the optic disc",
        ],
        "symptoms": [
            "blurred vision", "eye redness", "light sensitivity", "floaters", "eye pain",
            "distorted central vision", "halos around lights", "gritty sensation",
        ],
        "biomarker": ("aqueous lumicin", "pg/mL", (40, 200)),
        "imaging": ["optical coherence tomography", "fluorescein angiography",
                    "slit-lamp examination", "visual field testing"],
        "routes": ["eye_drops", "oral_tablet", "sc_injection"],
        "classes": [
            ("lumicin receptor antagonist",
             "blocks lumicin receptors in the ciliary body and retina, reducing inflammation and vessel leakage",
             "olumast"),
            ("corneal epithelial growth promoter",
             "stimulates corneal epithelial repair through the invented CEG-3 receptor",
             "epithelin"),
        ],
        "adverse": ["eye irritation", "blurred vision after dosing", "raised eye pressure", "dry eye", "headache"],
        "procedures": [
            ("corneal crosslink stabilization", "outpatient", (30, 60), "same-day discharge", "a UV-A crosslinking lamp"),
            ("pars plana vitreous washout", "microincision surgical", (45, 90), "same-day discharge", "a 25-gauge vitrectomy system"),
            ("retinal laser barrage", "office-based", (15, 30), "same-day discharge", "a 532 nm green laser"),
        ],
    },
    {
        "key": "msk", "adj": "musculoskeletal", "organ": "joints and muscles", "organ_short": "joints",
        "specialist": "rheumatologist",
        "nouns": ["arthropathy", "tendinopathy", "myositis", "enthesitis", "bone marrow edema syndrome"],
        "features": [
            "inflammation of the small joints of the hands",
            "degeneration where tendons attach to bone",
            "symmetrical weakness of the shoulder and hip muscles",
            "pain at tendon insertions, especially the heel",
            "transient painful swelling of bone marrow in the hip",
        ],
        "symptoms": [
            "joint pain", "morning stiffness lasting over an hour", "muscle weakness",
            "heel pain", "swollen fingers", "reduced grip strength", "limping", "fatigue",
        ],
        "biomarker": ("serum synovin", "U/mL", (20, 150)),
        "imaging": ["musculoskeletal ultrasound", "MRI of the affected joint",
                    "a muscle biopsy", "plain radiographs"],
        "routes": ["oral_tablet", "sc_injection", "iv_infusion", "topical"],
        "classes": [
            ("synovin pathway inhibitor",
             "inhibits the invented SYK-9 kinase downstream of synovin, reducing joint inflammation",
             "osynitib"),
            ("tendon collagen regulator",
             "promotes orderly type I collagen deposition in healing tendon",
             "tenogen"),
        ],
        "adverse": ["nausea", "raised liver enzymes", "upper respiratory tract infection", "headache", "injection-site reaction"],
        "procedures": [
            ("arthroscopic synovectomy", "arthroscopic", (60, 120), "same-day discharge", "a 4 mm arthroscope and shaver"),
            ("core decompression", "percutaneous", (45, 75), "one night", "a fluoroscopy-guided trephine"),
            ("tenotomy with debridement", "ultrasound-guided percutaneous", (20, 40), "same-day discharge", "an ultrasonic tenotomy probe"),
        ],
    },
    {
        "key": "endo", "adj": "endocrine", "organ": "thyroid and adrenal glands", "organ_short": "thyroid",
        "specialist": "endocrinologist",
        "nouns": ["thyroiditis", "adrenal syndrome", "thyroid nodular disease", "hypophysitis"],
        "features": [
            "painless autoimmune inflammation of the thyroid",
            "episodic overproduction of adrenal hormones",
            "multiple benign nodules that enlarge the thyroid",
            "inflammation of the pituitary stalk",
        ],
        "symptoms": [
            "weight change", "heat intolerance", "fatigue", "a visible swelling in the neck",
            "palpitations", "low mood", "headache", "irregular periods",
        ],
        "biomarker": ("serum thyrelin", "pmol/L", (10, 70)),
        "imaging": ["thyroid ultrasound", "adrenal CT", "pituitary MRI",
                    "a fine-needle aspiration biopsy"],
        "routes": ["oral_tablet", "oral_capsule", "sc_injection"],
        "classes": [
            ("thyrelin synthesis inhibitor",
             "reduces thyrelin production in thyroid follicular cells",
             "othyrane"),
            ("adrenal steroidogenesis modulator",
             "blocks the invented CYP-X7 enzyme in the adrenal cortex",
             "adrenostat"),
        ],
        "adverse": ["joint aches", "rash", "low white cell count", "fatigue", "nausea"],
        "procedures": [
            ("thyroid nodule radiofrequency ablation", "ultrasound-guided percutaneous", (30, 60), "same-day discharge", "a radiofrequency electrode"),
            ("laparoscopic adrenalectomy", "laparoscopic", (120, 180), "2 nights", "a vessel-sealing device"),
            ("hemithyroidectomy", "open surgical", (60, 120), "one night", "a nerve integrity monitor"),
        ],
    },
    {
        "key": "gi", "adj": "gastrointestinal", "organ": "stomach and bowel", "organ_short": "bowel",
        "specialist": "gastroenterologist",
        "nouns": ["gastropathy", "colitis", "enteropathy", "esophageal dysmotility"],
        "features": [
            "thickened folds in the stomach lining",
            "continuous inflammation of the colon",
            "patchy damage to the small-intestinal lining that limits absorption",
            "uncoordinated contractions of the esophagus",
        ],
        "symptoms": [
            "abdominal cramps", "diarrhea", "bloating", "weight loss", "heartburn",
            "difficulty swallowing", "blood in the stool", "early satiety",
        ],
        "biomarker": ("fecal enterocin", "ug/g", (50, 500)),
        "imaging": ["upper endoscopy with biopsies", "colonoscopy", "high-resolution manometry",
                    "capsule endoscopy"],
        "routes": ["oral_tablet", "oral_capsule", "iv_infusion", "sc_injection", "oral_solution"],
        "classes": [
            ("gut-selective integrin-Q blocker",
             "prevents inflammatory cells from homing to the gut wall by blocking integrin-Q",
             "entegrast"),
            ("enterocin release inhibitor",
             "blocks enterocin release from intestinal mast cells",
             "ogastrel"),
        ],
        "adverse": ["nausea", "abdominal pain", "headache", "joint aches", "nasopharyngitis"],
        "procedures": [
            ("endoscopic myotomy", "peroral endoscopic", (60, 120), "one night", "an endoscopic electrosurgical knife"),
            ("segmental colectomy", "laparoscopic", (150, 240), "4 to 6 nights", "a laparoscopic stapler"),
            ("endoscopic fold reduction", "endoscopic", (30, 60), "same-day discharge", "a band ligation device"),
        ],
    },
    {
        "key": "heme", "adj": "hematologic", "organ": "blood and bone marrow", "organ_short": "blood",
        "specialist": "hematologist",
        "nouns": ["anemia", "thrombocytopathy", "cytopenia", "marrow syndrome"],
        "features": [
            "premature destruction of red blood cells in the spleen",
            "platelets that fail to clump normally",
            "low counts of more than one blood cell line",
            "scarring of the bone marrow",
        ],
        "symptoms": [
            "tiredness", "pale skin", "easy bruising", "nosebleeds", "breathlessness",
            "frequent infections", "an enlarged spleen", "heavy menstrual bleeding",
        ],
        "biomarker": ("serum hemorin", "ng/mL", (100, 900)),
        "imaging": ["a bone marrow biopsy", "peripheral blood film", "platelet aggregation studies",
                    "abdominal ultrasound of the spleen"],
        "routes": ["oral_tablet", "sc_injection", "iv_infusion"],
        "classes": [
            ("hemorin-receptor agonist",
             "stimulates red and white cell production through the invented HMR-2 receptor",
             "ohemopag"),
            ("platelet glycoprotein-V stabilizer",
             "restores platelet clumping by stabilizing glycoprotein-V",
             "plastatin"),
        ],
        "adverse": ["headache", "bone pain", "raised blood pressure", "fatigue", "nausea"],
        "procedures": [
            ("splenic artery embolization", "interventional radiology", (60, 90), "1 to 2 nights", "embolization microcoils"),
            ("laparoscopic splenectomy", "laparoscopic", (90, 180), "2 to 3 nights", "a vessel-sealing device"),
            ("red cell exchange", "apheresis", (90, 150), "outpatient sessions", "an automated apheresis system"),
        ],
    },
    {
        "key": "ent", "adj": "otolaryngologic", "organ": "ears, nose and sinuses", "organ_short": "sinuses",
        "specialist": "ENT surgeon",
        "nouns": ["sinusitis", "labyrinthitis", "otosclerosis variant", "nasal polyposis"],
        "features": [
            "chronic inflammation of the sinus lining with thick mucus",
            "episodes of spinning vertigo with fluctuating hearing",
            "abnormal bone growth around the middle-ear bones",
            "grape-like polyps that block the nasal passages",
        ],
        "symptoms": [
            "blocked nose", "facial pressure", "loss of smell", "spinning vertigo",
            "ringing in the ears", "muffled hearing", "ear fullness", "post-nasal drip",
        ],
        "biomarker": ("nasal eosinocin", "ng/mL", (15, 80)),
        "imaging": ["sinus CT", "nasal endoscopy", "pure-tone audiometry", "videonystagmography"],
        "routes": ["nasal_spray", "oral_tablet", "sc_injection"],
        "classes": [
            ("eosinocin antagonist",
             "blocks eosinocin signalling in the nasal mucosa, shrinking polyps and reducing mucus",
             "osinast"),
            ("vestibular calcium modulator",
             "calms inner-ear hair cells by modulating the invented VCM-1 calcium channel",
             "olabyrine"),
        ],
        "adverse": ["nosebleeds", "nasal dryness", "drowsiness", "headache", "sore throat"],
        "procedures": [
            ("balloon sinuplasty", "endoscopic", (30, 60), "same-day discharge", "a sinus balloon catheter"),
            ("endoscopic polypectomy", "endoscopic", (45, 90), "same-day discharge", "a microdebrider"),
            ("intratympanic steroid perfusion", "office-based", (15, 30), "same-day discharge", "a 27-gauge spinal needle"),
        ],
    },
    {
        "key": "uro", "adj": "urologic", "organ": "bladder and urinary tract", "organ_short": "bladder",
        "specialist": "urologist",
        "nouns": ["cystopathy", "bladder syndrome", "urethral stricture disease", "detrusor dysfunction"],
        "features": [
            "chronic inflammation of the bladder wall without infection",
            "sudden urges to urinate with small voided volumes",
            "scar tissue that narrows the urethra",
            "weak bladder muscle contractions that leave residual urine",
        ],
        "symptoms": [
            "urinary urgency", "frequent urination", "pelvic pain", "weak urine stream",
            "night-time urination", "incomplete emptying", "pain when the bladder fills",
        ],
        "biomarker": ("urinary cystatin-R", "ng/mL", (20, 110)),
        "imaging": ["cystoscopy", "urodynamic testing", "bladder ultrasound with post-void residual",
                    "retrograde urethrography"],
        "routes": ["oral_tablet", "oral_capsule", "sc_injection"],
        "classes": [
            ("detrusor DRX-3 receptor agonist",
             "relaxes the detrusor muscle during filling via the invented DRX-3 receptor",
             "odetrine"),
            ("urothelial barrier restorer",
             "rebuilds the protective glycosaminoglycan layer of the bladder lining",
             "urothane"),
        ],
        "adverse": ["dry mouth", "constipation", "urinary retention", "headache", "blurred vision"],
        "procedures": [
            ("bladder hydrodistension", "cystoscopic", (20, 40), "same-day discharge", "a rigid cystoscope"),
            ("urethral reconstruction", "open surgical", (150, 240), "2 to 3 nights", "a buccal mucosa graft"),
            ("sacral nerve modulation implant", "minimally invasive", (45, 90), "same-day discharge", "a sacral neuromodulation lead"),
        ],
    },
    {
        "key": "metab", "adj": "metabolic", "organ": "metabolism", "organ_short": "metabolism",
        "specialist": "metabolic physician",
        "nouns": ["lipid disorder", "storage disease", "glycogenosis", "hyperuricemic syndrome"],
        "features": [
            "very high levels of an abnormal triglyceride-rich particle",
            "build-up of a fatty substance inside cells of the liver and spleen",
            "inability to release glucose from stored glycogen during fasting",
            "overproduction of uric acid with recurrent joint attacks",
        ],
        "symptoms": [
            "fatty skin deposits", "abdominal pain after fatty meals", "low blood sugar when fasting",
            "enlarged liver", "painful swollen big toe", "fatigue", "poor growth in children",
        ],
        "biomarker": ("plasma lipocin-B", "mmol/L", (3, 18)),
        "imaging": ["fasting lipid electrophoresis", "genetic panel testing",
                    "a supervised fasting study", "dual-energy CT of the joints"],
        "routes": ["oral_tablet", "oral_capsule", "sc_injection", "iv_infusion"],
        "classes": [
            ("lipocin-B synthesis inhibitor",
             "blocks hepatic assembly of lipocin-B particles",
             "olipran"),
            ("lysosomal substrate reducer",
             "slows synthesis of the stored lipid so that cells can clear it",
             "ostasib"),
        ],
        "adverse": ["diarrhea", "flatulence", "muscle aches", "headache", "weight loss"],
        "procedures": [
            ("lipoprotein apheresis", "apheresis", (120, 180), "outpatient sessions", "a dextran-sulfate adsorption column"),
            ("tophus debulking", "open surgical", (45, 90), "same-day discharge", "a pneumatic tourniquet"),
        ],
    },
]

# Sites that host reference cards (all on the reserved .example TLD) and their licences.
REF_SITES: dict[str, RefSite] = {
    "medvault": {"base": "https://ref.medvault.example", "license": "proprietary-internal",
                 "paths": {"medicine": "monographs", "condition": "conditions", "procedure": "procedures"}},
    "clinipedia": {"base": "https://clinipedia.example", "license": "CC-BY-SA-4.0",
                   "paths": {"medicine": "wiki", "condition": "wiki", "procedure": "wiki"}},
    "openformulary": {"base": "https://openformulary.example", "license": "CC0-1.0",
                      "paths": {"medicine": "drugs"}},
    "surgatlas": {"base": "https://surgatlas.example", "license": "CC-BY-4.0",
                  "paths": {"procedure": "procedures"}},
    "pathways": {"base": "https://pathwaysjournal.example", "license": "CC-BY-NC-4.0",
                 "paths": {"condition": "reviews", "procedure": "reviews"}},
    "carenotes": {"base": "https://carenotes.example", "license": "CC-BY-4.0",
                  "paths": {"condition": "topics", "medicine": "medicines"}},
}
SITE_WEIGHTS: dict[str, list[tuple[str, int]]] = {
    "medicine": [("medvault", 5), ("openformulary", 3), ("clinipedia", 2), ("carenotes", 2)],
    "condition": [("medvault", 4), ("clinipedia", 3), ("pathways", 2), ("carenotes", 2)],
    "procedure": [("surgatlas", 5), ("medvault", 3), ("clinipedia", 1), ("pathways", 2)],
}
