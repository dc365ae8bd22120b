"""Generated questions for the grounding gate and the reader (issue #24): training material,
never a measure of quality.

From the KB's cards (``attesta_kb.load_cards``), with a fixed seed:

- **answerable**, in English, Portuguese and Spanish: one question per (card, fact) for facts the
  cards state in fixed places (a medicine's dose, maximum, mechanism, use, side effects,
  contraindications, half-life, kidneys, children, maker, approval; a condition's prevalence,
  symptoms, diagnosis, first-line treatment, outlook; a procedure's duration, success,
  complications, recovery, fasting), each with the card sentence that answers it (``gold``):
  the reader's label;
- **unanswerable**: facts no card of that entity states (prices, storage, alcohol, insurance,
  breastfeeding where the entity's cards never mention it, contagiousness, share prices...),
  real-world medicines and conditions the fictional KB does not have, and product names that
  do not exist ("<a KB medicine> Forte"); each checked against the cards' text.

The phrasings are this file's own, written for it (not the KB generator's templates, not any
held-out file's). Questions carry ``lang``, ``style`` ("generated" / "unanswerable") and
``relevant`` in the format of ``benchmarks/answer_quality.py``.
"""

from __future__ import annotations

import random
import re
from typing import Any

SEED = 24

# fact -> (regex a card sentence matches, {lang: [phrasings]}); {n} is the entity's name.
MEDICINE_FACTS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "dose": (r"^Dosing:|usual adult dose|recommended adult dose|recommended dose is", {
        "en": ["What dose of {n} do adults take?", "how much {n} should an adult take",
               "{n} adult dosing?"],
        "pt": ["Qual é a dose de {n} para adultos?", "quanto {n} um adulto deve tomar",
               "Qual a posologia do {n}?"],
        "es": ["¿Cuál es la dosis de {n} para adultos?", "¿cuánto {n} debe tomar un adulto?"]}),
    "max": (r"maximum recommended dose|should exceed|[Nn]o single", {
        "en": ["What is the most {n} I can take in a day?", "Is there an upper limit for {n}?"],
        "pt": ["Qual é a dose máxima de {n}?", "Existe um limite diário para o {n}?"],
        "es": ["¿Cuál es la dosis máxima de {n}?"]}),
    "mech": (r"^Mechanism:", {
        "en": ["How does {n} act in the body?", "{n} mechanism"],
        "pt": ["Como funciona o {n}?", "Qual é o mecanismo de ação do {n}?"],
        "es": ["¿Cómo funciona {n}?", "¿Cuál es el mecanismo de acción de {n}?"]}),
    "indication": (r"is indicated for|It is indicated", {
        "en": ["What is {n} used for?", "what illness is {n} given for"],
        "pt": ["Para que serve o {n}?", "Para que doença se usa o {n}?"],
        "es": ["¿Para qué sirve {n}?", "¿Para qué enfermedad se usa {n}?"]}),
    "adverse": (r"adverse effects", {
        "en": ["What side effects does {n} have?", "does {n} have side effects"],
        "pt": ["Quais são os efeitos colaterais do {n}?", "O {n} tem efeitos secundários?"],
        "es": ["¿Qué efectos secundarios tiene {n}?", "efectos adversos de {n}"]}),
    "contra": (r"^Contraindications", {
        "en": ["Who should not take {n}?", "When is {n} contraindicated?"],
        "pt": ["Quem não deve tomar {n}?", "Quais são as contraindicações do {n}?"],
        "es": ["¿Quién no debe tomar {n}?", "¿Cuáles son las contraindicaciones de {n}?"]}),
    "halflife": (r"half-life", {
        "en": ["How long does {n} last in the body?", "{n} half life"],
        "pt": ["Qual é a meia-vida do {n}?", "Quanto tempo o {n} fica no corpo?"],
        "es": ["¿Cuál es la vida media de {n}?", "¿Cuánto tiempo dura {n} en el cuerpo?"]}),
    "renal": (r"^Renal impairment:", {
        "en": ["Does {n} need a lower dose for kidney problems?"],
        "pt": ["É preciso ajustar a dose de {n} na doença renal?"],
        "es": ["¿Hay que ajustar la dosis de {n} en la insuficiencia renal?"]}),
    "peds": (r"[Cc]hildren|pediatric", {
        "en": ["Can kids use {n}?", "Is {n} given to children?"],
        "pt": ["Crianças podem usar {n}?", "O {n} pode ser dado a crianças?"],
        "es": ["¿Pueden los niños tomar {n}?"]}),
    "maker": (r"manufactured by|marketed by", {
        "en": ["Who produces {n}?", "which firm is behind {n}"],
        "pt": ["Quem fabrica o {n}?", "Que empresa produz o {n}?"],
        "es": ["¿Qué empresa fabrica {n}?", "¿Quién fabrica {n}?"]}),
    "approval": (r"first approved", {
        "en": ["What year was {n} approved?"],
        "pt": ["Em que ano o {n} foi aprovado?"],
        "es": ["¿En qué año se aprobó {n}?"]}),
}
CONDITION_FACTS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "prevalence": (r"affects about|affects roughly|affects an estimated", {
        "en": ["How common is {n}?", "how many people get {n}"],
        "pt": ["Quão comum é a {n}?", "Quantas pessoas têm {n}?"],
        "es": ["¿Qué tan común es {n}?", "¿Cuántas personas tienen {n}?"]}),
    "symptoms": (r"symptoms include", {
        "en": ["What are the signs of {n}?", "{n} symptoms"],
        "pt": ["Quais são os sintomas de {n}?", "sintomas da {n}"],
        "es": ["¿Cuáles son los síntomas de {n}?"]}),
    "diagnosis": (r"^Diagnosis", {
        "en": ["How do doctors confirm {n}?", "What test diagnoses {n}?"],
        "pt": ["Como se diagnostica a {n}?", "Que exame confirma a {n}?"],
        "es": ["¿Cómo se diagnostica {n}?"]}),
    "treatment": (r"First-line treatment", {
        "en": ["What is the first treatment for {n}?", "best first drug for {n}"],
        "pt": ["Qual é o tratamento de primeira linha da {n}?", "Qual remédio se usa primeiro na {n}?"],
        "es": ["¿Cuál es el tratamiento de primera línea de {n}?"]}),
    "outcome": (r"remission|survival", {
        "en": ["What is the outlook for {n}?", "Do people recover from {n}?"],
        "pt": ["Qual é o prognóstico da {n}?"],
        "es": ["¿Cuál es el pronóstico de {n}?"]}),
}
PROCEDURE_FACTS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "duration": (r"typically takes|performed under", {
        "en": ["How long does {n} take?", "Am I asleep for {n}?"],
        "pt": ["Quanto tempo demora a {n}?", "A {n} é feita com anestesia?"],
        "es": ["¿Cuánto dura {n}?", "¿Se hace {n} con anestesia?"]}),
    "success": (r"success", {
        "en": ["How successful is {n}?", "{n} success rate"],
        "pt": ["Qual é a taxa de sucesso da {n}?"],
        "es": ["¿Cuál es la tasa de éxito de {n}?"]}),
    "complications": (r"complications", {
        "en": ["What can go wrong with {n}?", "risks of {n}"],
        "pt": ["Quais são as complicações da {n}?", "riscos da {n}"],
        "es": ["¿Cuáles son las complicaciones de {n}?"]}),
    "recovery": (r"recovery takes", {
        "en": ["How long is recovery after {n}?"],
        "pt": ["Quanto tempo leva a recuperação depois da {n}?"],
        "es": ["¿Cuánto tarda la recuperación después de {n}?"]}),
    "fasting": (r"fast for", {
        "en": ["Do I need to fast before {n}?"],
        "pt": ["Preciso de jejum antes da {n}?"],
        "es": ["¿Tengo que ayunar antes de {n}?"]}),
}
# Facts no card states: (regex that would state it, {lang: phrasings}); per entity kind.
UNSTATED: dict[str, list[tuple[str, dict[str, list[str]]]]] = {
    "medicine": [
        (r"price|cost", {"en": ["How much does a box of {n} cost?", "{n} price per month"],
                         "pt": ["Quanto custa o {n}?", "preço do {n}"],
                         "es": ["¿Cuánto cuesta {n}?"]}),
        (r"stor|refrigerat|fridge", {"en": ["Should {n} be kept in the fridge?"],
                                     "pt": ["Como devo guardar o {n}?"],
                                     "es": ["¿Cómo se debe guardar {n}?"]}),
        (r"alcohol", {"en": ["Can I drink alcohol while on {n}?"],
                      "pt": ["Posso beber álcool tomando {n}?"],
                      "es": ["¿Puedo beber alcohol si tomo {n}?"]}),
        (r"insur|reimburs", {"en": ["Is {n} covered by insurance?"],
                             "pt": ["O plano de saúde cobre o {n}?"],
                             "es": ["¿El seguro cubre {n}?"]}),
        (r"breast|lactat|nursing|pregnan", {"en": ["Is {n} safe while breastfeeding?"],
                                            "pt": ["Posso usar {n} durante a amamentação?"],
                                            "es": ["¿Puedo usar {n} durante la lactancia?"]}),
        (r"gluten|lactose", {"en": ["Does {n} contain gluten?"],
                             "pt": ["O {n} tem glúten?"], "es": ["¿{n} contiene gluten?"]}),
        (r"driv|machin", {"en": ["Can I drive after taking {n}?"],
                          "pt": ["Posso dirigir depois de tomar {n}?"],
                          "es": ["¿Puedo conducir después de tomar {n}?"]}),
        (r"patients were|participants|enrolled", {
            "en": ["How many patients were in the {n} studies?"],
            "pt": ["Quantos pacientes participaram dos estudos do {n}?"],
            "es": ["¿Cuántos pacientes participaron en los estudios de {n}?"]}),
    ],
    "condition": [
        (r"contagio|infectious|transmi", {"en": ["Is {n} contagious?"],
                                          "pt": ["A {n} é contagiosa?"],
                                          "es": ["¿Es contagiosa la {n}?"]}),
        (r"diet|food", {"en": ["What foods should people with {n} avoid?"],
                        "pt": ["Que alimentos evitar com {n}?"],
                        "es": ["¿Qué alimentos se deben evitar con {n}?"]}),
        (r"vaccin", {"en": ["Is there a vaccine against {n}?"],
                     "pt": ["Existe vacina contra a {n}?"],
                     "es": ["¿Hay una vacuna contra la {n}?"]}),
        (r"ICD", {"en": ["What is the ICD-10 code for {n}?"], "pt": ["Qual é o código CID da {n}?"],
                  "es": ["¿Cuál es el código CIE de {n}?"]}),
    ],
    "procedure": [
        (r"cost|price", {"en": ["How much does {n} cost?"], "pt": ["Quanto custa a {n}?"],
                         "es": ["¿Cuánto cuesta {n}?"]}),
        (r"insur", {"en": ["Does insurance pay for {n}?"], "pt": ["O seguro paga a {n}?"],
                    "es": ["¿El seguro paga {n}?"]}),
        (r"driv", {"en": ["When can I drive after {n}?"],
                   "pt": ["Quando posso dirigir depois da {n}?"],
                   "es": ["¿Cuándo puedo conducir después de {n}?"]}),
    ],
    "brand": [
        (r"share price|stock price", {"en": ["What is {n}'s share price today?"],
                                      "pt": ["Qual é o preço da ação da {n} hoje?"],
                                      "es": ["¿Cuál es el precio de la acción de {n} hoy?"]}),
        (r"phone|telephone", {"en": ["What is {n}'s customer service phone number?"],
                              "pt": ["Qual é o telefone de atendimento da {n}?"],
                              "es": ["¿Cuál es el teléfono de atención de {n}?"]}),
        (r"Tokyo|Japan", {"en": ["Does {n} have an office in Tokyo?"],
                          "pt": ["A {n} tem escritório em Tóquio?"],
                          "es": ["¿Tiene {n} una oficina en Tokio?"]}),
    ],
}
REAL_MEDICINES = ["ibuprofen", "paracetamol", "metformin", "amoxicillin", "atorvastatin",
                  "lisinopril", "omeprazole", "sertraline", "warfarin", "prednisone",
                  "levothyroxine", "azithromycin", "cetirizine", "naproxen", "losartan"]
REAL_CONDITIONS = ["measles", "tuberculosis", "chickenpox", "influenza", "malaria", "asthma",
                   "shingles", "gout", "psoriasis", "appendicitis"]
OUTSIDE = {
    "medicine": {"en": ["What is the usual dose of {n}?", "side effects of {n}", "Who makes {n}?"],
                 "pt": ["Qual é a dose habitual de {n}?", "efeitos colaterais do {n}"],
                 "es": ["¿Cuál es la dosis habitual de {n}?", "efectos secundarios del {n}"]},
    "condition": {"en": ["What are the symptoms of {n}?", "How is {n} treated?"],
                  "pt": ["Quais são os sintomas de {n}?", "Como se trata {n}?"],
                  "es": ["¿Cuáles son los síntomas de {n}?", "¿Cómo se trata {n}?"]},
}
FAKE_SUFFIXES = ["Forte", "Junior", "Duo", "Depot", "Kids", "Max", "Once", "Lite"]
NONEXISTENT = {"en": ["What is the dose of {n}?", "Who makes {n}?", "{n} side effects"],
               "pt": ["Qual é a dose do {n}?", "Quem fabrica o {n}?"],
               "es": ["¿Cuál es la dosis de {n}?", "¿Quién fabrica {n}?"]}


def _name(card: dict[str, Any]) -> str:
    subject = card["metadata"].get("subject") or card["title"]
    return str(subject).split(":")[0].strip()


def _mentions(cards: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    low = name.casefold()
    return [c for c in cards if low in c["title"].casefold() or low in c["text"].casefold()]


def generate(cards: list[dict[str, Any]], per_lang: dict[str, int], unanswerable_per_lang: dict[str, int],
             seed: int = SEED) -> list[dict[str, Any]]:
    """Questions (dicts) in the answer_quality format, plus ``lang``, ``gold`` (answering
    sentence, answerable only) and ``facet``."""
    from attesta_kb.text import card_sentences

    r = random.Random(seed)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for c in cards:
        by_kind.setdefault(c["metadata"]["kind"], []).append(c)
    facts = {"medicine": MEDICINE_FACTS, "condition": CONDITION_FACTS, "procedure": PROCEDURE_FACTS}
    answerable: list[tuple[dict[str, Any], str, str, dict[str, list[str]]]] = []
    for kind, table in facts.items():
        for card in by_kind.get(kind, []):
            sents = card_sentences(card["text"])
            for facet, (pattern, phrasings) in table.items():
                gold = next((s for s in sents if re.search(pattern, s)), None)
                if gold is not None:
                    answerable.append((card, facet, gold, phrasings))
    r.shuffle(answerable)
    out: list[dict[str, Any]] = []
    all_text = " ".join(c["text"] for c in cards).casefold()
    for lang, n in per_lang.items():
        for card, facet, gold, phrasings in answerable[:n]:
            name = _name(card)
            rel = {c["card_id"]: 1 for c in _mentions(cards, name)}
            rel[card["card_id"]] = 2
            q = r.choice(phrasings[lang]).format(n=name)
            out.append({"id": f"gen-{lang}-{len(out):04d}", "style": "generated", "lang": lang,
                        "question": q, "relevant": rel, "gold": {card["card_id"]: gold}, "facet": facet})
        r.shuffle(answerable)
    for lang, n in unanswerable_per_lang.items():
        made: list[dict[str, Any]] = []
        kinds = [k for k in UNSTATED for _ in range(len(by_kind.get(k, [])) // 40 + 1)]
        while len(made) < n * 7 // 10:
            kind = r.choice(kinds)
            card = r.choice(by_kind[kind])
            name = _name(card)
            pattern, phrasings = r.choice(UNSTATED[kind])
            about = _mentions(cards, name)
            if any(re.search(pattern, c["text"], re.I) for c in about) or lang not in phrasings:
                continue
            made.append({"question": r.choice(phrasings[lang]).format(n=name), "facet": f"unstated-{kind}"})
        while len(made) < n * 85 // 100:
            kind = r.choice(["medicine", "condition"])
            name = r.choice(REAL_MEDICINES if kind == "medicine" else REAL_CONDITIONS)
            made.append({"question": r.choice(OUTSIDE[kind][lang]).format(n=name), "facet": "outside_kb"})
        while len(made) < n:
            card = r.choice(by_kind["medicine"])
            fake = f"{_name(card)} {r.choice(FAKE_SUFFIXES)}"
            if fake.casefold() in all_text:
                continue
            made.append({"question": r.choice(NONEXISTENT[lang]).format(n=fake), "facet": "nonexistent"})
        for m in made:
            out.append({"id": f"gen-{lang}-{len(out):04d}", "style": "unanswerable", "lang": lang,
                        "question": m["question"], "relevant": {}, "facet": m["facet"]})
    return out


# ---------------------------------------------------------------- varied wording (H3, #24)
# The first generator asks each fact one short way. Real questions come wrapped: lay words, a
# story around them, hedging, a caregiver asking, no capitals or punctuation. The wrappers below
# restyle generated questions (answerable and not) so that the gate learns from evidence that
# survives the wording, not from the templates' shape. Unanswerable questions "near" the KB are
# added too: availability, pack sizes, looks, comparisons and interactions with real-world
# medicines the fictional KB never names, and made-up product names far from every KB name.
WRAPPERS = {
    "en": ["My mother was just prescribed {n} and the leaflet went in the bin. {q}",
           "I might be wrong about this, but {ql}",
           "Quick question for my dad, he's on {n}: {ql}",
           "{ql_np}",
           "So I've been reading up a lot lately because my doctor mentioned {n} at my last visit "
           "and honestly the internet is confusing, so: {ql}",
           "sorry if this is a silly question, {ql}",
           "asking for a patient at home: {ql}"],
    "pt": ["Minha mãe começou a usar {n} e perdeu a bula. {q}",
           "Posso estar enganado, mas {ql}",
           "Pergunta rápida sobre o meu pai, que usa {n}: {ql}",
           "{ql_np}",
           "Estou lendo muito sobre isso porque o médico falou de {n} na última consulta e a "
           "internet só confunde, então: {ql}"],
    "es": ["A mi madre le recetaron {n} y perdió el prospecto. {q}",
           "Puede que me equivoque, pero {ql}",
           "Una pregunta rápida por mi padre, que toma {n}: {ql}",
           "{ql_np}"],
}
NEAR_KB = {  # (regex that would state it, {lang: phrasings}) for any medicine
    "medicine": [
        (r"pharmac|stock|availab", {"en": ["Which pharmacies stock {n}?", "Is {n} available over the counter?"],
                                    "pt": ["Em que farmácias encontro {n}?", "O {n} é vendido sem receita?"],
                                    "es": ["¿En qué farmacias hay {n}?", "¿Se vende {n} sin receta?"]}),
        (r"pack|box|blister", {"en": ["How many tablets are in a pack of {n}?"],
                               "pt": ["Quantos comprimidos vêm numa caixa de {n}?"],
                               "es": ["¿Cuántas pastillas trae una caja de {n}?"]}),
        (r"colou?r|shape|taste", {"en": ["What colour is the {n} tablet?", "What does {n} taste like?"],
                                  "pt": ["De que cor é o comprimido de {n}?"],
                                  "es": ["¿De qué color es la pastilla de {n}?"]}),
        (r"generic|biosimilar", {"en": ["Is there a cheaper generic of {n}?"],
                                 "pt": ["Existe genérico mais barato do {n}?"],
                                 "es": ["¿Hay un genérico más barato de {n}?"]}),
        (r"grapefruit|coffee|caffeine", {"en": ["Can I have coffee with {n}?"],
                                         "pt": ["Posso tomar café com {n}?"],
                                         "es": ["¿Puedo tomar café con {n}?"]}),
    ],
}
COMPARE_REAL = {"en": ["Is {n} stronger than {r}?", "Can I take {n} together with {r}?",
                       "Should I switch from {r} to {n}?"],
                "pt": ["O {n} é mais forte que o {r}?", "Posso tomar {n} junto com {r}?"],
                "es": ["¿Es {n} más fuerte que el {r}?", "¿Puedo tomar {n} junto con {r}?"]}
SYLLABLES = ["zor", "vel", "tra", "qui", "plen", "dax", "mor", "fen", "lix", "bru", "nov", "tes",
             "gal", "riv", "ost", "kan", "pel", "sul", "dro", "mex"]
ENDINGS = ["ine", "ex", "ol", "ara", "ium", "ax", "one", "ate"]
MADE_UP = {"en": ["What is {n} prescribed for?", "How much {n} can I take?", "{n} side effects?",
                  "Is {n} safe for children?", "who manufactures {n}"],
           "pt": ["Para que serve o {n}?", "Quais os efeitos colaterais do {n}?"],
           "es": ["¿Para qué sirve {n}?", "¿Qué efectos secundarios tiene {n}?"]}


def _lower_first(q: str) -> str:
    return q[:1].lower() + q[1:] if q[:2] != q[:2].upper() else q


def _restyle(q: str, name: str | None, lang: str, r: random.Random) -> tuple[str, str]:
    """``q`` in one of ``WRAPPERS``; those that name a medicine only when ``name`` is one."""
    wrapper = r.choice([w for w in WRAPPERS[lang] if name or "{n}" not in w])
    ql = _lower_first(q)
    ql_np = re.sub(r"[?¿!¡.,:;']", "", q).lower()
    return wrapper.format(n=name, q=q, ql=ql, ql_np=ql_np), "restyled"


def _made_up_name(r: random.Random, kb_words: set[str]) -> str | None:
    from rapidfuzz.distance import OSA

    name = "".join(r.choice(SYLLABLES) for _ in range(r.choice((2, 3)))) + r.choice(ENDINGS)
    if any(OSA.distance(name, w) <= 3 for w in kb_words if abs(len(w) - len(name)) <= 3):
        return None
    return name.capitalize()


def generate_varied(cards: list[dict[str, Any]], per_lang: dict[str, int], unanswerable_per_lang: dict[str, int],
                    seed: int = SEED + 1) -> list[dict[str, Any]]:
    """Restyled answerable questions (``style`` "restyled") and unanswerable ones near the KB
    (``style`` "unanswerable", ``facet`` near_kb / compare_real / made_up / restyled), with ids
    of their own (``var-<lang>-NNNN``)."""
    r = random.Random(seed)
    base = generate(cards, per_lang, {lang: max(1, n // 2) for lang, n in unanswerable_per_lang.items()}, seed)
    names = {c["card_id"]: _name(c) for c in cards}  # only medicines' are used in wrappers
    kb_words = {w for c in cards for w in re.findall(r"[a-z]{5,}", f"{c['title']} {c['text']}".casefold())}
    all_text = " ".join(f"{c['title']} {c['text']}" for c in cards).casefold()
    medicines = [c for c in cards if c["metadata"]["kind"] == "medicine"]
    out: list[dict[str, Any]] = []

    def add(lang: str, q: dict[str, Any], **extra: Any) -> None:
        out.append({**q, **extra, "id": f"var-{lang}-{len(out):04d}", "lang": lang})

    for q in base:
        lang = q["lang"]
        name = None
        if q["relevant"] and q.get("facet") in MEDICINE_FACTS:
            name = names[next(k for k, v in q["relevant"].items() if v == 2)]
        if lang in WRAPPERS:
            text, style = _restyle(q["question"], name, lang, r)
            add(lang, q, question=text, style=style if q["relevant"] else "unanswerable")
    for lang, n in unanswerable_per_lang.items():
        made = 0
        tries = 0
        while made < n and tries < n * 50:
            tries += 1
            kind = r.random()
            card = r.choice(medicines)
            name = _name(card)
            about = _mentions(cards, name)
            if kind < 0.4:
                pattern, phrasings = r.choice(NEAR_KB["medicine"])
                if lang not in phrasings or any(re.search(pattern, c["text"], re.I) for c in about):
                    continue
                text, facet = r.choice(phrasings[lang]).format(n=name), "near_kb"
            elif kind < 0.7:
                real = r.choice(REAL_MEDICINES)
                if real in all_text:
                    continue
                text, facet = r.choice(COMPARE_REAL[lang]).format(n=name, r=real), "compare_real"
            else:
                fake = _made_up_name(r, kb_words)
                if fake is None:
                    continue
                text, facet = r.choice(MADE_UP[lang]).format(n=fake), "made_up"
            if r.random() < 0.3:
                text, _ = _restyle(text, name if facet != "made_up" else None, lang, r)
            add(lang, {"question": text, "relevant": {}, "facet": facet, "style": "unanswerable"})
            made += 1
    return out


# Company cards' facts and everyday wording of medicine facts: the first generator asked none.
BRAND_FACTS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "hq": (r"headquartered", {"en": ["Where is {n} based?", "{n} headquarters", "where's {n} located"],
                              "pt": ["Onde fica a sede da {n}?"], "es": ["¿Dónde tiene su sede {n}?"]}),
    "founded": (r"[Ff]ounded", {"en": ["When was {n} founded?", "how old is {n} as a company"],
                                "pt": ["Quando a {n} foi fundada?"], "es": ["¿Cuándo se fundó {n}?"]}),
    "products": (r"products are|product", {"en": ["What does {n} sell?", "{n} products"],
                                            "pt": ["Que produtos a {n} vende?"], "es": ["¿Qué productos vende {n}?"]}),
    "staff": (r"employs", {"en": ["How many people work at {n}?", "{n} employees"],
                           "pt": ["Quantos funcionários tem a {n}?"], "es": ["¿Cuántos empleados tiene {n}?"]}),
    "ceo": (r"[Cc]hief executive", {"en": ["Who runs {n}?", "who is the boss of {n}", "{n} ceo"],
                                    "pt": ["Quem é o presidente da {n}?"], "es": ["¿Quién dirige {n}?"]}),
    "cfo": (r"chief financial officer", {"en": ["Who is the CFO of {n}?", "who handles the money at {n}"],
                                         "pt": ["Quem é o diretor financeiro da {n}?"],
                                         "es": ["¿Quién es el director financiero de {n}?"]}),
}
LAY_MEDICINE: dict[str, tuple[str, dict[str, list[str]]]] = {
    "form": (r"tablet|capsule|injection|infusion|spray|solution|pen|patch", {
        "en": ["does {n} come as a pill or what?", "is {n} a jab or tablets?", "what does {n} come in"],
        "pt": ["o {n} é comprimido ou injeção?"], "es": ["¿{n} viene en pastillas o inyección?"]}),
    "mech": (r"^Mechanism:|How it works", {
        "en": ["what does {n} actually do in the body?", "how does {n} even work"],
        "pt": ["o que o {n} faz no corpo?"], "es": ["¿qué hace {n} en el cuerpo?"]}),
    "adverse": (r"adverse effects|side effects", {
        "en": ["what should I expect side-effect wise from {n}?", "will {n} make me feel rough?"],
        "pt": ["o {n} dá algum efeito ruim?"], "es": ["¿{n} sienta mal?"]}),
}
KIND_WORD = {"medicine": {"en": "Which medicine"}, "product": {"en": "Which product"},
             "condition": {"en": "Which condition"}, "procedure": {"en": "Which procedure"},
             "brand": {"en": "Which company"}}


def generate_more(cards: list[dict[str, Any]], per_lang: dict[str, int], reverse_en: int,
                  seed: int = SEED + 2) -> list[dict[str, Any]]:
    """Answerable questions of kinds the first generator lacks: company facts and everyday
    wording of medicine facts (``style`` "generated_more"), and English reverse lookups built
    from a card sentence that opens with the card's name ("Velnorex is manufactured by X." ->
    "Which medicine is manufactured by X?", ``style`` "reverse"). Ids ``more-<lang>-NNNN``."""
    from attesta_kb.text import card_sentences

    r = random.Random(seed)
    items: list[tuple[dict[str, Any], str, str, dict[str, list[str]]]] = []
    for card in cards:
        kind = card["metadata"]["kind"]
        table = BRAND_FACTS if kind == "brand" else LAY_MEDICINE if kind in ("medicine", "product") else {}
        sents = card_sentences(card["text"])
        for facet, (pattern, phrasings) in table.items():
            gold = next((s for s in sents if re.search(pattern, s)), None)
            if gold is not None:
                items.append((card, facet, gold, phrasings))
    out: list[dict[str, Any]] = []
    for lang, n in per_lang.items():
        r.shuffle(items)
        for card, facet, gold, phrasings in items[:n]:
            name = _name(card)
            rel = {c["card_id"]: 1 for c in _mentions(cards, name)}
            rel[card["card_id"]] = 2
            out.append({"id": f"more-{lang}-{len(out):04d}", "style": "generated_more", "lang": lang,
                        "question": r.choice(phrasings[lang]).format(n=name), "relevant": rel,
                        "gold": {card["card_id"]: gold}, "facet": facet})
    reverse: list[dict[str, Any]] = []
    shuffled = list(cards)
    r.shuffle(shuffled)
    for card in shuffled:
        if len(reverse) >= reverse_en:
            break
        name = _name(card)
        for s in card_sentences(card["text"])[1:]:
            m = re.match(rf"{re.escape(name)}(?: \([^)]*\))? (is|has|was|makes|builds|employs|uses|takes) (.+)\.$", s)
            if m is None or len(m.group(2).split()) < 4:
                continue
            question = f"{KIND_WORD[card['metadata']['kind']]['en']} {m.group(1)} {m.group(2)}?"
            # Every card the description fits answers it: those that state the same words.
            rel = {c["card_id"]: 2 for c in cards if m.group(2).casefold() in c["text"].casefold()}
            rel[card["card_id"]] = 2
            reverse.append({"id": f"more-en-r{len(reverse):04d}", "style": "reverse", "lang": "en",
                            "question": question, "relevant": rel, "gold": {card["card_id"]: s},
                            "facet": "reverse"})
            break
    return out + reverse
