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
