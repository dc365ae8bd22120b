"""Deterministic generator of the committed KB data files.

    python -m attesta_kb_tools.builder            # rewrite the data files
    python -m attesta_kb_tools.builder --check    # exit 1 if the committed files are stale

The runtime package's data (`attesta_kb/data/`: cards, queries, brands) and this package's
test fixture (`attesta_kb_tools/data/degraded_cards.jsonl`) are both written from here.

Output depends only on the seed templates in `_vocab.py` / `_brands_seed.py` and on
`SEED`; the same inputs give byte-identical files on every run.
Everything produced is fictional (see libs/kb/README.md).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import random
import re
import sys
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import attesta_kb.dataset
from attesta_kb.dataset import Record

from . import _brands_seed as BS
from . import _vocab as V

SEED = 20260531
# Where each file goes: the KB the services load (libs/kb, in the runtime wheel) and the
# degraded-card fixture only tests use (this package, in no runtime wheel).
KB_DATA_DIR = Path(attesta_kb.dataset.__file__).resolve().parent / "data"
FIXTURE_DIR = Path(__file__).resolve().parent / "data"
SPLIT_RATIOS = (("train", 0.6), ("dev", 0.2), ("test", 0.2))
MIN_WORDS, MAX_WORDS = 60, 250

# A company of the generated world, a tracked brand or an untracked maker, and a tracked
# brand's product: the seeds of _brands_seed, dicts that gain card ids and links as the world
# is built; their keys are pinned by `--check` (the committed data must come out byte for byte).
Company = dict[str, Any]
Product = dict[str, Any]


class Condition(TypedDict):
    """A generated condition: what its card says, and the world records it points to."""

    name: str
    eponym: str
    noun: str
    system: V.BodySystem
    feature: str
    symptoms: list[str]
    biomarker: str
    unit: str
    threshold: int  # the biomarker level above which it is diagnosed
    imaging: str
    prevalence: str
    onset: str
    sex: str
    remission: int  # % in remission after five years
    gap: int  # weeks between the two diagnostic tests
    response_weeks: int
    first_line: Medicine | None  # set for every condition before the cards are written
    second_line: Medicine | None
    acute: list[Medicine]
    procedure: Procedure | None  # the first procedure indicated for it
    sibling: Condition | None  # same eponym, another disorder
    monitor_products: list[Product]
    diagnostic_products: list[Product]
    describer_year: int
    hospital: str
    describer_first: str
    anchor: bool  # hand-written (asked about twice) rather than drawn
    card_id: str


class Medicine(TypedDict):
    """A generated medicine: what its card says, and the world records it points to."""

    name: str
    generic: str
    klass: str
    mechanism: str
    system: V.BodySystem
    route: str
    form: str
    condition: Condition
    indication: str
    dose: Dose
    renal: str
    halflife: int  # hours
    contra: list[str]
    adverse: list[str]
    peds: str
    maker: str
    approved: int  # year
    brand_id: str | None  # a tracked brand's own medicine
    product: Product | None  # for a tracked brand's medicine
    strengths: str | None  # a tracked brand's medicine states them
    maker_ref: Company | None  # the untracked maker's record
    sibling: Medicine | None  # the look-alike name
    note_sibling: bool  # its card warns about the look-alike
    xr_of: Medicine | None
    xr: NotRequired[Medicine]
    interaction: str | None
    interaction_with: NotRequired[Medicine]
    card_id: str


class ProcedureFacts(TypedDict):
    """What a hand-written procedure fixes instead of drawing it."""

    anesthesia: str
    duration: int  # minutes
    fast: int  # hours
    recovery: int  # weeks
    success: int  # % at one year
    year: int  # first performed


class Procedure(ProcedureFacts):
    """A generated procedure: what its card says, and the world records it points to."""

    name: str
    noun: str
    system: V.BodySystem
    approach: str
    stay: str
    device: str
    condition: Condition  # the one it is indicated for
    complications: list[str]
    rates: tuple[float, float]  # % of the two complications
    contra: list[str]
    inventor: str
    hospital: str
    product: Product | None  # the brand product it uses, if any
    card_id: str


def first_line(cond: Condition) -> Medicine:
    """A condition's first-line medicine: every condition has one once the medicines exist."""
    medicine = cond["first_line"]
    if medicine is None:
        raise ValueError(f"{cond['name']} has no first-line medicine yet")
    return medicine


class Dose(TypedDict):
    """A medicine's dosing, as its card states it."""

    short: str  # "40 mg once daily"
    text: str
    max: str
    strength: NotRequired[float]
    freq: NotRequired[str]
    per_day: NotRequired[int]  # oral only: the XR variants are derived from these
    max_mg: NotRequired[float]
    unit: NotRequired[str]


# ----------------------------------------------------------------------------- helpers
def slugify(text: str) -> str:
    s = text.lower().replace("'", "")
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s


def fmt(x: float) -> str:
    if float(x).is_integer():
        return str(int(x))
    return f"{x:g}"


def join_list(items: list[str]) -> str:
    items = list(items)
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def join_stem(stem: str, suffix: str) -> str:
    """Glue a generic-name stem to a class suffix without vowel pile-ups."""
    vowels = "aeiou"
    while stem and suffix and stem[-1] in vowels and suffix[0] in vowels:
        stem = stem[:-1]
    word = stem + suffix
    word = re.sub(r"([aeiou])\1+", r"\1", word)
    word = re.sub(r"([aeiou]{2})[aeiou]+", r"\1", word)
    return word


def poss(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def words(text: str) -> int:
    return len(text.split())


def split_of(query_id: str) -> float:
    """Stable pseudo-random position in [0, 1) for a query id."""
    h = hashlib.sha256(query_id.encode("utf-8")).hexdigest()
    return int(h[:12], 16) / float(16**12)


def assign_splits(queries: list[Record]) -> None:
    """Stratified by `kind` (the kind of the query's primary card): within each kind,
    order by a hash of the query id and cut 60/20/20. Deterministic and reproducible
    from the query ids alone."""
    by_kind: dict[str, list[Record]] = {}
    for q in queries:
        by_kind.setdefault(q["kind"], []).append(q)
    for kind in sorted(by_kind):
        group = sorted(by_kind[kind], key=lambda q: (split_of(q["query_id"]), q["query_id"]))
        n = len(group)
        n_train = round(n * SPLIT_RATIOS[0][1])
        n_dev = round(n * SPLIT_RATIOS[1][1])
        for i, q in enumerate(group):
            q["split"] = "train" if i < n_train else ("dev" if i < n_train + n_dev else "test")


class Builder:
    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.cards: list[Record] = []
        self.card_index: dict[str, Record] = {}
        self.conditions: list[Condition] = []
        self.cond_by_name: dict[str, Condition] = {}
        self.medicines: list[Medicine] = []
        self.procedures: list[Procedure] = []
        self.companies: list[Company] = []  # untracked makers
        self.brands: list[Company] = []
        self.queries: list[Record] = []
        self.used_names: set[str] = set()
        self.used_eponyms: list[str] = []
        self.sys_by_key = {s["key"]: s for s in V.SYSTEMS}
        d0 = _dt.date.fromisoformat(V.UPDATED_RANGE[0])
        d1 = _dt.date.fromisoformat(V.UPDATED_RANGE[1])
        self._date_span = (d0, (d1 - d0).days)

    # ------------------------------------------------------------------ small utilities
    def updated(self) -> str:
        d0, span = self._date_span
        return (d0 + _dt.timedelta(days=self.rng.randrange(span + 1))).isoformat()

    def pick_site(self, kind: str) -> str:
        options = V.SITE_WEIGHTS[kind]
        keys = [k for k, _ in options]
        weights = [w for _, w in options]
        return self.rng.choices(keys, weights=weights, k=1)[0]

    def ref_source(self, site: str, kind: str, slug: str, title: str) -> str:
        info = V.REF_SITES[site]
        path = info["paths"][kind]
        if site == "clinipedia":
            return f"{info['base']}/{path}/{title.replace(' ', '_').replace('(', '').replace(')', '')}"
        return f"{info['base']}/{path}/{slug}"

    def claim_name(self, name: str) -> bool:
        key = name.lower()
        if key in self.used_names:
            return False
        self.used_names.add(key)
        return True

    def add_card(self, card_id: str, title: str, text: str, source: str,
                 metadata: dict[str, Any]) -> Record:
        text = re.sub(r"\s+", " ", text).strip()
        n = words(text)
        if not (MIN_WORDS <= n <= MAX_WORDS):
            raise ValueError(f"{card_id}: {n} words (want {MIN_WORDS}-{MAX_WORDS})")
        if card_id in self.card_index:
            raise ValueError(f"duplicate card id {card_id}")
        for k, v in metadata.items():
            if not isinstance(v, (str, int, float, bool)):
                raise TypeError(f"{card_id}: metadata {k} must be a scalar")
        card = {"card_id": card_id, "title": title, "text": text, "source": source,
                "metadata": {"lang": "en", **metadata}}
        self.cards.append(card)
        self.card_index[card_id] = card
        return card

    def new_eponym(self) -> str:
        pool = [s for s in V.SURNAMES if s not in self.used_eponyms]
        if not pool:
            pool = list(V.SURNAMES)
        e = self.rng.choice(pool)
        self.used_eponyms.append(e)
        return e

    def drug_names(self, klass_suffix: str) -> tuple[str, str]:
        for _ in range(1000):
            brand = (self.rng.choice(V.BRAND_START) + self.rng.choice(V.BRAND_MID)
                     + self.rng.choice(V.BRAND_END))
            generic = join_stem(self.rng.choice(V.GENERIC_START) + self.rng.choice(V.GENERIC_MID),
                                klass_suffix)
            if brand.lower() in self.used_names or generic in self.used_names:
                continue
            if any(brand.lower() == b["name"].lower() for b in BS.TRACKED_BRANDS):
                continue
            self.claim_name(brand)
            self.claim_name(generic)
            return brand, generic
        raise RuntimeError("name space exhausted")

    def lookalike(self, brand: str, generic: str) -> tuple[str, str]:
        """Near-miss names: change one vowel of the brand name and the generic stem."""
        vowels = "aeiou"
        for _ in range(200):
            chars = list(brand)
            idx = [i for i, c in enumerate(chars) if c.lower() in vowels and i > 0]
            if not idx:
                break
            i = self.rng.choice(idx)
            repl = self.rng.choice([v for v in vowels if v != chars[i].lower()])
            chars[i] = repl
            nb = "".join(chars)
            gchars = list(generic)
            gidx = [j for j, c in enumerate(gchars[:6]) if c in vowels and j > 0]
            if gidx:
                j = self.rng.choice(gidx)
                gchars[j] = self.rng.choice([v for v in vowels if v != gchars[j]])
            ng = "".join(gchars)
            if nb.lower() not in self.used_names and ng not in self.used_names:
                self.claim_name(nb)
                self.claim_name(ng)
                return nb, ng
        return self.drug_names(generic[-6:])

    # ------------------------------------------------------------------ dosing
    def gen_dose(self, route: str) -> Dose:
        r = self.rng
        fam = V.ROUTES[route]["family"]
        if fam == "oral":
            s = r.choice(V.ORAL_STRENGTHS)
            f = r.choice(V.ORAL_FREQS)
            per_day = {"once daily": 1, "twice daily": 2, "three times daily": 3,
                       "once daily at bedtime": 1}[f]
            mx = s * per_day * r.choice([2, 3])
            unit = "mL of a 10 mg/mL solution" if route == "oral_solution" else "mg"
            if route == "oral_solution":
                short = f"{fmt(s)} mg ({fmt(s / 10)} mL) {f}"
            else:
                short = f"{fmt(s)} mg {f}"
            text = r.choice([
                f"The usual adult dose is {short}.",
                f"Adults normally take {short}, with or without food.",
                f"Treatment starts at {short}; the dose is reviewed after 4 weeks.",
            ])
            mtext = r.choice([
                f"The maximum recommended dose is {fmt(mx)} mg per day.",
                f"Do not exceed {fmt(mx)} mg in 24 hours.",
            ])
            return {"short": short, "text": text, "max": mtext, "strength": s, "freq": f,
                    "per_day": per_day, "max_mg": mx, "unit": unit}
        if fam == "sc":
            d = r.choice(V.SC_DOSES)
            f = r.choice(V.SC_FREQS)
            short = f"{fmt(d)} mg {f}"
            text = r.choice([
                f"The recommended adult dose is {fmt(d)} mg by subcutaneous injection {f}.",
                f"Adults inject {fmt(d)} mg under the skin of the thigh or abdomen {f}.",
            ])
            load = r.random() < 0.4
            if load:
                text = f"Treatment begins with a loading dose of {fmt(2 * d)} mg. " + text
            mtext = r.choice([
                f"If the response is inadequate after 16 weeks the dose may be raised to {fmt(2 * d)} mg {f}; higher doses have not been studied.",
                f"Doses above {fmt(d)} mg {f} have not been studied.",
            ])
            return {"short": short, "text": text, "max": mtext, "strength": d, "freq": f}
        if fam == "iv":
            d = r.choice(V.IV_DOSES)
            f = r.choice(V.IV_FREQS)
            capmg = int(d * 100)
            short = f"{fmt(d)} mg/kg by infusion {f}"
            text = (f"The recommended dose is {fmt(d)} mg/kg by intravenous infusion over 60 minutes "
                    f"at weeks 0, 2 and 6, then {f}.")
            mtext = f"No single infusion should exceed {capmg} mg."
            return {"short": short, "text": text, "max": mtext, "strength": d, "freq": f}
        if fam == "topical":
            s = r.choice(V.TOPICAL_STRENGTHS)
            f = r.choice(["once daily", "twice daily"])
            short = f"{fmt(s)}% cream {f}"
            text = f"Apply a thin layer of the {fmt(s)}% cream to affected skin {f}."
            g = r.choice([30, 45, 60, 100])
            mtext = f"Use no more than {g} g per week and treat no more than 20% of the body surface."
            return {"short": short, "text": text, "max": mtext, "strength": s, "freq": f}
        if fam == "eye":
            s = r.choice(V.EYE_STRENGTHS)
            f = r.choice(["once daily", "twice daily", "four times daily"])
            short = f"one drop of {fmt(s)}% solution {f}"
            text = f"Instil one drop of the {fmt(s)}% solution into each affected eye {f}."
            n = {"once daily": 2, "twice daily": 4, "four times daily": 6}[f]
            mtext = f"Do not use more than {n} drops per eye per day."
            return {"short": short, "text": text, "max": mtext, "strength": s, "freq": f}
        if fam == "inhaled":
            mcg = r.choice(V.INHALED_MCG)
            puffs = r.choice([1, 2])
            f = r.choice(["once daily", "twice daily"])
            short = f"{puffs} inhalation{'s' if puffs > 1 else ''} of {mcg} micrograms {f}"
            text = f"The usual adult dose is {short}; rinse the mouth after each use."
            mx = mcg * puffs * (2 if f == "once daily" else 4)
            mtext = f"The total daily dose should not exceed {mx} micrograms."
            return {"short": short, "text": text, "max": mtext, "strength": mcg, "freq": f}
        if fam == "nasal":
            mg = r.choice(V.NASAL_MG)
            f = r.choice(["once daily", "twice daily"])
            short = f"one {mg} mg spray into each nostril {f}"
            text = f"Adults use one {mg} mg spray into each nostril {f}, aiming away from the septum."
            mtext = f"Do not exceed {mg * 4} mg per day."
            return {"short": short, "text": text, "max": mtext, "strength": mg, "freq": f}
        raise ValueError(fam)

    def renal_text(self) -> str:
        return self.rng.choice([
            "No dose adjustment is needed in renal impairment.",
            "Halve the dose when eGFR is below 30 mL/min.",
            "Avoid use when eGFR is below 30 mL/min.",
            "In patients on dialysis, give the dose after the session.",
            "No adjustment is needed for mild impairment; halve the dose when eGFR is below 45 mL/min.",
        ])

    # ------------------------------------------------------------------ world: brands
    def build_brands(self) -> None:
        for b in BS.TRACKED_BRANDS:
            self.brands.append(b)

    def build_companies(self) -> None:
        for c in BS.UNTRACKED_COMPANIES:
            c = dict(c)
            c.setdefault("makes_medicines", True)
            c["employees"] = self.rng.choice([140, 260, 480, 900, 1300, 2400, 3800])
            c["products"] = []
            self.companies.append(c)

    # ------------------------------------------------------------------ world: conditions
    def _condition(self, system: V.BodySystem, eponym: str, noun: str, feature: str | None = None,
                   *, anchor: bool, symptoms: list[str] | None = None,
                   threshold: int | None = None) -> Condition:
        r = self.rng
        name = f"{eponym} {noun}"
        if not self.claim_name(name):
            raise ValueError(f"duplicate condition {name}")
        bm_name, bm_unit, (lo, hi) = system["biomarker"]
        used = {c["threshold"] for c in self.conditions if c["system"]["key"] == system["key"]}
        thr = threshold
        while thr is None:
            thr = r.randrange(lo, hi + 1)
            if thr in used:
                thr = None
        # Drawn in this order, and the symptoms even when given: the RNG stream, and so the
        # committed data, stay the same.
        feature = feature or r.choice(system["features"])
        drawn_symptoms = r.sample(system["symptoms"], 3)
        cond: Condition = {
            "name": name, "eponym": eponym, "noun": noun, "system": system, "feature": feature,
            "symptoms": drawn_symptoms if symptoms is None else symptoms,
            "biomarker": bm_name, "unit": bm_unit, "threshold": thr,
            "imaging": r.choice(system["imaging"]),
            "prevalence": r.choice(V.PREVALENCES), "onset": r.choice(V.ONSETS),
            "sex": r.choice(V.SEX_NOTES), "remission": r.randrange(35, 90),
            "gap": r.choice([2, 4, 6]), "response_weeks": r.choice([8, 12, 16]),
            "first_line": None, "second_line": None, "acute": [], "procedure": None,
            "sibling": None, "monitor_products": [], "diagnostic_products": [],
            "describer_year": r.randrange(1931, 2012), "hospital": r.choice(V.HOSPITALS),
            "describer_first": r.choice(V.FIRST_NAMES),
            "anchor": anchor, "card_id": "cond-" + slugify(name),
        }
        self.conditions.append(cond)
        self.cond_by_name[name] = cond
        return cond

    def build_conditions(self) -> None:
        sysk = self.sys_by_key
        # system key, eponym, noun, defining feature, fields set by hand
        anchors: list[tuple[str, str, str, str, dict[str, Any]]] = [
            ("neuro", "Ostrander", "episodic migraine",
             "recurrent attacks of throbbing head pain separated by pain-free intervals",
             {"symptoms": ["one-sided throbbing headache", "sensitivity to light", "nausea"],
              "threshold": 60}),
            ("neuro", "Halloway", "cluster cephalalgia",
             "bouts of excruciating pain around one eye that recur at the same time each day",
             {"symptoms": ["severe pain around one eye", "a watering eye", "restlessness during attacks"],
              "threshold": 85}),
            ("derm", "Harrow-Lind", "dermatosis", "itchy, sharply demarcated plaques on the shins and forearms", {}),
            ("eye", "Quessel", "uveitis", "inflammation of the middle layer of the eye", {}),
            ("cardio", "Pellmore", "renovascular hypertension",
             "high blood pressure driven by narrowing of one renal artery", {}),
            ("cardio", "Varnholt", "cardiomyopathy", "progressive thickening of the left ventricular wall",
             {"threshold": 40}),
            ("cardio", "Varnholt", "valvulopathy", "leaflet prolapse of the mitral valve with regurgitation", {}),
            ("renal", "Dunmore", "nephropathy",
             "immune deposits in the glomeruli that leak protein into the urine", {}),
            ("hepatic", "Mercival", "hepatopathy",
             "fat and protein deposits that gradually scar the liver", {"threshold": 28}),
        ]
        for key, ep, noun, feat, over in anchors:
            self._condition(sysk[key], ep, noun, feat, anchor=True, **over)
        self.used_eponyms.extend(V.ANCHOR_SURNAMES)
        a = self.cond_by_name
        a["Varnholt cardiomyopathy"]["sibling"] = a["Varnholt valvulopathy"]
        a["Varnholt valvulopathy"]["sibling"] = a["Varnholt cardiomyopathy"]

        # Generated conditions: 8 per system, ~30% with a same-eponym sibling.
        for system in V.SYSTEMS:
            made = 0
            while made < 9:
                ep = self.new_eponym()
                noun = self.rng.choice(system["nouns"])
                name = f"{ep} {noun}"
                if name.lower() in self.used_names:
                    continue
                feat_i = system["nouns"].index(noun) % len(system["features"])
                c = self._condition(system, ep, noun, system["features"][feat_i], anchor=False)
                made += 1
                if self.rng.random() < 0.3 and made < 9:
                    others = [n for n in system["nouns"] if n != noun]
                    noun2 = self.rng.choice(others)
                    f2 = system["features"][system["nouns"].index(noun2) % len(system["features"])]
                    c2 = self._condition(system, ep, noun2, f2, anchor=False)
                    c["sibling"], c2["sibling"] = c2, c
                    made += 1

    # ------------------------------------------------------------------ world: medicines
    def _medicine(self, *, name: str, generic: str, klass: str, mechanism: str,
                  system: V.BodySystem, route: str, form: str, condition: Condition,
                  indication: str, dose: Dose, renal: str, halflife: int, contra: list[str],
                  adverse: list[str], peds: str, maker: str, approved: int,
                  brand_id: str | None = None, product: Product | None = None,
                  strengths: str | None = None, maker_ref: Company | None = None,
                  xr_of: Medicine | None = None) -> Medicine:
        m: Medicine = {
            "name": name, "generic": generic, "klass": klass, "mechanism": mechanism,
            "system": system, "route": route, "form": form, "condition": condition,
            "indication": indication, "dose": dose, "renal": renal, "halflife": halflife,
            "contra": contra, "adverse": adverse, "peds": peds, "maker": maker,
            "approved": approved, "brand_id": brand_id, "product": product,
            "strengths": strengths, "maker_ref": maker_ref, "sibling": None, "note_sibling": False,
            "xr_of": xr_of, "interaction": None, "card_id": "med-" + slugify(name)}
        self.medicines.append(m)
        return m

    def build_brand_medicines(self) -> None:
        for b in self.brands:
            for p in b["products"]:
                if p["type"] != "medicine":
                    continue
                cond = self.cond_by_name[p["condition"]]
                self.claim_name(p["name"])
                self.claim_name(p["generic_name"])
                m = self._medicine(
                    name=p["name"], generic=p["generic_name"], klass=p["klass"],
                    mechanism=p["mechanism"], system=cond["system"], route=p["route"],
                    form=p["form"], condition=cond, indication=p["indication"],
                    dose={"short": p["dose"], "text": p["dose_text"], "max": p["max_text"]},
                    renal=p["renal_text"], halflife=p["halflife"], contra=p["contra"],
                    adverse=p["adverse"], peds=p["peds"], maker=b["name"],
                    approved=p["approved"], brand_id=b["id"], product=p,
                    strengths=p["strengths"],
                )
                p["_med"] = m
        a = self.cond_by_name
        med = {m["name"]: m for m in self.medicines}
        ostrander = a["Ostrander episodic migraine"]
        ostrander["first_line"], ostrander["second_line"] = med["Velnorex"], med["Velnorax"]
        ostrander["acute"] = [med["Sorventa"], med["Migrastat"]]
        a["Halloway cluster cephalalgia"]["first_line"] = med["Quelmira"]
        a["Harrow-Lind dermatosis"]["first_line"] = med["Tavrelin"]
        a["Quessel uveitis"]["first_line"] = med["Ombrevia"]
        a["Pellmore renovascular hypertension"]["first_line"] = med["Orbiclor"]
        a["Dunmore nephropathy"]["first_line"] = med["Nephralin"]
        med["Velnorex"]["sibling"] = med["Velnorax"]
        med["Velnorax"]["sibling"] = med["Velnorex"]
        med["Velnorax"]["note_sibling"] = True
        med["Sorventa"]["sibling"] = med["Migrastat"]
        med["Migrastat"]["sibling"] = med["Sorventa"]

    def _gen_med(self, cond: Condition, maker: Company, klass: tuple[str, str, str] | None = None,
                 route: str | None = None, names: tuple[str, str] | None = None) -> Medicine:
        r = self.rng
        system = cond["system"]
        klass = klass or r.choice(system["classes"])
        route = route or r.choice(system["routes"])
        if names is None:
            names = self.drug_names(klass[2])
        brand, generic = names
        if "monoclonal" in klass[0] or "antibody" in klass[0]:
            route = r.choice(["sc_injection", "iv_infusion"])
        severity = r.choice(["", "moderate to severe ", "mild to moderate ", "refractory "])
        indication = r.choice([
            f"the treatment of {severity}{cond['name']} in adults",
            f"{severity}{cond['name']} in adults who need long-term therapy",
            f"the maintenance treatment of {cond['name']} in adults",
        ])
        adverse = r.sample(system["adverse"], 2) + r.sample([a for a in V.COMMON_ADVERSE if a not in system["adverse"]], 1)
        m = self._medicine(
            name=brand, generic=generic, klass=klass[0], mechanism=klass[1], system=system,
            route=route, form=V.ROUTES[route]["form"], condition=cond, indication=indication,
            dose=self.gen_dose(route), renal=self.renal_text(),
            halflife=r.choice([4, 6, 8, 11, 14, 18, 22, 30, 36, 48, 72, 160, 300, 520]),
            contra=r.sample(V.CONTRAINDICATIONS, 2), adverse=adverse,
            peds=r.choice(V.PEDIATRIC_NOTES), maker=maker["name"], maker_ref=maker,
            approved=r.randrange(1998, 2026),
        )
        maker["products"].append(m)
        return m

    def build_generic_medicines(self) -> None:
        r = self.rng
        all_makers = {c["id"]: c for c in self.companies if c["makes_medicines"]}

        def maker_for(cond: Condition) -> Company:
            ids = SYSTEM_MAKERS.get(cond["system"]["key"], list(all_makers))
            return all_makers[r.choice(ids)]

        for cond in self.conditions:
            if cond["first_line"] is None:
                cond["first_line"] = self._gen_med(cond, maker_for(cond))
        for cond in self.conditions:
            if cond["second_line"] is None and r.random() < 0.3:
                cond["second_line"] = self._gen_med(cond, maker_for(cond))
        # Look-alike siblings: similar name, same system, different condition and dose.
        bases = [m for m in self.medicines if m["brand_id"] is None and m["sibling"] is None]
        r.shuffle(bases)
        n_sib = 0
        for base in bases:
            if n_sib >= 48:
                break
            if base["sibling"] is not None:
                continue
            system = base["system"]
            targets = [c for c in self.conditions
                       if c["system"] is system and c is not base["condition"]
                       and c["second_line"] is None]
            if not targets:
                continue
            cond = r.choice(targets)
            klass = next((k for k in system["classes"] if k[0] == base["klass"]), None)
            nb, ng = self.lookalike(base["name"], base["generic"])
            sib = self._gen_med(cond, maker_for(cond), klass=klass, route=base["route"], names=(nb, ng))
            if sib["dose"]["short"] == base["dose"]["short"]:
                sib["dose"] = self.gen_dose(sib["route"])
            cond["second_line"] = sib
            base["sibling"], sib["sibling"] = sib, base
            (sib if r.random() < 0.5 else base)["note_sibling"] = True
            n_sib += 1
        # Extended-release variants of multi-dose oral medicines.
        n_xr = 0
        for base in list(self.medicines):
            if n_xr >= 16:
                break
            if base["brand_id"] or base["xr_of"] or V.ROUTES[base["route"]]["family"] != "oral":
                continue
            d = base["dose"]
            if d.get("per_day", 1) < 2 or base["route"] == "oral_solution":
                continue
            xr_mg = d["strength"] * d["per_day"]
            name = f"{base['name']} XR"
            self.claim_name(name)
            xr = self._medicine(
                name=name, generic=base["generic"], klass=base["klass"], mechanism=base["mechanism"],
                system=base["system"], route="oral_tablet", form="extended-release oral tablet",
                condition=base["condition"], indication=base["indication"],
                dose={"short": f"{fmt(xr_mg)} mg once daily",
                      "text": (f"Adults take {fmt(xr_mg)} mg once daily in the morning; patients switching from "
                               f"immediate-release {base['name']} {d['short']} take the same total daily amount as a single XR tablet."),
                      "max": f"The maximum dose is {fmt(d['max_mg'])} mg once daily. Tablets must be swallowed whole."},
                renal=base["renal"], halflife=base["halflife"], contra=base["contra"],
                adverse=base["adverse"], peds=self.rng.choice(V.PEDIATRIC_NOTES[:2]), maker=base["maker"],
                maker_ref=base.get("maker_ref"), approved=min(2025, base["approved"] + self.rng.randrange(2, 8)),
                xr_of=base,
            )
            base["xr"] = xr
            maker_ref = base["maker_ref"]
            if maker_ref:
                maker_ref["products"].append(xr)
            n_xr += 1
        # Interactions between medicines (by generic name).
        meds = list(self.medicines)
        for m in meds:
            if r.random() < 0.55:
                other = r.choice(meds)
                if other is m or other["generic"] == m["generic"]:
                    continue
                k = r.choice([2, 3, 4, 5])
                m["interaction"] = r.choice([
                    f"Avoid co-administration with {other['generic']} ({other['name']}), which raises {m['generic']} exposure about {k}-fold.",
                    f"{cap(other['generic'])} ({other['name']}) lowers {m['generic']} levels by about {k * 15}%; separate doses by at least 4 hours.",
                    f"Combining it with {other['generic']} ({other['name']}) increases the risk of {r.choice(m['adverse'])}; monitor closely.",
                ])
                m["interaction_with"] = other

    # ------------------------------------------------------------------ world: procedures
    def _procedure(self, system: V.BodySystem, name: str,
                   spec: tuple[str, str, tuple[int, int], str, str], cond: Condition,
                   inventor_surname: str | None = None,
                   fixed: ProcedureFacts | None = None) -> Procedure:
        r = self.rng
        noun, approach, (dlo, dhi), stay, device = spec
        if not self.claim_name(name):
            raise ValueError(name)
        p: Procedure = {
            "name": name, "noun": noun, "system": system, "approach": approach,
            "duration": r.randrange(dlo, dhi + 1, 5), "stay": stay, "device": device,
            "condition": cond, "anesthesia": r.choice(V.ANESTHESIA),
            "fast": r.choice([0, 2, 4, 6, 8]), "recovery": r.choice([1, 2, 3, 4, 6, 8, 12]),
            "success": r.randrange(62, 97),
            "complications": r.sample(["bleeding", "infection", "nerve injury", "recurrence",
                                       "persistent pain", "blood clots", "damage to nearby organs",
                                       "reaction to contrast dye"], 2),
            "rates": (round(r.uniform(0.3, 6.0), 1), round(r.uniform(0.2, 4.0), 1)),
            "contra": r.sample(["uncorrected bleeding disorders", "active infection at the access site",
                                "pregnancy", "severe frailty", "uncontrolled diabetes",
                                "an allergy to contrast media", "life expectancy under one year",
                                "severe lung disease that precludes anesthesia"], 2),
            "year": r.randrange(1958, 2020),
            "inventor": f"Dr. {r.choice(V.FIRST_NAMES)} {inventor_surname or self.new_eponym()}",
            "hospital": r.choice(V.HOSPITALS), "product": None, "card_id": "proc-" + slugify(name),
        }
        if p["anesthesia"] == "local anesthesia alone" and p["duration"] > 90:
            p["anesthesia"] = "general anesthesia"
        if p["stay"] == "outpatient sessions":
            p["anesthesia"] = "no anesthesia"
        if fixed is not None:  # set after the draws: the RNG stream stays the same either way
            p["anesthesia"], p["duration"], p["fast"] = fixed["anesthesia"], fixed["duration"], fixed["fast"]
            p["recovery"], p["success"], p["year"] = fixed["recovery"], fixed["success"], fixed["year"]
        self.procedures.append(p)
        if cond.get("procedure") is None:
            cond["procedure"] = p
        return p

    def build_procedures(self) -> None:
        r = self.rng
        sysk = self.sys_by_key
        a = self.cond_by_name
        cardio = sysk["cardio"]
        plic = cardio["procedures"][0]
        p = self._procedure(cardio, "Varnholt valve plication", plic, a["Varnholt valvulopathy"],
                            inventor_surname="Varnholt", fixed=ProcedureFacts(
                                anesthesia="general anesthesia", duration=95, fast=6, recovery=2,
                                success=91, year=2011))
        p["device"] = "the Keelbridge valve clip from Thessaly Medical Devices"
        neuro = sysk["neuro"]
        spec = ("ganglion stimulator implantation", "transoral minimally invasive", (45, 75),
                "same-day discharge", "an implantable sphenopalatine ganglion stimulator")
        p2 = self._procedure(neuro, "sphenopalatine ganglion stimulator implantation", spec,
                             a["Halloway cluster cephalalgia"], fixed=ProcedureFacts(
                                 anesthesia="general anesthesia", duration=60, fast=6, recovery=2,
                                 success=68, year=2009))
        p2["device"] = "the NeuroVane SPG stimulator from Thessaly Medical Devices"
        for b in self.brands:
            for prod in b["products"]:
                if prod["id"] == "keelbridge":
                    p["product"] = prod
                    prod["_procedure"] = p
                if prod["id"] == "neurovane-spg":
                    p2["product"] = prod
                    prod["_procedure"] = p2
        # Generated: for every procedure template of every system, 2-3 named variants,
        # each indicated for a different condition of that system.
        for system in V.SYSTEMS:
            conds = [c for c in self.conditions if c["system"] is system]
            for spec in system["procedures"]:
                n = 3 if len(system["procedures"]) <= 3 else 2
                for _ in range(n):
                    free = [c for c in conds if c["procedure"] is None] or conds
                    cond = r.choice(free)
                    if r.random() < 0.4 and f"{cond['eponym']} {spec[0]}".lower() not in self.used_names:
                        name = f"{cond['eponym']} {spec[0]}"
                        self._procedure(system, name, spec, cond, inventor_surname=cond["eponym"])
                    else:
                        for _ in range(50):
                            ep = r.choice(V.SURNAMES)
                            name = f"{ep} {spec[0]}"
                            if name.lower() not in self.used_names:
                                break
                        self._procedure(system, name, spec, cond, inventor_surname=ep)

    # ------------------------------------------------------------------ cards: medicines
    def med_text(self, m: Medicine) -> str:
        r = self.rng
        d = m["dose"]
        sib = m["sibling"]
        parts = []
        opener = r.choice([
            f"{m['name']} ({m['generic']}) is a {m['klass']} supplied as {article(m['form'])} {m['form']}.",
            f"{m['name']} is the brand name of {m['generic']}, a {m['klass']} given as {article(m['form'])} {m['form']}.",
        ])
        parts.append(opener)
        parts.append(f"It is indicated for {m['indication']}.")
        parts.append(f"Mechanism: it {m['mechanism']}.")
        parts.append(f"Dosing: {d['text']} {d['max']}")
        parts.append(f"Renal impairment: {m['renal']}")
        parts.append(m["peds"])
        parts.append(f"Contraindications include {join_list(m['contra'])}.")
        parts.append(f"The most common adverse effects in clinical trials were {join_list(m['adverse'])}.")
        if m["interaction"]:
            parts.append(m["interaction"])
        parts.append(f"The elimination half-life is about {m['halflife']} hours.")
        if m["brand_id"]:
            parts.append(f"It is marketed by {m['maker']} and was first approved in {m['approved']}; available strengths are {m['strengths']}.")
        else:
            parts.append(f"{m['name']} is manufactured by {m['maker']} and was first approved in {m['approved']}.")
        if m["xr_of"]:
            parts.append(f"Do not substitute it milligram-for-milligram with the immediate-release {m['xr_of']['name']} schedule without checking the total daily dose.")
        if sib and m["note_sibling"]:
            parts.append(f"Look-alike alert: do not confuse {m['name']} with {sib['name']} ({sib['generic']}), "
                         f"which is used for {sib['condition']['name']} at a different dose.")
        return " ".join(parts)

    def cards_medicines(self) -> None:
        for m in self.medicines:
            site = "medvault" if m["brand_id"] else self.pick_site("medicine")
            slug = slugify(m["name"])
            title = self.rng.choice([f"{m['name']} ({m['generic']})", f"{m['name']} ({m['generic']}) monograph",
                                     f"{m['generic']} ({m['name']}): drug summary"])
            meta = {"license": V.REF_SITES[site]["license"], "kind": "medicine", "updated": self.updated(),
                    "subject": m["name"], "generic_name": m["generic"], "body_system": m["system"]["key"],
                    "publisher": site, "synthetic": True}
            if m["brand_id"]:
                meta["brand_id"] = m["brand_id"]
            text = self.med_text(m)
            self.add_card(m["card_id"], title, text, self.ref_source(site, "medicine", slug, m["name"]), meta)

    # ------------------------------------------------------------------ cards: conditions
    def cond_text(self, c: Condition) -> str:
        r = self.rng
        s = c["system"]
        parts = [r.choice([
            f"{c['name']} is a rare {s['adj']} disorder characterized by {c['feature']}.",
            f"{c['name']} is an uncommon disease of the {s['organ']} marked by {c['feature']}.",
        ])]
        parts.append(f"It was first described in {c['describer_year']} by Dr. {c['describer_first']} {c['eponym']} at {c['hospital']}.")
        parts.append(f"It affects {c['prevalence']} and usually begins between the ages of {c['onset']}. {c['sex']}")
        parts.append(f"Typical symptoms include {join_list(c['symptoms'])}.")
        parts.append(f"Diagnosis requires {article(c['biomarker'])} {c['biomarker']} level above {c['threshold']} {c['unit']} "
                     f"on two tests at least {c['gap']} weeks apart, supported by {c['imaging']}; "
                     f"{article(s['specialist'])} {s['specialist']} usually confirms it.")
        fl = first_line(c)
        route_noun = V.ROUTES[fl["route"]]["noun"]
        if c["acute"]:
            parts.append(f"Attacks are treated with {join_list([a['name'] for a in c['acute']])}; "
                         f"for prevention, {fl['name']} ({fl['generic']}) tablets are usually tried first.")
        else:
            parts.append(f"First-line treatment is {fl['name']} ({fl['generic']}), {article(route_noun)} {route_noun}.")
        if c["second_line"]:
            sl = c["second_line"]
            parts.append(f"{sl['name']} ({sl['generic']}) is an alternative when the first-line drug fails or is not tolerated.")
        if c["procedure"]:
            parts.append(f"Patients who do not respond within {c['response_weeks']} weeks may be referred for {c['procedure']['name']}.")
        else:
            parts.append("Surgery has no established role.")
        for prod in c["diagnostic_products"]:
            parts.append(f"The {prod['name']} assay is widely used to measure the marker.")
        parts.append(f"With treatment, about {c['remission']}% of patients are in remission after five years.")
        if c["sibling"]:
            sib = c["sibling"]
            parts.append(f"It should not be confused with {sib['name']}, a separate condition marked by {sib['feature']}.")
        return " ".join(parts)

    def cards_conditions(self) -> None:
        for c in self.conditions:
            site = self.pick_site("condition")
            title = self.rng.choice([c["name"], f"{c['name']}: overview", f"{c['name']} (clinical summary)"])
            meta = {"license": V.REF_SITES[site]["license"], "kind": "condition", "updated": self.updated(),
                    "subject": c["name"], "body_system": c["system"]["key"], "publisher": site, "synthetic": True}
            self.add_card(c["card_id"], title, self.cond_text(c),
                          self.ref_source(site, "condition", slugify(c["name"]), c["name"]), meta)

    # ------------------------------------------------------------------ cards: procedures
    def proc_text(self, p: Procedure) -> str:
        r = self.rng
        c = p["condition"]
        parts = [r.choice([
            f"{cap(p['name'])} is {article(p['approach'])} {p['approach']} procedure used to treat {c['name']}.",
            f"{cap(p['name'])} is {article(p['approach'])} {p['approach']} intervention for patients with {c['name']}.",
        ])]
        parts.append(f"It was first described in {p['year']} by {p['inventor']} at {p['hospital']}.")
        if p["anesthesia"] == "no anesthesia":
            parts.append(f"Each session lasts about {p['duration']} minutes and needs no anesthesia.")
        else:
            parts.append(f"It is performed under {p['anesthesia']} and typically takes {p['duration']} minutes.")
        parts.append(f"The operator uses {p['device']}.")
        if p["fast"]:
            parts.append(f"Patients fast for {p['fast']} hours beforehand.")
        else:
            parts.append("No fasting is required beforehand.")
        stay = {"same-day discharge": "Most patients go home the same day",
                "outpatient sessions": "It is delivered as a course of outpatient sessions"}.get(
            p["stay"], f"The usual hospital stay is {p['stay']}")
        parts.append(f"{stay}; full recovery takes about {p['recovery']} week{'s' if p['recovery'] > 1 else ''}.")
        parts.append(f"Reported success at one year is {p['success']}%.")
        parts.append(f"The main complications are {p['complications'][0]} ({p['rates'][0]}%) and "
                     f"{p['complications'][1]} ({p['rates'][1]}%).")
        parts.append(f"Contraindications are {join_list(p['contra'])}.")
        other = [o for o in self.conditions if o["system"] is p["system"] and o["eponym"] == p["name"].split(" ")[0]
                 and o is not c]
        if other:
            parts.append(f"Despite the shared name, it is not used for {other[0]['name']}.")
        return " ".join(parts)

    def cards_procedures(self) -> None:
        for p in self.procedures:
            site = self.pick_site("procedure")
            title = self.rng.choice([cap(p["name"]), f"{cap(p['name'])}: procedure guide",
                                     f"{cap(p['name'])} (technique and outcomes)"])
            meta = {"license": V.REF_SITES[site]["license"], "kind": "procedure", "updated": self.updated(),
                    "subject": p["name"], "body_system": p["system"]["key"], "publisher": site, "synthetic": True}
            if p["product"]:
                meta["brand_id"] = "thessaly"
            self.add_card(p["card_id"], title, self.proc_text(p),
                          self.ref_source(site, "procedure", slugify(p["name"]), cap(p["name"])), meta)

    # ------------------------------------------------------------------ cards: brands & products
    def brand_pages(self, b: Company) -> list[tuple[str, str, str, str]]:
        """(card_id, path, title, text) for each page of a tracked brand's website."""
        prods = b["products"]
        prod_phr = join_list([f"{p['name']}, {article(p['form'])} {p['form']}" if p["type"] != "medicine"
                              else f"{p['name']} ({p['generic_name']}) for {p['condition']}" for p in prods])
        ipo = f", and it went public in {b['ipo_year']}" if b["ipo_year"] else ""
        about = (f"{b['name']} is {article(b['industry'])} {b['industry']} company headquartered in {b['headquarters']}. "
                 f"Founded in {b['founded']}, the company {b['origin']}{ipo}. {b['description']} "
                 f"Its marketed products are {prod_phr}. The company employs about {b['employees']:,} people "
                 f"and is {b['listing']}. Chief executive officer {b['ceo']} leads a management team that "
                 f"includes chief medical officer {b['cmo']} and chief financial officer {b['cfo']}. "
                 f"{b['name']} is also known as {join_list(b['aliases'][:2])}.")
        hist = " ".join(f"In {y}, the company {t}." for y, t in b["milestones"])
        history = (f"{b['name']} traces its origins to {b['founded']}, when it {b['origin']}. {hist} "
                   f"Today the company has its headquarters in {b['headquarters']} and about {b['employees']:,} employees.")
        r = random.Random(f"{SEED}-{b['id']}-lead")
        ceo_since = max(b["founded"], 2025 - r.randrange(3, 12))
        leadership = (f"{b['ceo']} is chief executive officer of {b['name']} and has led the company since {ceo_since}. "
                      f"Before that, {b['ceo'].split(' ')[-1]} spent {r.randrange(8, 18)} years in senior roles at "
                      f"{r.choice(['a European pharmaceutical group', 'a US medical-technology company', 'a global diagnostics maker', 'a healthcare private-equity firm'])}. "
                      f"{b['cmo']}, chief medical officer, oversees clinical development, medical affairs and patient safety. "
                      f"{b['cfo']}, chief financial officer, is responsible for finance, investor relations and procurement. "
                      f"The board of directors has {r.randrange(7, 12)} members, most of them independent, and is chaired by "
                      f"{r.choice(V.FIRST_NAMES)} {r.choice(V.SURNAMES)}.")
        pipe = " ".join(f"{code}, {desc}, is in {phase} for {ind}." for code, desc, ind, phase in b["pipeline"])
        pipeline = (f"The {b['name']} research and development pipeline builds on its marketed portfolio. {pipe} "
                    f"The company spent about {r.randrange(14, 29)}% of revenue on research and development in fiscal 2025. "
                    f"Timelines are estimates and programs may be discontinued; pipeline products are not approved "
                    f"for any use.")
        comp = [x for x in self.brands if x["id"] in b["competitors"]]
        results = (f"{b['name']} reported fiscal 2025 revenue of {b['revenue_fy2025']}, up {b['revenue_growth']} on the previous year. "
                   f"Growth was led by {prods[0]['name']}, while {prods[-1]['name']} {r.choice(['held steady', 'grew in Europe', 'gained new hospital contracts'])}. "
                   f"The company ended the year with about {b['employees']:,} employees. "
                   f"In its markets it competes mainly with {join_list([x['name'] for x in comp])}. "
                   f"Management expects mid-single to low-double digit growth in fiscal 2026 and "
                   f"{r.choice(['will present full results at its annual meeting in May', 'plans to expand manufacturing capacity', 'does not expect to need new financing'])}.")
        return [
            (f"brand-{b['id']}-about", "/about", f"About {b['name']}", about),
            (f"brand-{b['id']}-history", "/company/history", f"{b['name']}: company history", history),
            (f"brand-{b['id']}-leadership", "/leadership", f"{b['name']} leadership team", leadership),
            (f"brand-{b['id']}-pipeline", "/pipeline", f"{b['name']} development pipeline", pipeline),
            (f"brand-{b['id']}-results-fy2025", "/newsroom/fy2025-results",
             f"{b['name']} reports fiscal 2025 results", results),
        ]

    def product_pages(self, b: Company, p: Product) -> list[tuple[str, str, str, str]]:
        pid = p["id"]
        if p["type"] == "medicine":
            main = (f"{p['name']} ({p['generic_name']}) is {article(p['form'])} {p['form']} from {b['name']}, "
                    f"a {p['klass']}. It is indicated for {p['indication']}. How it works: it {p['mechanism']}. "
                    f"{p['dose_text']} {p['max_text']} {p['name']} is available as {p['strengths']}. "
                    f"It was approved in {p['approved']}. Prescribing information, patient leaflets and "
                    f"support programs are available from {b['name']} Medical Information.")
            safety = (f"Important safety information for {p['name']} ({p['generic_name']}). "
                      f"Do not use {p['name']} in patients with {join_list(p['contra'])}. "
                      f"Warnings and precautions: {p['warnings']} "
                      f"The most common side effects are {join_list(p['adverse'])}. Renal impairment: {p['renal_text']} "
                      f"{p['peds']} Report suspected side effects to {b['name']} Medical Information or your national "
                      f"reporting system. See the full prescribing information before prescribing.")
        else:
            verb = {"diagnostic": "launched", "device": "approved", "digital": "cleared"}[p["type"]]
            main = (f"{p['name']} is {article(p['form'])} {p['form']} made by {b['name']}. "
                    f"It is intended for {p['indication']}. Use: {p['dose']}. {p['specs']} "
                    f"{p['name']} was {verb} in {p['approved']}. Training, technical support and ordering "
                    f"are handled by {b['name']} customer service in each market.")
            if p.get("_procedure"):
                main += f" It is the device used in {p['_procedure']['name']}."
            safety = (f"Safety information and limitations for {p['name']}. {p['warnings']} "
                      f"Read the instructions for use in full before first use and follow local protocols. "
                      f"Only trained staff should set up, implant or interpret results from this product. "
                      f"Report any malfunction, incident or suspected adverse event to {b['name']} "
                      f"quality and vigilance, quoting the lot or serial number printed on the label.")
        return [
            (f"product-{pid}", f"/products/{pid}", p["name"], main),
            (f"product-{pid}-safety", f"/products/{pid}/safety", f"{p['name']}: safety information", safety),
        ]

    def cards_brands(self) -> None:
        for b in self.brands:
            site_license = {"lumora": "proprietary-brand", "kestrel": "CC-BY-ND-4.0", "halvane": "proprietary-brand",
                            "orbisan": "proprietary-brand", "thessaly": "CC-BY-4.0", "corvina": "CC-BY-4.0"}[b["id"]]
            b["_pages"] = []
            for card_id, path, title, text in self.brand_pages(b):
                src = f"https://{b['domain']}{path}"
                self.add_card(card_id, title, text, src,
                              {"license": site_license, "kind": "brand", "brand_id": b["id"],
                               "updated": self.updated(), "subject": b["name"], "publisher": b["domain"],
                               "synthetic": True})
                b["_pages"].append((card_id, path))
            for p in b["products"]:
                p["_pages"] = []
                for card_id, path, title, text in self.product_pages(b, p):
                    src = f"https://{b['domain']}{path}"
                    self.add_card(card_id, title, text, src,
                                  {"license": site_license, "kind": "product", "brand_id": b["id"],
                                   "product_id": p["id"], "updated": self.updated(), "subject": p["name"],
                                   "publisher": b["domain"], "synthetic": True})
                    p["_pages"].append((card_id, path))
        for c in self.companies:
            r = self.rng
            prods = c["products"][:4]
            if c["makes_medicines"] and prods:
                names = join_list(["%s (%s)" % (m["name"], m["generic"]) for m in prods])
                more = " among other products" if len(c["products"]) > 4 else ""
                prod_s = f"Its portfolio includes {names}{more}."
            else:
                prod_s = "It does not market any human medicines."
            look = ""
            if c.get("lookalike"):
                tb = next(x for x in self.brands if x["id"] == c["lookalike"])
                look = (f"Despite the similar name, {c['name']} is not affiliated with {tb['name']} and has no "
                        f"ownership or licensing ties to it.")
            text = (f"{c['name']} is {article(c['focus'])} {c['focus']} based in {c['hq']}. It was founded in {c['founded']} "
                    f"and employs about {c['employees']:,} people. {prod_s} {look} "
                    f"The company is {r.choice(['privately owned', 'family-owned', 'a subsidiary of a larger holding group', 'publicly listed'])} "
                    f"and sells mainly in {r.choice(['Europe', 'North America', 'Asia and the Middle East', 'the Commonwealth', 'its home market'])}. "
                    f"Its head office can be reached through the contact form on its website.")
            self.add_card(f"company-{c['id']}", f"{c['name']} (company profile)", text,
                          f"https://{c['domain']}/about",
                          {"license": r.choice(["proprietary-brand", "CC-BY-4.0", "all-rights-reserved"]),
                           "kind": "brand", "tracked": False, "updated": self.updated(), "subject": c["name"],
                           "publisher": c["domain"], "synthetic": True})
            c["card_id"] = f"company-{c['id']}"

    def link_products_to_conditions(self) -> None:
        for b in self.brands:
            for p in b["products"]:
                if p["type"] == "diagnostic" and p["condition"] in self.cond_by_name:
                    self.cond_by_name[p["condition"]]["diagnostic_products"].append(p)

    # ------------------------------------------------------------------ brands.json
    def brands_json(self) -> Record:
        out = []
        for b in self.brands:
            dom = b["domain"]
            pages = {path: f"https://{dom}{path}" for _, path in b["_pages"]}
            sources = list(pages.values())
            products = []
            for p in b["products"]:
                purl = f"https://{dom}/products/{p['id']}"
                sources.append(purl)
                sources.append(purl + "/safety")
                products.append({k: v for k, v in {
                    "id": p["id"], "name": p["name"], "generic_name": p.get("generic_name"),
                    "type": p["type"], "form": p["form"], "condition": p["condition"],
                    "indication": p["indication"], "dose": p["dose"], "approved": p["approved"],
                    "source": purl, "card_ids": [cid for cid, _ in p["_pages"]] + (
                        [p["_med"]["card_id"]] if p.get("_med") else []),
                }.items() if v is not None})
            about = pages["/about"]
            facts = [
                {"type": "founded", "value": str(b["founded"]),
                 "statement": f"{b['name']} was founded in {b['founded']}.", "source": about},
                {"type": "headquarters", "value": b["headquarters"],
                 "statement": f"{b['name']} is headquartered in {b['headquarters']}.", "source": about},
                {"type": "ceo", "value": b["ceo"],
                 "statement": f"{b['ceo']} is the chief executive officer of {b['name']}.", "source": about},
                {"type": "employees", "value": f"{b['employees']:,}",
                 "statement": f"{b['name']} employs about {b['employees']:,} people.", "source": about},
                {"type": "industry", "value": b["industry"],
                 "statement": f"{b['name']} is {article(b['industry'])} {b['industry']} company.", "source": about},
                {"type": "description", "value": b["description"], "statement": b["description"], "source": about},
                {"type": "revenue_fy2025", "value": b["revenue_fy2025"],
                 "statement": f"{b['name']} reported fiscal 2025 revenue of {b['revenue_fy2025']}.",
                 "source": pages["/newsroom/fy2025-results"]},
            ]
            for p in b["products"]:
                g = f" ({p['generic_name']})" if p.get("generic_name") else ""
                facts.append({"type": "product", "value": p["name"],
                              "statement": f"{p['name']}{g} is {article(p['form'])} {p['form']} from {b['name']} for {p['indication']}.",
                              "source": f"https://{dom}/products/{p['id']}"})
                facts.append({"type": "product_dose", "value": p["dose"],
                              "statement": f"{p['name']}: {p['dose']}.", "source": f"https://{dom}/products/{p['id']}"})
                facts.append({"type": "product_approved", "value": str(p["approved"]),
                              "statement": f"{p['name']} was first approved or launched in {p['approved']}.",
                              "source": f"https://{dom}/products/{p['id']}"})
            out.append({
                "id": b["id"], "name": b["name"], "aliases": b["aliases"], "domains": [dom],
                "competitors": b["competitors"], "founded": b["founded"], "headquarters": b["headquarters"],
                "ceo": b["ceo"], "employees": b["employees"], "industry": b["industry"],
                "description": b["description"], "listing": b["listing"], "ipo_year": b["ipo_year"],
                "revenue_fy2025": b["revenue_fy2025"],
                "leadership": {"ceo": b["ceo"], "cmo": b["cmo"], "cfo": b["cfo"]},
                "pipeline": [{"code": c, "description": d, "indication": i, "phase": ph} for c, d, i, ph in b["pipeline"]],
                "products": products, "sources": sources, "facts": facts,
                "card_ids": [cid for cid, _ in b["_pages"]],
            })
        lookalikes = [{"name": c["name"], "domain": c["domain"], "not": c["lookalike"], "card_id": c["card_id"]}
                      for c in self.companies if c.get("lookalike")]
        return {"schema_version": 1, "synthetic": True,
                "note": "Fictional companies on the reserved .example TLD. Not real organisations.",
                "brands": out, "lookalikes": lookalikes}

    # ------------------------------------------------------------------ queries
    def q(self, question: str, relevant: dict[str, int], kind: str, tags: list[str] | None = None) -> None:
        rel = {k: v for k, v in relevant.items() if v}
        for k in rel:
            if k not in self.card_index:
                raise KeyError(f"query refers to unknown card {k}")
        qid = f"q-{len(self.queries) + 1:04d}"
        self.queries.append({"query_id": qid, "question": question, "relevant": rel, "split": None,
                             "kind": kind, "tags": sorted(tags or [])})

    def cond_mentions(self, m: Medicine) -> list[Condition]:
        return [c for c in self.conditions if c["first_line"] is m or c["second_line"] is m or m in c["acute"]]

    def build_queries(self) -> None:
        r = random.Random(f"{SEED}-queries")
        med_extra = {}
        for m in self.medicines:
            if m["product"]:
                p = m["product"]
                prod, safe = f"product-{p['id']}", f"product-{p['id']}-safety"
                med_extra[m["card_id"]] = (prod, safe)

        def rel_med(m: Medicine, facet: str) -> dict[str, int]:
            rel = {m["card_id"]: 2}
            if m["card_id"] in med_extra:
                prod, safe = med_extra[m["card_id"]]
                if facet in ("dose", "max", "mech", "indication", "maker"):
                    rel[prod] = 2
                if facet in ("contra", "adverse", "renal", "peds", "warnings"):
                    rel[safe] = 2
            return rel

        med_templates = {
            "dose": ["What's the usual adult dose of {n}?", "how much {n} does an adult normally take",
                     "Standard adult dosing for {g}?", "How is {n} usually dosed, and how often?",
                     "My doctor mentioned {n}. What dose do adults start on?"],
            "max": ["What's the maximum dose of {n}?", "Is there a ceiling dose for {g}?",
                    "how much {n} is too much in a day"],
            "contra": ["Who shouldn't be given {n}?", "What are the contraindications for {g}?",
                       "Is {n} safe for someone with {c0}?"],
            "mech": ["How does {g} work?", "What's the mechanism of action of {n}?", "what kind of drug is {n} and how does it act"],
            "adverse": ["What side effects are common with {n}?", "Does {g} cause {a0}?", "what are the usual adverse effects of {n}"],
            "halflife": ["What's the half-life of {g}?", "How long does {n} stay in the body?"],
            "renal": ["Does {n} need a dose change in kidney impairment?", "How should {g} be adjusted for low eGFR?"],
            "peds": ["Can children take {n}?", "Is {g} approved for kids or teenagers?"],
            "maker": ["Who manufactures {n}, and when was it first approved?", "Which company makes {g}?",
                      "When did {n} first get approved?"],
            "indication": ["What is {n} prescribed for?", "What condition is {g} used to treat?"],
        }
        for m in self.medicines:
            facets = list(med_templates)
            if m["interaction"]:
                facets.append("interaction")
            k = 2 if m["brand_id"] else 1
            for facet in r.sample(facets, k):
                shared_generic = m["xr_of"] is not None or m.get("xr") is not None
                name = m["name"] if shared_generic else r.choice([m["name"], m["name"], m["generic"]])
                gname = m["name"] if shared_generic else m["generic"]
                if facet == "interaction":
                    o = m["interaction_with"]
                    qtext = r.choice([f"Can {m['name']} be taken together with {o['name']}?",
                                      f"Is there an interaction between {m['generic']} and {o['generic']}?"])
                    rel = {m["card_id"]: 2}
                    self.q(qtext, rel, "medicine", ["interaction"])
                    continue
                t = r.choice(med_templates[facet])
                qtext = t.format(n=name, g=gname, c0=m["contra"][0], a0=m["adverse"][0])
                qtext = cap(qtext) if r.random() < 0.8 else qtext
                rel = rel_med(m, facet)
                if facet == "indication":
                    for c in self.cond_mentions(m):
                        rel[c["card_id"]] = 2
                    rel.setdefault(m["condition"]["card_id"], 1)
                if facet == "maker" and m["brand_id"]:
                    rel[f"brand-{m['brand_id']}-history"] = 1
                maker_ref = m["maker_ref"]
                if facet == "maker" and maker_ref and m in maker_ref["products"][:4]:
                    rel[maker_ref["card_id"]] = 1
                tags = ["xr"] if m["xr_of"] else []
                self.q(qtext, rel, "medicine", tags)
            # Near-miss: look-alike names and XR vs immediate release.
            if m["sibling"] and r.random() < 0.75:
                s = m["sibling"]
                style = r.randrange(3)
                if style == 0:
                    qtext = f"I always mix up {m['name']} and {s['name']}. What's the normal adult dose of {m['name']}?"
                    rel = rel_med(m, "dose")
                    rel[s["card_id"]] = 1
                elif style == 1:
                    qtext = r.choice([f"What is {m['name']} used for? Not {s['name']}, the other one.",
                                      f"What condition does {m['name']} treat (as opposed to {s['name']})?"])
                    rel = rel_med(m, "indication")
                    for c in self.cond_mentions(m):
                        rel[c["card_id"]] = 2
                    rel[s["card_id"]] = 1
                else:
                    qtext = f"Do {m['name']} and {s['name']} have the same dosing schedule?"
                    rel = {**rel_med(s, "dose"), **rel_med(m, "dose")}
                self.q(qtext, rel, "medicine", ["near_miss"])
            if m["xr_of"]:
                base = m["xr_of"]
                qtext = r.choice([f"How is {base['name']} XR dosed compared with regular {base['name']}?",
                                  f"If I switch from {base['name']} {base['dose']['short']} to the extended-release version, what dose do I take?"])
                self.q(qtext, {m["card_id"]: 2, base["card_id"]: 1}, "medicine", ["near_miss", "xr"])
        # Descriptor questions for tracked-brand medicines (no product name in the question).
        for b in self.brands:
            for p in b["products"]:
                if p["type"] != "medicine":
                    continue
                m = p["_med"]
                about = f"brand-{b['id']}-about"
                qs = [
                    (f"What's the usual adult dose of {p['descriptor']}?", rel_med(m, "dose")),
                    (f"What are the main safety warnings for {p['descriptor']}?",
                     {f"product-{p['id']}-safety": 2, m["card_id"]: 1}),
                ]
                for qtext, rel in qs:
                    rel = dict(rel)
                    rel.setdefault(about, 1)
                    self.q(qtext, rel, "medicine", ["descriptor"])
        # Ostrander cluster: distinguishing acute vs preventive, oral vs injectable.
        ost = self.cond_by_name["Ostrander episodic migraine"]
        med = {m["name"]: m for m in self.medicines}
        self.q("Which once-monthly injection is used to prevent Ostrander migraine, and what is its dose?",
               {**rel_med(med["Velnorax"], "dose"), ost["card_id"]: 1}, "medicine", ["near_miss", "descriptor"])
        self.q("Is there a daily pill for preventing Ostrander migraine? How much do adults take?",
               {**rel_med(med["Velnorex"], "dose"), ost["card_id"]: 1}, "medicine", ["near_miss", "descriptor"])
        self.q("For an Ostrander migraine attack that has already started, what are the options and doses?",
               {**rel_med(med["Sorventa"], "dose"), **rel_med(med["Migrastat"], "dose"), ost["card_id"]: 2},
               "medicine", ["near_miss"])
        self.q("How many Sorventa sprays can I use in one day?", rel_med(med["Sorventa"], "max"), "medicine", [])
        self.q("Is there a non-drug, app-based option for Ostrander migraine?",
               {"product-corvina-headway": 2, "brand-corvina-about": 1}, "product", ["descriptor"])

        # Conditions.
        cond_templates = {
            "symptoms": ["What are the typical symptoms of {n}?", "How does {n} usually present?",
                         "which symptoms point to {n}"],
            "diagnosis": ["How is {n} diagnosed?", "What lab cut-off is used to confirm {n}?",
                          "Which test confirms a diagnosis of {n}?"],
            "epi": ["How common is {n}, and at what age does it start?", "At what age is {n} usually diagnosed?",
                    "Is {n} more common in men or women?"],
            "treatment": ["How is {n} treated?", "What's the first-line therapy for {n}?",
                          "what drug do doctors try first for {n}"],
            "prognosis": ["What's the long-term outlook for {n}?", "What share of people with {n} reach remission?"],
            "history": ["Who first described {n}, and when?"],
        }
        for c in self.conditions:
            facets = r.sample(list(cond_templates), 2 if c.get("anchor") else 1)
            for facet in facets:
                qtext = r.choice(cond_templates[facet]).format(n=c["name"])
                rel = {c["card_id"]: 2}
                if facet == "treatment":
                    rel[first_line(c)["card_id"]] = 1
                    if c["second_line"]:
                        rel[c["second_line"]["card_id"]] = 1
                    if c["procedure"]:
                        rel[c["procedure"]["card_id"]] = 1
                    for a in c["acute"]:
                        rel[a["card_id"]] = 1
                if facet == "diagnosis":
                    for product in c["diagnostic_products"]:
                        rel[f"product-{product['id']}"] = 1
                self.q(cap(qtext), rel, "condition", [])
            sibling = c["sibling"]
            if sibling and r.random() < 0.7:
                qtext = r.choice([f"How is {c['name']} different from {sibling['name']}?",
                                  f"What are the symptoms of {c['name']}, as opposed to {sibling['name']}?"])
                rel = {c["card_id"]: 2}
                rel[sibling["card_id"]] = 2 if qtext.startswith("How is") else 1
                self.q(qtext, rel, "condition", ["near_miss"])
        # Reverse look-ups by biomarker threshold (many conditions share a biomarker).
        pool = [c for c in self.conditions]
        for c in r.sample(pool, 24):
            qtext = r.choice([
                f"Which {c['system']['adj']} condition uses a {c['biomarker']} cut-off of {c['threshold']} {c['unit']} for diagnosis?",
                f"Diagnostic threshold of {c['threshold']} {c['unit']} for {c['biomarker']}: which disorder is that for?",
            ])
            self.q(qtext, {c["card_id"]: 2}, "condition", ["near_miss", "reverse_lookup"])

        # Procedures.
        proc_templates = {
            "duration": ["How long does {n} take, and what kind of anesthesia is used?",
                         "Will I be asleep for {n}?"],
            "recovery": ["What's the recovery time after {n}?", "How long is the hospital stay after {n}?",
                         "My dad is booked for {n}. When can he get back to normal?"],
            "risks": ["What are the main complications of {n}?", "How risky is {n}?"],
            "success": ["How successful is {n}?", "What's the one-year success rate of {n}?"],
            "contra": ["Who is not a candidate for {n}?", "When is {n} contraindicated?"],
            "indication": ["What is {n} used to treat?", "Which condition is {n} performed for?"],
            "prep": ["Do I need to fast before {n}, and for how long?"],
            "device": ["What equipment is used during {n}?"],
        }
        for proc in self.procedures:
            for facet in r.sample(list(proc_templates), 2 if proc["product"] else 1):
                qtext = r.choice(proc_templates[facet]).format(n=proc["name"])
                rel = {proc["card_id"]: 2}
                tags = []
                if facet == "indication":
                    c = proc["condition"]
                    rel[c["card_id"]] = 2 if c["procedure"] is proc else 1
                if facet == "device" and proc["product"]:
                    rel[f"product-{proc['product']['id']}"] = 2
                same = [c for c in self.conditions if c["eponym"] == proc["name"].split(" ")[0]]
                if same:
                    tags.append("near_miss")
                self.q(cap(qtext), rel, "procedure", tags)
        # Condition-vs-procedure on the same organ and name.
        self.q("What happens during Varnholt valve plication and how long is the recovery?",
               {"proc-varnholt-valve-plication": 2, "product-keelbridge": 1}, "procedure", ["near_miss"])
        self.q("Can Varnholt valve plication fix Varnholt cardiomyopathy?",
               {"proc-varnholt-valve-plication": 2, "cond-varnholt-cardiomyopathy": 1,
                "cond-varnholt-valvulopathy": 1}, "procedure", ["near_miss"])

        # Brands (tracked), asked with aliases.
        brand_templates = [
            ("When was {a} founded and where is it headquartered?", "about", ["history"]),
            ("What does {a} do?", "about", []),
            ("Who is the CEO of {a}?", "leadership", ["about"]),
            ("Who runs {a} day to day?", "leadership", ["about"]),
            ("Who is the chief medical officer at {a}?", "leadership", []),
            ("How many people work at {a}?", "about", ["history", "results"]),
            ("Roughly how big is {a} in terms of staff?", "about", ["history", "results"]),
            ("What products does {a} sell?", "about", []),
            ("What is in {a}'s development pipeline?", "pipeline", []),
            ("Which phase 3 or pivotal programs does {a} have?", "pipeline", []),
            ("What revenue did {a} report for fiscal 2025?", "results", []),
            ("Who are {a}'s main competitors?", "results", []),
            ("When did {a} launch its first product?", "history", []),
        ]
        page_id = {"about": "about", "history": "history", "leadership": "leadership", "pipeline": "pipeline",
                   "results": "results-fy2025"}
        for b in self.brands:
            for t, main, partial in r.sample(brand_templates, 7):
                alias = r.choice([b["name"]] + b["aliases"][:2])
                rel = {f"brand-{b['id']}-{page_id[main]}": 2}
                for pp in partial:
                    full = ((t.startswith("When was") and pp == "history") or ("CEO" in t and pp == "about")
                            or "people work" in t or "staff" in t)
                    rel[f"brand-{b['id']}-{page_id[pp]}"] = 2 if full else 1
                if "phase 3" in t and not any(ph in ("phase 3", "pivotal trial", "pivotal study") for *_, ph in b["pipeline"]):
                    t = "Does {a} have any programs in early clinical development?"
                if t.startswith("What products"):
                    for p in b["products"]:
                        rel[f"product-{p['id']}"] = 1
                if t.startswith("When did {a} launch"):
                    first = min(b["products"], key=lambda p: p["approved"])
                    rel[f"product-{first['id']}"] = 1
                qtext = t.replace("{a}'s", poss(alias)).format(a=alias)
                self.q(qtext, rel, "brand", ["alias"] if alias != b["name"] else [])
        for co in self.companies:
            if co.get("lookalike"):
                tb = next(x for x in self.brands if x["id"] == co["lookalike"])
                qtext = r.choice([f"Is {co['name']} part of {tb['name']}?",
                                  f"Is {co['name']} the same company as {tb['aliases'][0]}?"])
                self.q(qtext, {co["card_id"]: 2, f"brand-{tb['id']}-about": 1}, "brand", ["near_miss", "lookalike"])
            qtext = r.choice([f"What does {co['name']} make?", f"Where is {co['name']} based and when was it founded?"])
            rel = {co["card_id"]: 2}
            self.q(qtext, rel, "brand", [])

        # Products (diagnostics, devices, digital) + product safety pages.
        for b in self.brands:
            for p in b["products"]:
                prod, safe = f"product-{p['id']}", f"product-{p['id']}-safety"
                if p["type"] == "medicine":
                    qtext = r.choice([f"What strengths does {p['name']} come in?", f"How is {p['name']} supplied?"])
                    self.q(qtext, {prod: 2, p["_med"]["card_id"]: 2}, "product", [])
                    continue
                qs = [
                    (r.choice([f"What is the {p['name']} used for?", f"What does {p['descriptor']} do?"]), {prod: 2}),
                    (r.choice([f"What are the technical specifications of {p['name']}?",
                               f"How is {p['name']} used in practice?"]), {prod: 2}),
                    (r.choice([f"What are the limitations or warnings for {p['name']}?",
                               f"Any safety issues I should know about with {p['descriptor']}?"]), {safe: 2}),
                ]
                for qtext, rel in qs:
                    rel = dict(rel)
                    if p.get("_procedure") and "used for" in qtext:
                        rel[p["_procedure"]["card_id"]] = 1
                    if ("used for" in qtext or "do?" in qtext) and p["type"] == "diagnostic":
                        if p["condition"] in self.cond_by_name:
                            rel[self.cond_by_name[p["condition"]]["card_id"]] = 1
                    self.q(qtext, rel, "product", ["descriptor"] if p["descriptor"] in qtext else [])
                extra = {
                    "halvascreen-hp7": f"How accurate is {p['descriptor']}, and what cut-off does it use?",
                    "cardiotrace-hs-vlc": f"What is the decision threshold of {p['descriptor']}?",
                    "q-strip-10": f"How long do you wait before reading {p['descriptor']}?",
                    "keelbridge": f"What sizes does {p['descriptor']} come in, and how is it delivered?",
                    "thessaflow-ip3": f"How long does the battery last on {p['descriptor']}?",
                    "neurovane-spg": f"Is {p['descriptor']} MRI safe?",
                    "corvina-headway": f"How much did {p['descriptor']} reduce migraine days in its pivotal study?",
                    "corvinacare-connect": f"When does {p['descriptor']} send an alert about weight gain?",
                }.get(p["id"])
                if extra:
                    self.q(extra, {prod: 2}, "product", ["descriptor"])
        assign_splits(self.queries)

    # ------------------------------------------------------------------ degraded fixture
    def degraded(self) -> list[Record]:
        base_text = ("Tessamir (tessamirone) is a fictional oral tablet used only in tests of degraded knowledge-base "
                     "metadata. The usual adult dose is 20 mg once daily, with a maximum of 40 mg per day. It is "
                     "contraindicated in severe hepatic impairment and pregnancy. Common adverse effects are nausea, "
                     "headache and dizziness. It is manufactured by Tiderun Generics and was first approved in 2017.")
        good_meta = {"license": "CC-BY-4.0", "kind": "medicine", "lang": "en", "updated": "2025-02-01",
                     "synthetic": True}

        def card(cid: str, title: str, **fields: Any) -> Record:
            c = {"card_id": cid, "title": title, "text": base_text.replace("Tessamir", title.split(" ")[0]),
                 "source": f"https://ref.medvault.example/monographs/{cid}", "metadata": dict(good_meta)}
            for k, v in fields.items():
                if v is _DROP:
                    c.pop(k, None)
                else:
                    c[k] = v
            return c

        return [
            card("degraded-missing-source", "Tessamir (no source key)", source=_DROP),
            card("degraded-empty-source", "Tessamar (empty source)", source=""),
            card("degraded-null-source", "Tessamor (null source)", source=None),
            card("degraded-javascript-source", "Tessamur (javascript source)", source="javascript:alert(1)"),
            card("degraded-ftp-source", "Tessamer (ftp source)",
                 source="ftp://files.medvault.example/monographs/tessamer.pdf"),
            card("degraded-license-int", "Tessamil (integer license)", metadata={**good_meta, "license": 42}),
            card("degraded-license-missing", "Tessamol (no license)",
                 metadata={k: v for k, v in good_meta.items() if k != "license"}),
            card("degraded-metadata-not-dict", "Tessamyl (string metadata)",
                 metadata="license=CC-BY-4.0; kind=medicine"),
        ]

    # ------------------------------------------------------------------ main
    def build(self) -> None:
        self.build_brands()
        self.build_companies()
        self.build_conditions()
        self.build_brand_medicines()
        self.build_generic_medicines()
        self.build_procedures()
        self.link_products_to_conditions()
        self.cards_brands()
        self.cards_medicines()
        self.cards_conditions()
        self.cards_procedures()
        self.build_queries()


_DROP = object()

# Which untracked manufacturers make medicines for which body system (by company focus).
SYSTEM_MAKERS: dict[str, list[str]] = {
    "neuro": ["lumoro-labs", "sunvale", "orbis-medical"],
    "cardio": ["corvinus-pharma", "lumoro-labs", "orbis-medical"],
    "resp": ["sunvale", "corvinus-pharma"],
    "hepatic": ["pellworth", "tiderun"],
    "renal": ["marisco", "orbis-medical"],
    "derm": ["ardent-molecular", "tiderun"],
    "eye": ["tiderun", "ardent-molecular"],
    "msk": ["ardent-molecular", "lumoro-labs"],
    "endo": ["brightwater", "lumoro-labs"],
    "gi": ["pellworth", "orbis-medical"],
    "heme": ["marisco", "orbis-medical"],
    "ent": ["sunvale", "tiderun"],
    "uro": ["tiderun", "pellworth"],
    "metab": ["brightwater", "marisco"],
}


def dumps_jsonl(rows: list[Record]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows)


def render() -> dict[Path, str]:
    """Build everything in memory; returns {the file's committed path: content}."""
    b = Builder()
    b.build()
    order = {"medicine": 0, "condition": 1, "procedure": 2, "brand": 3, "product": 4}
    cards = sorted(b.cards, key=lambda c: (order[c["metadata"]["kind"]], c["card_id"]))
    return {
        KB_DATA_DIR / "cards.jsonl": dumps_jsonl(cards),
        KB_DATA_DIR / "queries.jsonl": dumps_jsonl(b.queries),
        FIXTURE_DIR / "degraded_cards.jsonl": dumps_jsonl(b.degraded()),
        KB_DATA_DIR / "brands.json": json.dumps(b.brands_json(), ensure_ascii=False, indent=2) + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if committed data files differ from a fresh build")
    ap.add_argument("--out", type=Path, default=None,
                    help="write every file into this one directory instead of where it is committed")
    args = ap.parse_args(argv)
    files = render()
    stale = []
    for committed, content in files.items():
        path = committed if args.out is None else args.out / committed.name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != content:
                stale.append(committed.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    if args.check and stale:
        print("stale data files: " + ", ".join(stale), file=sys.stderr)
        return 1
    if not args.check:
        print("wrote " + ", ".join(str(p if args.out is None else args.out / p.name) for p in files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
