"""Generated English questions in the styles people use when they do not ask the card's way
(issue #24): training material for the grounding gate and its pair reader, never a measure.

The first generators (``benchmarks/grounding_questions.py``) ask a fact by the card's name in a
plain sentence, optionally wrapped. A reader trained only on those does not recognise a question
that names the card's class instead of its name, asks about two medicines at once, uses everyday
words for the card's terms, sits inside a diary note, rhymes or is a fragment, or spells the name
the way it sounds. Each style below is built from the cards themselves (their class, form, maker,
approval year, body system, interaction sentences) and from word lists written here; no question
set was read to write them.

Every question carries ``style`` ("styled_<kind>"), ``lang`` "en", ``relevant`` (card id -> grade),
``facet`` and, when answerable, ``gold`` (card id -> the card sentence that answers it), the shape
``benchmarks/answer_quality.py`` and ``benchmarks/train_grounding_gate.py`` read. Pure: cards in,
dicts out, seeded.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attesta_kb.text import card_sentences

SEED = 1424
Card = dict[str, Any]
Question = dict[str, Any]

# fact -> (regex a card sentence matches, plain phrasings, everyday phrasings); {n} is the card.
MEDICINE: dict[str, tuple[str, list[str], list[str]]] = {
    "dose": (r"adult dose|recommended dose is|^Dosing: Adults|^Adults (normally )?(take|inject|use)",
             ["what is the usual adult dose of {n}", "how much {n} does an adult take"],
             ["how much of {n} am I meant to have", "how many {n} does a grown-up take each time"]),
    "often": (r"(adult dose|recommended dose is|Adults).*(daily|every \d+ weeks|weekly|monthly)",
              ["how often is {n} taken", "how frequently is {n} given"],
              ["how often do I have to do {n}", "how long between doses of {n}"]),
    "max": (r"maximum|exceed|[Nn]o single",
            ["what is the maximum amount of {n}", "is there an upper limit for {n}"],
            ["how much {n} is too much", "what's the most {n} I'm allowed"]),
    "halflife": (r"half-life",
                 ["what is the half-life of {n}", "how long does {n} last in the body"],
                 ["how long does {n} hang around in my system", "how long till {n} is out of me"]),
    "renal": (r"^Renal impairment:",
              ["does {n} need a dose change in kidney disease"],
              ["my kidneys are not working well, do I get less {n}", "{n} with weak kidneys, same amount or less"]),
    "peds": (r"[Cc]hildren|pediatric",
             ["can children be given {n}"],
             ["can my little one have {n}", "is {n} alright for kids"]),
    "adverse": (r"adverse effects",
                ["what are the common side effects of {n}"],
                ["what nasty effects can {n} have", "will {n} make me feel unwell, and how"]),
    "contra": (r"^Contraindications",
               ["who should not take {n}"],
               ["is there anybody who must stay off {n}", "when is {n} a bad idea"]),
    "indication": (r"is indicated for|It is indicated",
                   ["what is {n} used to treat"],
                   ["what is {n} actually for", "why would a doctor put someone on {n}"]),
    "maker": (r"manufactured by",
              ["which company manufactures {n}", "when was {n} first approved"],
              ["who makes {n}", "how long has {n} been around"]),
}
PROCEDURE: dict[str, tuple[str, list[str], list[str]]] = {
    "duration": (r"typically takes",
                 ["how long does {n} take"], ["how many minutes am I in there for {n}"]),
    "anesthesia": (r"performed under",
                   ["what anesthesia is used for {n}"], ["will they knock me out for {n}"]),
    "fasting": (r"fast for", ["how long must patients fast before {n}"],
                ["when do I have to stop eating before {n}"]),
    "stay": (r"hospital stay|recovery takes", ["how long is the hospital stay after {n}"],
             ["how many nights will I be kept in after {n}", "when will I be back on my feet after {n}"]),
    "success": (r"success", ["what is the success rate of {n}"], ["does {n} usually work"]),
    "complications": (r"complications", ["what are the complications of {n}"],
                      ["what can go wrong during {n}"]),
}
# Facts no card states: (regex that would state it, phrasings); checked against the card's text.
UNSTATED: dict[str, tuple[str, list[str]]] = {
    "price": (r"price|cost", ["how much does {n} cost", "is {n} expensive"]),
    "fridge": (r"fridge|refrigerat|stor", ["does {n} need to be kept in the fridge"]),
    "alcohol": (r"alcohol", ["can I have a glass of wine on {n}"]),
    "driving": (r"driv|machin", ["is it safe to drive after {n}"]),
    "colour": (r"colou?r|shape|taste", ["what colour is {n}"]),
    "box": (r"pack|box|blister", ["how many come in a box of {n}"]),
}
FORM_WORDS = [  # (card wording, everyday words for it)
    (r"subcutaneous injection|prefilled pen", ["jab", "injection pen", "shot"]),
    (r"intravenous infusion", ["drip", "infusion"]),
    (r"tablet", ["pills", "tablets"]), (r"capsule", ["capsules", "pills"]),
    (r"nasal spray", ["nose spray"]), (r"eye drops|ophthalmic", ["eye drops"]),
    (r"cream|gel", ["skin cream", "cream"]), (r"inhal", ["inhaler", "puffer"]),
    (r"oral solution", ["liquid medicine", "syrup"]),
]
SYSTEM_WORDS = {"neuro": "nerve", "cardio": "heart", "hepatic": "liver", "endo": "hormone",
                "renal": "kidney", "eye": "eye", "heme": "blood", "uro": "bladder", "msk": "joint",
                "derm": "skin", "resp": "lung", "gi": "stomach", "ent": "ear", "metab": "metabolism"}
INTERACTION_SENTENCE = r"Combining it with|co-administration|separate doses|levels by"
TOGETHER = ["can I take {n} and {o} together", "is it safe to mix {n} with {o}",
            "{n} plus {o}, anything to watch out for", "do {n} and {o} interact",
            "I'm on {n} and now I've been given {o}, is that a problem",
            "{o} and {n} at the same time, ok or not"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Monday", "Friday", "Wednesday"]
NOTE_FRAMES = ["{d} {t} - {n} appointment. Remember to ask: {q}?",
               "{d}: pick up {n} from the pharmacy. Question for the nurse - {q}?",
               "to do ({d}): [ ] {n} - {q}?", "{d} {t} {n}. note to self, {q}?",
               "diary {d}: started {n} today. {Q}?", "reminder {t}: {n}. {q}??"]
VERSE_FRAMES = ["Oh {n}, oh {n}, I ask you in rhyme: / {q}, if you've got the time?",
                "A little verse about {n}, my friend: / {q}, from start to end?",
                "{n} in the morning, {n} at night, / {q}? I want to get it right.",
                "Here is a poem, short and sweet: / {n}, {q}? / that's my tweet.",
                "{n}... {f}? adults?", "{f} {n}??", "{n} - {f} - ?", "re {n}: {f}, pls"]
FACET_WORDS = {"dose": "dose", "often": "how often", "max": "max per day", "halflife": "half life",
               "renal": "kidneys", "peds": "kids", "adverse": "side effects", "contra": "who can't take",
               "indication": "what for", "maker": "maker", "duration": "how long",
               "anesthesia": "asleep or awake", "fasting": "fasting", "stay": "nights in hospital",
               "success": "success rate", "complications": "risks", "price": "price", "fridge": "fridge",
               "alcohol": "alcohol ok", "driving": "driving", "colour": "colour", "box": "box size"}


@dataclass(frozen=True)
class Fact:
    card: Card
    facet: str
    gold: str
    plain: list[str]
    lay: list[str]


def name_of(card: Card) -> str:
    return str(card["metadata"].get("subject") or card["title"]).split(":")[0].strip()


def facts_of(card: Card) -> list[Fact]:
    """The facts a card states in a fixed place, each with the sentence that states it."""
    kind = card["metadata"]["kind"]
    table = MEDICINE if kind == "medicine" else PROCEDURE if kind == "procedure" else {}
    sents = card_sentences(card["text"])
    out = []
    for facet, (pattern, plain, lay) in table.items():
        gold = next((s for s in sents if re.search(pattern, s)), None)
        if gold is not None:
            out.append(Fact(card, facet, gold, plain, lay))
    return out


def form_words(card: Card) -> list[str]:
    first = card_sentences(card["text"])[0]
    return next((words for pattern, words in FORM_WORDS if re.search(pattern, first)), ["medicine"])


def lay_name(card: Card, r: random.Random) -> str:
    """The card's name with everyday words around it ("the blood jab Merevel")."""
    name = name_of(card)
    if card["metadata"]["kind"] != "medicine":
        return name
    form = r.choice(form_words(card))
    system = SYSTEM_WORDS.get(str(card["metadata"].get("body_system")), "")
    return r.choice([f"the {form} {name}", f"my {system} {form} {name}".replace("  ", " "), f"{name} ({form})"])


def descriptor(card: Card, r: random.Random) -> str | None:
    """The card named by its class and one detail instead of its name, from its own sentences:
    "the platelet glycoprotein-V stabilizer injection from Orbis Medical Supply"."""
    sents = card_sentences(card["text"])
    kind = card["metadata"]["kind"]
    if kind == "procedure":
        m = re.search(r"is an? (.+?) procedure used to treat (.+?)\.$", sents[0])
        took = next((re.search(r"takes (\d+) minutes", s) for s in sents if "takes" in s), None)
        if m is None:
            return None
        details = [f"the {m.group(1)} procedure for {m.group(2)}"]
        if took:
            details.append(f"the {took.group(1)}-minute {m.group(1)} procedure")
        return r.choice(details)
    m = re.search(r"is (?:an?|the brand name of [^,]+, an?) (.+?) (?:supplied|given) as", sents[0])
    if m is None:
        return None
    made = next((re.search(r"manufactured by (.+?) and was first approved in (\d{4})", s) for s in sents
                 if "manufactured by" in s), None)
    use = next((re.search(r"treatment of (.+?) in adults", s) for s in sents if "indicated" in s), None)
    base = f"the {m.group(1)} {r.choice(form_words(card))}"
    extra = [x for x in (made and f" from {made.group(1)}", made and f" approved in {made.group(2)}",
                         use and f" for {use.group(1)}") if x]
    return base + (r.choice(extra) if extra else "")


def sounds_like(name: str, r: random.Random) -> str:
    """``name`` spelled the way it sounds, in syllables with one stressed at random ("Merevel" ->
    "ME-re-vel")."""
    s = name.lower()
    for a, b in (("qu", "kw"), ("ph", "f"), ("x", "ks"), ("ck", "k"), ("y", "i")):
        s = s.replace(a, b)
    s = re.sub(r"c(?=[eiy])", "s", s).replace("c", "k")
    parts = re.findall(r"[^aeiou]*[aeiou]+(?:[^aeiou]+$|[^aeiou](?=[^aeiou]))?", s) or [s]
    sounded = [re.sub(r"(?<=[^aeiou])([aiou])$", lambda m: {"a": "ah", "i": "ee", "o": "oh", "u": "oo"}[m.group(1)], p)
               for p in parts]
    stress = r.randrange(len(sounded))
    return "-".join(p.upper() if i == stress else p for i, p in enumerate(sounded))


def _ask(fact: Fact, name: str, r: random.Random, lay: bool) -> str:
    return r.choice(fact.lay if lay else fact.plain).format(n=name)


def _cap(q: str) -> str:
    return q[:1].upper() + q[1:]


def style_lay(fact: Fact, r: random.Random) -> str | None:
    return _cap(_ask(fact, lay_name(fact.card, r), r, lay=True)) + r.choice(["?", "?", "", " ?"])


def style_category(fact: Fact, r: random.Random) -> str | None:
    desc = descriptor(fact.card, r)
    return None if desc is None else _cap(_ask(fact, desc, r, lay=r.random() < 0.5)) + "?"


def style_note(fact: Fact, r: random.Random) -> str | None:
    name = name_of(fact.card)
    q = _ask(fact, "it", r, lay=r.random() < 0.6)
    when = f"{r.randint(7, 20):02d}:{r.choice(['00', '15', '30', '45'])}"
    return r.choice(NOTE_FRAMES).format(d=r.choice(DAYS), t=when, n=name, q=q, Q=_cap(q))


def style_verse(fact: Fact, r: random.Random) -> str | None:
    name = name_of(fact.card)
    return r.choice(VERSE_FRAMES).format(n=name, q=_ask(fact, "it", r, lay=True), f=FACET_WORDS[fact.facet])


def style_sound(fact: Fact, r: random.Random) -> str | None:
    if not re.fullmatch(r"[A-Za-z]{5,}", name_of(fact.card)):  # one-word names: the medicines'
        return None
    said = sounds_like(name_of(fact.card), r)
    name = r.choice([f"'{said}'", f"{said} (not sure how it's spelled)", f"the one that sounds like {said}"])
    return _cap(_ask(fact, name, r, lay=r.random() < 0.5)) + "?"


STYLES: dict[str, Callable[[Fact, random.Random], str | None]] = {
    "styled_lay": style_lay, "styled_category": style_category, "styled_note": style_note,
    "styled_verse": style_verse, "styled_sound": style_sound}


def interactions(cards: list[Card]) -> list[tuple[Card, Card, str]]:
    """(card, the other medicine's card, the sentence about taking both) for every interaction a
    medicine card states with a medicine named in brackets."""
    by_name = {name_of(c).casefold(): c for c in cards if c["metadata"]["kind"] == "medicine"}
    out = []
    for card in by_name.values():
        for s in card_sentences(card["text"]):
            m = re.search(r"\(([A-Z][A-Za-z]+)\)", s) if re.search(INTERACTION_SENTENCE, s) else None
            other = by_name.get(m.group(1).casefold()) if m else None
            if other is not None:
                out.append((card, other, s))
    return out


def _relevant(cards: list[Card], card: Card) -> dict[str, int]:
    low = name_of(card).casefold()
    rel = {c["card_id"]: 1 for c in cards if low in c["title"].casefold() or low in c["text"].casefold()}
    rel[card["card_id"]] = 2
    return rel


def answerable(cards: list[Card], per_style: int, r: random.Random) -> list[Question]:
    facts = [f for c in cards for f in facts_of(c)]
    out: list[Question] = []
    for style, make in STYLES.items():
        r.shuffle(facts)
        made = 0
        for fact in facts:
            if made >= per_style:
                break
            text = make(fact, r)
            if text is None:
                continue
            rel = {fact.card["card_id"]: 2} if style == "styled_category" else _relevant(cards, fact.card)
            out.append({"style": style, "question": text, "relevant": rel,
                        "gold": {fact.card["card_id"]: fact.gold}, "facet": fact.facet})
            made += 1
    pairs = interactions(cards)
    r.shuffle(pairs)
    for card, other, sentence in pairs[:per_style]:
        rel = {**_relevant(cards, card), other["card_id"]: 1, card["card_id"]: 2}
        text = r.choice(TOGETHER).format(n=name_of(card), o=name_of(other))
        out.append({"style": "styled_interaction", "question": _cap(text) + "?", "relevant": rel,
                    "gold": {card["card_id"]: sentence}, "facet": "interaction"})
    return out


def unanswerable(cards: list[Card], per_style: int, r: random.Random) -> list[Question]:
    """The same styles around facts no card states (price, storage, alcohol...), and two KB
    medicines no card mentions together: what the KB cannot answer, worded the new ways."""
    medicines = [c for c in cards if c["metadata"]["kind"] == "medicine"]
    texts = {c["card_id"]: c["text"] for c in cards}
    out: list[Question] = []
    for style, make in STYLES.items():
        made = tries = 0
        while made < per_style and tries < per_style * 20:
            tries += 1
            card = r.choice(medicines)
            facet, (pattern, phrasings) = r.choice(sorted(UNSTATED.items()))
            if any(re.search(pattern, texts[cid], re.I) for cid in _relevant(cards, card)):
                continue
            text = make(Fact(card, facet, "", phrasings, phrasings), r)
            if text is not None:
                out.append({"style": style, "question": text, "relevant": {}, "facet": f"unstated-{facet}"})
                made += 1
    made = 0
    while made < per_style:
        a, b = r.sample(medicines, 2)
        both = [name_of(a), name_of(b)]
        if any(all(n.casefold() in t.casefold() for n in both) for t in texts.values()):
            continue
        out.append({"style": "styled_interaction", "question": _cap(r.choice(TOGETHER).format(n=both[0], o=both[1])) + "?",
                    "relevant": {}, "facet": "unstated-interaction"})
        made += 1
    return out


def generate(cards: list[Card], per_style: int, unanswerable_per_style: int, seed: int = SEED) -> list[Question]:
    """English questions in the six styles (``per_style`` answerable and ``unanswerable_per_style``
    unanswerable each), ids ``sty-en-NNNN``."""
    r = random.Random(seed)
    made = answerable(cards, per_style, r) + unanswerable(cards, unanswerable_per_style, r)
    return [{**q, "id": f"sty-en-{i:04d}", "lang": "en"} for i, q in enumerate(made)]
