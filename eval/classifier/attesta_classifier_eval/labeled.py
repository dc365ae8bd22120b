"""The labelled set of runs for the classifier (``labeled_runs.jsonl``), its builder and its
ground truth.

Runs are written from the six invented brands of ``attesta_kb.load_brands()`` by templates that
cover every rule and edge case of ADR-031: STRONG URL forms, lookalike domains, ABSENT with
substring and lookalike-company traps, accents, sure and unsure ECHO, DESCRIPTIVE paraphrases,
and CONFABULATED answers with wrong numbers, years, CEO names, cities, doses, other brands'
products and negations. Each row carries its label (what a careful human auditor would say
against the brand's ground truth) and a ``category`` naming the edge case.

Splits: the templated rows by brand, so the test split is brands the rules were never tuned on
(dev = lumora, halvane, thessaly; test = kestrel, orbisan, corvina); plus a "handwritten" split
of 36 varied answers written by hand (not templates) and never used for tuning.

Ground truth (``brand_facts``) is derived the way a refresh derives it: every page of the
brand's site (``attesta_kb_tools.sites.render_page``, the same HTML the local site server serves) goes
through the classifier's fact extraction (``domain.extraction.extract_facts``) and fact ids.

    python -m attesta_classifier_eval.labeled          # rewrite labeled_runs.jsonl
    python -m attesta_classifier_eval.labeled --check  # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from datetime import UTC, datetime
from urllib.parse import urlsplit

from attesta_classifier.domain.model import Brand, Fact, Run

from . import DATA_DIR

FILE_NAME = "labeled_runs.jsonl"
WORKSPACE = "ws-labelled"
DEV_BRANDS = ("lumora", "halvane", "thessaly")
TEST_BRANDS = ("kestrel", "orbisan", "corvina")
FETCHED_AT = datetime(2026, 12, 1, tzinfo=UTC)

# Invented people and places for wrong answers (none of them appears in any brand's facts).
WRONG_CEOS = ("Jonathan Whitaker", "Elena Marchetti", "Rajiv Anand", "Sophie Delacroix",
              "Henrik Solberg", "Laura Pfeiffer")
WRONG_CITIES = ("Dublin", "Munich", "Toronto", "Singapore", "Oslo", "Madrid")
ACCENTED = str.maketrans({"a": "á", "e": "é", "o": "ö", "u": "ü", "i": "í"})


def _first_number(text: str) -> int:
    m = re.search(r"\d+", text)
    return int(m.group(0)) if m else 1


def _accent(name: str) -> str:
    """Accent the first vowel after the first letter: Lumora -> Lumóra (still the same name)."""
    for i, ch in enumerate(name[1:], 1):
        if ch in "aeiou":
            return name[:i] + ch.translate(ACCENTED) + name[i + 1:]
    return name


def _brand_rows(b: dict, others: list[dict], lookalike: dict | None, n: int) -> list[dict]:
    name, alias, domain = b["name"], b["aliases"][0], b["domains"][0]
    first = name.split()[0]
    city = b["headquarters"].split(",")[0]
    p0, p1 = b["products"][0], b["products"][1]
    other, other2 = others[n % len(others)], others[(n + 1) % len(others)]
    other_product = other["products"][0]
    desc_rest = b["description"][len(name):].strip() if b["description"].startswith(name) else b["description"]
    wrong_ceo = WRONG_CEOS[n % len(WRONG_CEOS)]
    wrong_city = WRONG_CITIES[n % len(WRONG_CITIES)]
    cond = p0.get("condition") or p0["indication"]
    dose_n = _first_number(p0["dose"])
    neutral = f"Which companies are active in {b['industry']} products for {cond}?"
    about = f"What do you know about {name}?"
    about_alias = f"Tell me about {alias}."
    rows: list[tuple[str, str, str, str, str]] = [
        # ---- STRONG: a URL on the brand's domain, in every form engines write it
        ("strong_https_url", neutral,
         f"{name} is one of them; its product pages are at https://{domain}/products/{p0['id']}.", "STRONG"),
        ("strong_bare_domain", about,
         f"{name} describes itself on {domain}, where it lists {p0['name']} and {p1['name']}.", "STRONG"),
        ("strong_markdown_link", about_alias,
         f"According to [{alias}'s leadership page](https://www.{domain}/leadership), the company is led by {b['ceo']}.",
         "STRONG"),
        ("strong_angle_port_case", about,
         f"The official site is <HTTPS://{domain.upper()}:443/about>.", "STRONG"),
        ("strong_subdomain_trailing_punct", neutral,
         f"See investors.{domain}/newsroom/fy2025-results, which covers {name}'s fiscal 2025.", "STRONG"),
        ("strong_wrong_content_still_strong", about,
         f"{name} was founded in 1851 (source: https://{domain}/about).", "STRONG"),
        # ---- lookalike URLs: never STRONG; the text decides
        ("lookalike_subdomain_of_other", about,
         f"{name} {desc_rest} More: https://{domain}.evil-mirror.io/about", "DESCRIPTIVE"),
        ("lookalike_userinfo", neutral,
         f"{name} is headquartered in {city} (https://{domain}@trk-links.io/about).", "DESCRIPTIVE"),
        ("lookalike_domains_only", about,
         f"{name}: see https://not{domain}/ or https://{domain.replace('.', '-')}.net/ for more.", "ECHO"),
        ("lookalike_disguised_markdown", about_alias,
         f"[{domain}](https://evil-mirror.io/{b['id']}) says {alias} was founded in {b['founded']}.", "DESCRIPTIVE"),
        # ---- ABSENT: no mention at all, including traps
        ("absent_competitors_only", neutral,
         f"The best known are {other['name']} and {other2['name']}, both with products for {cond}.", "ABSENT"),
        ("absent_substring_trap", neutral,
         f"{first}vision Imaging makes camera systems, and {other['name']} makes medicines.", "ABSENT"),
        ("absent_prompt_named_but_answer_not", about,
         f"I can tell you about {other['name']}: it is one of the companies in this field.", "ABSENT"),
        # ---- ECHO
        ("echo_hedge_sure", about,
         f"I don't have specific information about {name}. Please check their official website "
         "or recent news for up-to-date details.", "ECHO"),
        ("echo_not_familiar_prompt_words", f"Is {alias} a good company to work for?",
         f"I'm not familiar with {alias}, so I cannot say whether it is a good company to work for.", "ECHO"),
        ("echo_list_mention", neutral,
         f"Names that come up include {name}, {other['name']} and {other2['name']}; compare them yourself.", "ECHO"),
        ("echo_vague_praise", neutral,
         f"{name} is a well-known name in the industry with a strong reputation.", "ECHO"),
        ("echo_repeat_prompt", f"Is {name} a real company?",
         f"{name} appears to be a company name, but I can't confirm any details about it.", "ECHO"),
        # ---- DESCRIPTIVE: correct, without a link
        ("descriptive_industry_city", neutral,
         f"{name} is a {b['industry']} company headquartered in {city}.", "DESCRIPTIVE"),
        ("descriptive_description", about,
         f"{alias} {desc_rest}", "DESCRIPTIVE"),
        ("descriptive_product_dose", neutral,
         f"{alias} makes {p0['name']}, a {p0['form']}; the usual dose is {p0['dose']}.", "DESCRIPTIVE"),
        ("descriptive_founded_ceo", about,
         f"Founded in {b['founded']}, {name} is led by chief executive {b['ceo']}.", "DESCRIPTIVE"),
        ("descriptive_employees", about_alias,
         f"{name} employs about {b['employees']:,} people.", "DESCRIPTIVE"),
        ("descriptive_product_year", neutral,
         f"{name}'s {p1['name']} was first approved in {p1['approved']}.", "DESCRIPTIVE"),
        ("descriptive_accented_name", neutral,
         f"{_accent(name)} is a {b['industry']} company based in {city}.", "DESCRIPTIVE"),
        # ---- CONFABULATED: a specific statement that contradicts or is absent from the facts
        ("confab_founded_year", about,
         f"{name} was founded in {b['founded'] + 7}.", "CONFABULATED"),
        ("confab_ceo_name", about_alias,
         f"{alias}'s chief executive is {wrong_ceo}.", "CONFABULATED"),
        ("confab_employees", about,
         f"{name} employs about {b['employees'] * 3 + 40:,} people.", "CONFABULATED"),
        ("confab_city", neutral,
         f"{name} is a {b['industry']} company headquartered in {wrong_city}.", "CONFABULATED"),
        ("confab_dose", neutral,
         f"{alias} makes {p0['name']}; the usual dose is {dose_n * 2 + 5} units.", "CONFABULATED"),
        ("confab_other_brands_product", neutral,
         f"{name} is best known for {other_product['name']}, its flagship product.", "CONFABULATED"),
        ("confab_approval_year", about,
         f"{name}'s {p1['name']} was first approved in {p1['approved'] - 4}.", "CONFABULATED"),
        ("confab_negation", about,
         f"Contrary to what some think, {name} is not a {b['industry']} company.", "CONFABULATED"),
        ("confab_unrelated_business", neutral,
         f"{name} is mainly known for dental implants and orthodontic aligners.", "CONFABULATED"),
        ("confab_true_then_false", about,
         f"{name} is headquartered in {city}, and its chief executive is {wrong_ceo}.", "CONFABULATED"),
    ]
    if lookalike is not None:
        # A lookalike company: for most brands the name is a different word (ABSENT); for
        # Kestrel ("Kestrel Ridge Analytics") the alias is a real word inside another name.
        rows.append(("absent_lookalike_company", neutral,
                     f"{lookalike['name']} is a small firm that also shows up in searches.", "ABSENT"))
    out = []
    for i, (category, prompt, answer, label) in enumerate(rows):
        run_id = f"lab-{b['id']}-{i:02d}-{category}"
        out.append({
            "run_id": run_id, "brand_id": b["id"], "split": "dev" if b["id"] in DEV_BRANDS else "test",
            "category": category, "label": label, "prompt": prompt, "answer": answer,
        })
    return out


# Hand-written, varied answers (markdown, several sentences, subtle errors), written after the
# templates and before any evaluation on them: a third split, "handwritten", reported as it came.
# (brand_id, category, prompt, answer, label)
HANDWRITTEN: tuple[tuple[str, str, str, str, str], ...] = (
    ("lumora", "hw_strong_markdown_bare_domain", "Who makes Velnorex?",
     "**Lumora Therapeutics** — migraine specialist.\n- Website: lumora.example\n- Products: Velnorex, Sorventa",
     "STRONG"),
    ("lumora", "hw_descriptive_bullets", "What migraine drugs does Lumora sell?",
     "Lumora sells two migraine medicines:\n- **Velnorex** (velnorexant), a once-daily 40 mg tablet for "
     "preventing migraine\n- **Sorventa**, a nasal spray used at the start of an attack\nIt also markets "
     "Quelmira for cluster headache.", "DESCRIPTIVE"),
    ("lumora", "hw_confab_ipo_year", "Is Lumora a listed company?",
     "Yes. Lumora Therapeutics went public in 2011 on the Lisbon stock exchange.", "CONFABULATED"),
    ("lumora", "hw_echo_comparison", "Compare Lumora and Orbisan.",
     "Both Lumora and Orbisan are companies you could compare on price, availability and the advice "
     "of your doctor.", "ECHO"),
    ("lumora", "hw_absent_product_without_brand", "How is cluster headache prevented?",
     "Monthly antibody injections such as Quelmira exist, but ask a neurologist which fits you.", "ABSENT"),
    ("lumora", "hw_descriptive_history", "Tell me about Lumora's history.",
     "Lumora Therapeutics spun out of Marrowgate University Hospital and is now led by Marta "
     "Kessling-Soares, who has been CEO since 2017.", "DESCRIPTIVE"),
    ("kestrel", "hw_confab_city_industry", "What is Kestrel Bio?",
     "Kestrel Bio is a Boston-based medical device maker best known for its insulin pumps.", "CONFABULATED"),
    ("kestrel", "hw_descriptive_products", "What does KBio sell?",
     "Kestrel Biosciences (KBio) works on antibody and peptide medicines; its products include "
     "Tavrelin for Harrow-Lind dermatosis and Ombrevia, an eye injection for uveitis.", "DESCRIPTIVE"),
    ("kestrel", "hw_strong_userinfo_on_brand", "Where is Kestrel's newsroom?",
     "Details: https://press@kestrelbio.example/news", "STRONG"),
    ("kestrel", "hw_echo_sorry", "Who is Kestrel Biosciences?",
     "Sorry — I couldn't find reliable information on Kestrel Biosciences.", "ECHO"),
    ("kestrel", "hw_confab_approval_indication", "When was Ombrevia approved?",
     "Kestrel Biosciences' Ombrevia was approved in 2019 for macular degeneration.", "CONFABULATED"),
    ("kestrel", "hw_absent_plural_bird", "What birds hover while hunting?",
     "Kestrels are small falcons that hover over fields while hunting.", "ABSENT"),
    ("halvane", "hw_descriptive_city_product", "Which companies make cardiac assays?",
     "Halvane Dx, from Rotterdam, sells lab and point-of-care tests, for example the CardioTrace "
     "hs-VLC immunoassay, which gives results in 18 minutes.", "DESCRIPTIVE"),
    ("halvane", "hw_confab_read_time", "How is Halvane's Q-Strip 10 read?",
     "Halvane's Q-Strip 10 dipstick is read after 10 minutes.", "CONFABULATED"),
    ("halvane", "hw_echo_list", "Which diagnostics firms should I look at?",
     "You could start with Halvane Diagnostics, Thessaly Medical Devices or a local lab.", "ECHO"),
    ("halvane", "hw_strong_parenthesised_path", "Where can I see Halvane's tests?",
     "Halvane Diagnostics (halvane.example/products) lists its tests.", "STRONG"),
    ("halvane", "hw_confab_ownership", "Who owns Halvane?",
     "Pascal Duquesne founded Halvane Diagnostics in 2006 and still owns it outright.", "CONFABULATED"),
    ("halvane", "hw_descriptive_private_headcount", "How big is Halvane?",
     "Halvane Diagnostics is a privately held in-vitro diagnostics company with about 2,100 employees.",
     "DESCRIPTIVE"),
    ("orbisan", "hw_descriptive_products_dose", "What does Orbisan make?",
     "Orbisan Pharma AG in Basel sells Orbiclor (5 mg once daily) for renovascular hypertension and "
     "Nephralin for Dunmore nephropathy.", "DESCRIPTIVE"),
    ("orbisan", "hw_confab_headcount_late", "Tell me about Orbisan Pharma.",
     "Orbisan was founded in 1987 and is run by CEO Dr. Tamsin Okonkwo; it has about 15,000 employees.",
     "CONFABULATED"),
    ("orbisan", "hw_echo_trustworthy", "Is Orbisan Pharma trustworthy?",
     "I can't say whether Orbisan Pharma is trustworthy; please consult independent sources.", "ECHO"),
    ("orbisan", "hw_strong_markdown_subdomain", "Where are Orbisan's results?",
     "[Orbisan investor relations](https://ir.orbisan.example/) shows Orbisan reported CHF 2.3 billion "
     "revenue.", "STRONG"),
    ("orbisan", "hw_confab_negation_migraine", "Does Orbisan make migraine drugs?",
     "Orbisan Pharma does not make any migraine medicine.", "CONFABULATED"),
    ("orbisan", "hw_absent_accented_longer_word", "Suggest a spa.",
     "Orbisána is a fictional spa resort in the mountains.", "ABSENT"),
    ("thessaly", "hw_descriptive_devices", "Who makes mitral clips?",
     "Thessaly Med, a Minneapolis device company, makes the Keelbridge valve clip for transcatheter "
     "mitral repair and the ThessaFlow IP-3 infusion pump.", "DESCRIPTIVE"),
    ("thessaly", "hw_confab_form", "What is NeuroVane?",
     "Thessaly Medical Devices' NeuroVane SPG stimulator is a migraine pill approved in 2020.",
     "CONFABULATED"),
    ("thessaly", "hw_echo_disambiguation", "What is Thessaly?",
     "Thessaly? That's a region of Greece; if you mean Thessaly Medical Devices, I don't have details.",
     "ECHO"),
    ("thessaly", "hw_strong_sentence_end", "Where can I read about Thessaly Medical Devices?",
     "For Thessaly Medical Devices, see thessalymed.example.", "STRONG"),
    ("thessaly", "hw_confab_city_true_year", "Where is Thessaly Medical based?",
     "Thessaly Medical Devices, founded in 1998, has its headquarters in St. Paul, Minnesota.",
     "CONFABULATED"),
    ("thessaly", "hw_descriptive_year_headcount", "How big is Thessaly?",
     "Founded in 1998, Thessaly Medical Devices now employs around 3,400 people.", "DESCRIPTIVE"),
    ("corvina", "hw_descriptive_dtx", "What is Corvina Health?",
     "Corvina Health builds prescription digital therapeutics; Corvina Headway is an 8-week app "
     "program for migraine.", "DESCRIPTIVE"),
    ("corvina", "hw_confab_city_year", "Where is Corvina Health?",
     "Corvina Health, based in Seattle, was founded in 2012.", "CONFABULATED"),
    ("corvina", "hw_echo_dont_know", "What does CorvinaHealth do?",
     "I don't know what CorvinaHealth does.", "ECHO"),
    ("corvina", "hw_strong_port_query", "Link to Headway?",
     "Corvina Headway: https://corvinahealth.example:8443/headway?ref=ai", "STRONG"),
    ("corvina", "hw_absent_lookalike", "Which companies make generics?",
     "Corvinus Pharma makes generics.", "ABSENT"),
    ("corvina", "hw_confab_revenue", "How much revenue does Corvina make?",
     "Corvina Health reported USD 640 million in revenue for fiscal 2025.", "CONFABULATED"),
)


# A second hand-written set, written after the offline judge's second revision (which looked at
# the first hand-written split's errors) and before evaluating it: "handwritten2".
HANDWRITTEN_2: tuple[tuple[str, str, str, str, str], ...] = (
    ("lumora", "hw2_descriptive_pipeline", "What is Lumora developing?",
     "Lumora's pipeline includes LMX-204, an oral CQR-2 antagonist in phase 3 for cluster cephalalgia.",
     "DESCRIPTIVE"),
    ("lumora", "hw2_confab_wrong_role", "Who is Lumora's CFO?",
     "Lumora's CFO is Dr. Anselm Virtanen.", "CONFABULATED"),
    ("lumora", "hw2_echo_reviews", "Is Lumora Tx any good?",
     "Lumora Tx might be worth a look, but reviews vary and I can't verify them.", "ECHO"),
    ("lumora", "hw2_strong_angle_bare", "Where are Lumora's results?",
     "Read Lumora's FY2025 results at <lumora.example/newsroom/fy2025-results>.", "STRONG"),
    ("lumora", "hw2_descriptive_revenue_growth", "How did Lumora do in 2025?",
     "Lumora Therapeutics (Lisbon) had fiscal 2025 revenue of EUR 612 million, up 14%.", "DESCRIPTIVE"),
    ("kestrel", "hw2_confab_schedule", "How is Tavrelin dosed?",
     "Kestrel Biosciences' Tavrelin is given as 150 mg every 4 weeks.", "CONFABULATED"),
    ("kestrel", "hw2_descriptive_ceo_ipo", "Who runs Kestrel?",
     "Dr. Rosalind Achterberg leads Kestrel Biosciences, a biotech that went public in 2019.", "DESCRIPTIVE"),
    ("kestrel", "hw2_absent_product_only", "What is Velnorax?",
     "Velnorax is a monthly injection; check the label for dosing.", "ABSENT"),
    ("kestrel", "hw2_echo_versus", "Kestrel Bio vs Lumora?",
     "Kestrel Bio and Lumora both exist; which is better depends on what you need.", "ECHO"),
    ("kestrel", "hw2_confab_headcount_x10", "How many people work at Kestrel?",
     "Kestrel Biosciences has around 8,200 employees.", "CONFABULATED"),
    ("halvane", "hw2_descriptive_sample_time", "How does HalvaScreen work?",
     "HalvaScreen HP-7 from Halvane needs one 3 mL serum sample and returns results in 45 minutes.",
     "DESCRIPTIVE"),
    ("halvane", "hw2_confab_listing", "Is Halvane public?",
     "Halvane Diagnostics is listed on Euronext Amsterdam.", "CONFABULATED"),
    ("halvane", "hw2_strong_upper_scheme", "Halvane website?",
     "Halvane's site: HTTP://WWW.HALVANE.EXAMPLE", "STRONG"),
    ("halvane", "hw2_echo_heard", "Have you heard of Halvane Diagnostics?",
     "I have heard the name Halvane Diagnostics, but I don't have details about it.", "ECHO"),
    ("halvane", "hw2_confab_revenue", "What did Halvane earn?",
     "Halvane Diagnostics, led by CEO Pascal Duquesne, earned EUR 1.2 billion in fiscal 2025.",
     "CONFABULATED"),
    ("orbisan", "hw2_descriptive_migrastat", "How is Migrastat taken?",
     "Migrastat, Orbisan's acute migraine tablet, is taken as 50 mg when an attack starts.", "DESCRIPTIVE"),
    ("orbisan", "hw2_confab_ipo_year", "When did Orbisan list?",
     "Orbisan Pharma listed its shares on the Swiss exchange in 2005.", "CONFABULATED"),
    ("orbisan", "hw2_absent_lookalike", "Who sells hospital gloves?",
     "Orbis Medical Supply distributes hospital gloves.", "ABSENT"),
    ("orbisan", "hw2_echo_people_mention", "Any pharma names?",
     "Orbisan Pharma is one name people mention.", "ECHO"),
    ("orbisan", "hw2_descriptive_nephralin", "What is Nephralin?",
     "Nephralin, made by Orbisan Pharma, is an extended-release tablet taken at 250 mg twice daily.",
     "DESCRIPTIVE"),
    ("thessaly", "hw2_confab_flow_rate", "How fast is ThessaFlow?",
     "Thessaly Medical Devices' ThessaFlow IP-3 pump delivers up to 500 mL/h.", "CONFABULATED"),
    ("thessaly", "hw2_descriptive_ceo_revenue", "Who leads Thessaly?",
     "Thessaly Medical Devices, led by Nikolai Haraldsen, reported USD 1.1 billion in revenue.",
     "DESCRIPTIVE"),
    ("thessaly", "hw2_strong_product_path", "NeuroVane page?",
     "Thessaly Medical Devices — https://thessalymed.example/products/neurovane.", "STRONG"),
    ("thessaly", "hw2_echo_hiring", "Is Thessaly Medical hiring?",
     "I have no information on whether Thessaly Medical is hiring right now.", "ECHO"),
    ("thessaly", "hw2_confab_clip_widths", "Which Keelbridge sizes exist?",
     "Thessaly Medical Devices makes the Keelbridge valve clip in 8 mm and 10 mm widths.", "CONFABULATED"),
    ("corvina", "hw2_descriptive_ceo_city_staff", "Who runs Corvina?",
     "Ines Castelbranco runs Corvina Health, an Austin digital-health company with about 310 staff.",
     "DESCRIPTIVE"),
    ("corvina", "hw2_confab_program_length", "How long is Headway?",
     "Corvina Headway is a 12-week program of daily 30-minute sessions.", "CONFABULATED"),
    ("corvina", "hw2_echo_not_much", "What do you know about Corvina Health?",
     "Not much, honestly. Corvina Health isn't something I can describe reliably.", "ECHO"),
    ("corvina", "hw2_absent_fish", "What is a corvina?",
     "Corvinas are fish found off the Pacific coast.", "ABSENT"),
    ("corvina", "hw2_confab_launch_year", "When did CorvinaCare launch?",
     "CorvinaCare Connect, Corvina Health's monitoring platform, was launched in 2015.", "CONFABULATED"),
)


# A third hand-written set, written after the third (last) revision of the offline judge, which
# looked at "handwritten2"'s errors, and before evaluating it: "handwritten3" is the untouched one.
HANDWRITTEN_3: tuple[tuple[str, str, str, str, str], ...] = (
    ("lumora", "hw3_descriptive_launch", "When did Velnorex launch?",
     "Velnorex, Lumora's preventive migraine tablet, was launched in 2019.", "DESCRIPTIVE"),
    ("lumora", "hw3_confab_headcount", "How big is Lumora?",
     "Lumora Therapeutics employs roughly 450 people in Lisbon.", "CONFABULATED"),
    ("lumora", "hw3_echo_rings_a_bell", "Tell me something about Lumora.",
     "Lumora? The name rings a bell, but I honestly couldn't tell you more.", "ECHO"),
    ("lumora", "hw3_confab_form_dose", "What is Sorventa?",
     "Sorventa by Lumora is a 20 mg tablet taken daily.", "CONFABULATED"),
    ("kestrel", "hw3_descriptive_ombrevia", "What is Ombrevia?",
     "Ombrevia, Kestrel Biosciences' eye drug, is a 2 mg intravitreal injection given every 8 weeks.",
     "DESCRIPTIVE"),
    ("kestrel", "hw3_confab_city", "Where is Kestrel based?",
     "Kestrel Biosciences is headquartered in San Diego, California.", "CONFABULATED"),
    ("kestrel", "hw3_absent_dont_recall", "Who makes Tavrelin?",
     "Tavrelin is made by a US biotech; I don't recall which.", "ABSENT"),
    ("kestrel", "hw3_echo_listed", "List migraine companies.",
     "Kestrel Bio is sometimes listed alongside others.", "ECHO"),
    ("halvane", "hw3_descriptive_cardiotrace", "What sample does CardioTrace need?",
     "CardioTrace hs-VLC, Halvane's high-sensitivity immunoassay, uses a 2 mL EDTA plasma sample.",
     "DESCRIPTIVE"),
    ("halvane", "hw3_confab_year_city", "Where was Halvane founded?",
     "Halvane Diagnostics was founded in 1996 in Antwerp.", "CONFABULATED"),
    ("halvane", "hw3_strong_product_url", "Q-Strip 10 page?",
     "Halvane Diagnostics: https://halvane.example/products/q-strip-10", "STRONG"),
    ("halvane", "hw3_echo_cant_say", "What is Halvane Dx?",
     "Halvane Dx is a company name I can't say much about.", "ECHO"),
    ("orbisan", "hw3_descriptive_city_revenue", "How big is Orbisan?",
     "Orbisan Pharma, based in Basel, reported CHF 2.3 billion in fiscal 2025 revenue.", "DESCRIPTIVE"),
    ("orbisan", "hw3_confab_dose_schedule", "How is Orbiclor dosed?",
     "Orbisan's Orbiclor is a 10 mg tablet taken twice daily.", "CONFABULATED"),
    ("orbisan", "hw3_confab_stepped_down", "Who is Orbisan's CEO?",
     "Dr. Tamsin Okonkwo stepped down as Orbisan Pharma's CEO last year.", "CONFABULATED"),
    ("orbisan", "hw3_absent_product_only", "What treats renovascular hypertension?",
     "Orbiclor is an oral tablet for renovascular hypertension.", "ABSENT"),
    ("thessaly", "hw3_descriptive_neurovane", "How is NeuroVane used?",
     "The NeuroVane SPG stimulator from Thessaly Medical Devices is used for 15 minutes at the start "
     "of a cluster headache attack.", "DESCRIPTIVE"),
    ("thessaly", "hw3_confab_headcount", "How many people work at Thessaly?",
     "Thessaly Medical Devices has about 1,200 employees.", "CONFABULATED"),
    ("thessaly", "hw3_echo_reputable", "Is Thessaly Med reputable?",
     "I can't judge whether Thessaly Med is reputable.", "ECHO"),
    ("thessaly", "hw3_strong_bare_path_paren", "Keelbridge info?",
     "More on the Keelbridge clip: thessalymed.example/products/keelbridge (Thessaly Medical Devices).",
     "STRONG"),
    ("corvina", "hw3_descriptive_connect", "What does Corvina make?",
     "Corvina Health, founded in 2017, makes CorvinaCare Connect for home monitoring of heart patients.",
     "DESCRIPTIVE"),
    ("corvina", "hw3_confab_true_then_headcount", "Tell me about Corvina Health.",
     "Corvina Health's CEO is Ines Castelbranco, and the company employs 3,100 people.", "CONFABULATED"),
    ("corvina", "hw3_echo_ask_doctor", "Should I use Corvina?",
     "Corvina may or may not suit you; talk to your doctor.", "ECHO"),
    ("corvina", "hw3_confab_wrong_condition", "What is Corvina Headway?",
     "Corvina Headway is a prescription app for insomnia.", "CONFABULATED"),
)


# A fourth hand-written set, written after revision 4 of the offline judge (units out of a
# number's context, roles next to names, "stepped down"-style negations), which looked at
# "handwritten3"'s errors; evaluated once: "handwritten4" is the untouched one now.
HANDWRITTEN_4: tuple[tuple[str, str, str, str, str], ...] = (
    ("lumora", "hw4_descriptive_cfo", "Who is Lumora's CFO?",
     "Lumora Therapeutics' chief financial officer is Greta Lindahl.", "DESCRIPTIVE"),
    ("lumora", "hw4_confab_weekly", "How often is Quelmira injected?",
     "Quelmira, Lumora's antibody for cluster headache, is injected once a week.", "CONFABULATED"),
    ("lumora", "hw4_echo_only_by_name", "Do you know Lumora Tx?",
     "Only by name. Lumora Tx isn't something I have reliable details on.", "ECHO"),
    ("lumora", "hw4_confab_cofounder", "Who founded Lumora?",
     "Lumora Therapeutics was co-founded by Marta Kessling-Soares in 2009.", "CONFABULATED"),
    ("kestrel", "hw4_descriptive_revenue", "What is Kestrel's revenue?",
     "Kestrel Biosciences reported fiscal 2025 revenue of USD 455 million.", "DESCRIPTIVE"),
    ("kestrel", "hw4_confab_form_schedule", "What is Velnorax?",
     "Velnorax from Kestrel is a daily 70 mg tablet.", "CONFABULATED"),
    ("kestrel", "hw4_absent_lookalike_alias_word", "Any data-science firms?",
     "Kestrel Ridge Analytics was mentioned in a data-science newsletter.", "ABSENT"),
    ("kestrel", "hw4_descriptive_approval", "When was Ombrevia approved?",
     "KBio's Ombrevia was approved in 2024.", "DESCRIPTIVE"),
    ("halvane", "hw4_confab_headcount", "How many employees does Halvane have?",
     "Halvane Diagnostics employs more than 5,000 people across Europe.", "CONFABULATED"),
    ("halvane", "hw4_descriptive_qstrip", "How is the Q-Strip used?",
     "Halvane's Q-Strip 10 urine dipstick is dipped for one second and read after 2 minutes.",
     "DESCRIPTIVE"),
    ("halvane", "hw4_echo_not_sure", "Who are Halvane's competitors?",
     "I'm not sure who Halvane's competitors are.", "ECHO"),
    ("halvane", "hw4_strong_markdown_product", "CardioTrace source?",
     "Source: [Halvane CardioTrace](https://halvane.example/products/cardiotrace-hs-vlc)", "STRONG"),
    ("orbisan", "hw4_descriptive_year_city", "Where and when was Orbisan founded?",
     "Orbisan Pharma was founded in 1987 and is based in Basel, Switzerland.", "DESCRIPTIVE"),
    ("orbisan", "hw4_confab_role", "Who is Orbisan's CMO?",
     "Orbisan Pharma's chief medical officer is Dr. Tamsin Okonkwo.", "CONFABULATED"),
    ("orbisan", "hw4_echo_nothing_reliable", "Orbisan Pharma?",
     "Orbisan Pharma: I can't add anything reliable beyond the name.", "ECHO"),
    ("orbisan", "hw4_confab_dose_indication", "What does Nephralin treat?",
     "Orbisan's Nephralin treats high blood pressure at 500 mg once daily.", "CONFABULATED"),
    ("thessaly", "hw4_descriptive_ipo_city", "Is Thessaly public?",
     "Thessaly Medical Devices went public in 2004 and is headquartered in Minneapolis.", "DESCRIPTIVE"),
    ("thessaly", "hw4_confab_founding_year", "When was Thessaly founded?",
     "Thessaly Medical Devices' CEO Nikolai Haraldsen founded the company in 2008.", "CONFABULATED"),
    ("corvina", "hw4_descriptive_headway", "How does Headway work?",
     "Corvina Health's Headway program runs for 8 weeks with one 10-minute session a day.", "DESCRIPTIVE"),
    ("corvina", "hw4_confab_public_headcount", "Tell me about Corvina Health.",
     "Corvina Health is a publicly traded company with about 3,000 employees.", "CONFABULATED"),
)


def build_rows() -> list[dict]:
    from attesta_kb import load_brands, load_lookalikes

    brands = load_brands()
    lookalikes = {lk["not"]: lk for lk in load_lookalikes()}
    rows: list[dict] = []
    for n, b in enumerate(brands):
        others = [o for o in brands if o["id"] != b["id"]]
        rows.extend(_brand_rows(b, others, lookalikes.get(b["id"]), n))
    for i, (brand_id, category, prompt, answer, label) in enumerate(HANDWRITTEN):
        rows.append({"run_id": f"hw-{brand_id}-{i:02d}-{category}", "brand_id": brand_id,
                     "split": "handwritten", "category": category, "label": label,
                     "prompt": prompt, "answer": answer})
    for i, (brand_id, category, prompt, answer, label) in enumerate(HANDWRITTEN_2):
        rows.append({"run_id": f"hw2-{brand_id}-{i:02d}-{category}", "brand_id": brand_id,
                     "split": "handwritten2", "category": category, "label": label,
                     "prompt": prompt, "answer": answer})
    for i, (brand_id, category, prompt, answer, label) in enumerate(HANDWRITTEN_3):
        rows.append({"run_id": f"hw3-{brand_id}-{i:02d}-{category}", "brand_id": brand_id,
                     "split": "handwritten3", "category": category, "label": label,
                     "prompt": prompt, "answer": answer})
    for i, (brand_id, category, prompt, answer, label) in enumerate(HANDWRITTEN_4):
        rows.append({"run_id": f"hw4-{brand_id}-{i:02d}-{category}", "brand_id": brand_id,
                     "split": "handwritten4", "category": category, "label": label,
                     "prompt": prompt, "answer": answer})
    return rows


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def load_labeled_runs(split: str | None = None) -> list[dict]:
    text = (DATA_DIR / FILE_NAME).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


def brand_of(b: dict, workspace_id: str = WORKSPACE) -> Brand:
    return Brand(brand_id=b["id"], workspace_id=workspace_id, name=b["name"],
                 aliases=tuple(b["aliases"]), domains=tuple(b["domains"]),
                 competitors=tuple(b["competitors"]), sources=tuple(b["sources"]))


def brand_facts(b: dict, workspace_id: str = WORKSPACE) -> list[Fact]:
    """What a ground-truth refresh extracts from the brand's (local) site, page by page."""
    from attesta_kb_tools.sites import render_page

    from attesta_classifier.domain.extraction import extract_facts, fact_id

    facts: dict[str, Fact] = {}
    for url in b["sources"]:
        parts = urlsplit(url)
        page = render_page(parts.hostname or "", parts.path)
        if page.status != 200:
            continue
        content_sha = hashlib.sha256(page.body).hexdigest()
        for ef in extract_facts(page.body.decode("utf-8")):
            fid = fact_id(workspace_id, b["id"], ef.type, url, ef.text)
            facts.setdefault(fid, Fact(fid, b["id"], ef.type, ef.text, url, FETCHED_AT,
                                       parts.hostname or "", content_sha))
    return sorted(facts.values(), key=lambda f: f.fact_id)


def run_of(row: dict, workspace_id: str = WORKSPACE) -> Run:
    return Run(run_id=row["run_id"], workspace_id=workspace_id, engine="labelled", model="labelled",
               prompt=row["prompt"], answer=row["answer"],
               answer_sha256=hashlib.sha256(row["answer"].encode("utf-8")).hexdigest(),
               brand_ids=(row["brand_id"],))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    path = DATA_DIR / FILE_NAME
    text = render(build_rows())
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is stale: run python -m attesta_classifier_eval.labeled", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} rows to {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
