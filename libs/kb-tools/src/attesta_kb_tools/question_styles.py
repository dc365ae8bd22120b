"""Generated English questions in the styles people use when they do not ask the card's way
(issue #24): training material for the grounding gate and its pair reader, never a measure.

The first generators (``benchmarks/grounding_questions.py``) ask a fact by the card's name in a
plain sentence, optionally wrapped. A reader trained only on those does not recognise a question
that names the card's class instead of its name, asks about two medicines at once, uses everyday
words for the card's terms, sits inside a diary note, rhymes or is a fragment, or spells the name
the way it sounds, or writes the fact and the class in a clinician's short forms. Each style below is built from the cards themselves (their class, form, maker,
approval year, body system, interaction sentences) and from word lists written here; no question
set was read to write them.

The unanswerable ones are near misses worded the same ways (session #15): a fact no card of the
medicine states, a medicine no card has (an invented name, far from every name of the KB, so that a
misspelled real name is never taught as unknown), and two medicines no card mentions together.

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
from difflib import SequenceMatcher
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
    "pregnancy": (r"pregnan", ["can I take {n} while pregnant", "is {n} safe in pregnancy"]),
    "missed": (r"miss|forg", ["what if I miss a dose of {n}", "I forgot my {n} yesterday, what now"]),
    "grapefruit": (r"grapefruit|juice|food|meal", ["can I have grapefruit juice with {n}",
                                                   "should {n} be taken with food"]),
}
# The clinician's short forms of a fact, for the abbreviation style; {n} is the card.
SHORTHAND: dict[str, list[str]] = {
    "dose": ["{n} adult dose?", "{n} dose in adults, mg?", "usual dose {n} for an adult pt?"],
    "often": ["{n} how often, qd or bid?", "{n} qd or bid or what?", "{n} q how many hrs?"],
    "max": ["{n} max dose/day?", "max {n} per 24h?", "{n} max?"],
    "halflife": ["{n} t1/2?", "t½ of {n}?", "{n} half-life (hrs)?"],
    "renal": ["{n} in CKD - dose adj?", "{n} renal dose adj?", "{n} eGFR<30 dose?"],
    "peds": ["{n} ped dose?", "{n} ok for pts <18 yo?", "{n} in kids, ok?"],
    "adverse": ["{n} SEs?", "common AEs of {n}?", "{n} s/e?"],
    "contra": ["{n} CIs?", "{n} CI list?", "who's CI'd for {n}?"],
    "indication": ["{n} indication?", "{n} used for what dx?", "{n} tx for?"],
    "maker": ["{n} mfr?", "{n} mfr + yr approved?", "{n} mfg by?"],
    "duration": ["{n} duration (min)?", "{n} how many min?"],
    "anesthesia": ["{n} GA or LA?", "{n} under GA?"],
    "fasting": ["{n} NPO how long?", "NPO before {n}?"],
    "stay": ["{n} LOS?", "{n} LOS / recovery?"],
    "success": ["{n} success %?", "{n} success rate?"],
    "complications": ["{n} complications?", "{n} risks/complications?"],
    "price": ["{n} $?", "{n} cost/pack?"], "fridge": ["{n} storage temp?", "{n} fridge y/n?"],
    "alcohol": ["{n} + alc ok?"], "driving": ["{n} + driving ok?"], "colour": ["{n} tab colour?"],
    "box": ["{n} pack size?"], "pregnancy": ["{n} in pregnancy?", "{n} pregnancy cat?"],
    "missed": ["{n} missed dose?"], "grapefruit": ["{n} w/ food?", "{n} + grapefruit?"],
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
               "alcohol": "alcohol ok", "driving": "driving", "colour": "colour", "box": "box size",
               "pregnancy": "pregnant ok", "missed": "missed dose", "grapefruit": "with food"}
# Syllables for invented medicine names (a medicine no card has).
ONSETS = ["b", "br", "d", "dr", "f", "fl", "g", "gr", "k", "kl", "l", "m", "n", "p", "pl", "pr", "r", "s",
          "sk", "st", "t", "tr", "v", "z"]
VOWELS = ["a", "e", "i", "o", "u"]
ENDINGS = ["lin", "dex", "vor", "tane", "rix", "nova", "pril", "sart", "quin", "mire", "zole", "bant"]


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


def class_initials(card: Card) -> str | None:
    """The initials of a medicine's class, the way a chart shortens it ("glomerular complement
    inhibitor" -> "GCI"); none for an invented medicine, whose class is another card's."""
    if card["metadata"]["kind"] != "medicine" or card["metadata"].get("invented"):
        return None
    m = re.search(r"is (?:an?|the brand name of [^,]+, an?) (.+?) (?:supplied|given) as",
                  card_sentences(card["text"])[0])
    words = re.findall(r"[A-Za-z]+", m.group(1)) if m else []
    # two or three words: longer classes make initials nobody would read back
    return "".join(w[0].upper() for w in words) if 2 <= len(words) <= 3 else None


def style_abbrev(fact: Fact, r: random.Random) -> str | None:
    """The fact in short forms ("t1/2", "SEs", "max dose/day"), the name sometimes lower-case
    or with its class's initials after it."""
    name = name_of(fact.card)
    initials = class_initials(fact.card)
    name = r.choice([name, name, name.lower()] + ([f"{name} ({initials})"] if initials else []))
    return r.choice(SHORTHAND[fact.facet]).format(n=name)


STYLES: dict[str, Callable[[Fact, random.Random], str | None]] = {
    "styled_lay": style_lay, "styled_category": style_category, "styled_note": style_note,
    "styled_verse": style_verse, "styled_sound": style_sound, "styled_abbrev": style_abbrev}
# Styles whose question still names the medicine (not its class): the ones an invented name can take.
NAMING_STYLES = [s for s in STYLES if s != "styled_category"]


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


def _unstated(cards: list[Card], per_style: int, r: random.Random) -> list[Question]:
    """Per style, a fact no card of a KB medicine states (price, storage, pregnancy...)."""
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
    return out


def invented_name(cards: list[Card], r: random.Random) -> str:
    """A medicine name no card has and none resembles (similarity below 0.6 to every title word
    of the KB): a misspelled real name must stay answerable, so it is never taught as unknown."""
    known = {w.casefold() for c in cards for w in re.findall(r"[A-Za-z]{4,}", c["title"] + " " + name_of(c))}
    text = " ".join(c["text"] for c in cards).casefold()
    while True:
        name = (r.choice(ONSETS) + r.choice(VOWELS) + r.choice(ONSETS) + r.choice(VOWELS) + r.choice(ENDINGS)).capitalize()
        low = name.casefold()
        if low not in text and all(SequenceMatcher(None, low, k).ratio() < 0.6 for k in known):
            return name


def invented_card(card: Card, name: str) -> Card:
    """``card`` with its name replaced by ``name``: a medicine no card has, with a real card's
    form and facts to ask about (its class is left out of the questions: it would name the card)."""
    old = name_of(card)
    return {**card, "card_id": "none", "title": card["title"].replace(old, name),
            "text": card["text"].replace(old, name),
            "metadata": {**card["metadata"], "subject": name, "invented": True}}


def _unknown(cards: list[Card], per_style: int, r: random.Random) -> list[Question]:
    """Per naming style, a stated kind of fact asked of a medicine no card has; and a KB medicine
    with an invented one, "together"."""
    facts = [f for c in cards if c["metadata"]["kind"] == "medicine" for f in facts_of(c)]
    out: list[Question] = []
    for style in NAMING_STYLES:
        made = 0
        while made < per_style:
            fact = r.choice(facts)
            fake = Fact(invented_card(fact.card, invented_name(cards, r)), fact.facet, "", fact.plain, fact.lay)
            text = STYLES[style](fake, r)
            if text is not None:
                out.append({"style": style, "question": text, "relevant": {}, "facet": f"unknown-{fact.facet}"})
                made += 1
    for _ in range(per_style):
        pair = [name_of(r.choice(facts).card), invented_name(cards, r)]
        r.shuffle(pair)
        out.append({"style": "styled_interaction", "question": _cap(r.choice(TOGETHER).format(n=pair[0], o=pair[1])) + "?",
                    "relevant": {}, "facet": "unknown-interaction"})
    return out


def _never_together(cards: list[Card], count: int, r: random.Random) -> list[Question]:
    """Two KB medicines no card mentions together."""
    medicines = [c for c in cards if c["metadata"]["kind"] == "medicine"]
    texts = [c["text"].casefold() for c in cards]
    out: list[Question] = []
    while len(out) < count:
        both = [name_of(c) for c in r.sample(medicines, 2)]
        if any(all(n.casefold() in t for n in both) for t in texts):
            continue
        out.append({"style": "styled_interaction", "question": _cap(r.choice(TOGETHER).format(n=both[0], o=both[1])) + "?",
                    "relevant": {}, "facet": "unstated-interaction"})
    return out


def unanswerable(cards: list[Card], per_style: int, r: random.Random, unknown_per_style: int = 0) -> list[Question]:
    """What the KB cannot answer, worded the new ways: ``per_style`` facts no card states per
    style and pairs of KB medicines never mentioned together, then ``unknown_per_style``
    questions per naming style about a medicine no card has."""
    return (_unstated(cards, per_style, r) + _never_together(cards, per_style, r)
            + _unknown(cards, unknown_per_style, r))


def generate(cards: list[Card], per_style: int, unanswerable_per_style: int, seed: int = SEED,
             unknown_per_style: int | None = None) -> list[Question]:
    """English questions in the seven styles (``per_style`` answerable and
    ``unanswerable_per_style`` unanswerable each, plus ``unknown_per_style`` about an invented
    medicine per naming style, by default a third of the unanswerable count), ids ``sty-en-NNNN``."""
    r = random.Random(seed)
    unknown = unanswerable_per_style // 3 if unknown_per_style is None else unknown_per_style
    made = answerable(cards, per_style, r) + unanswerable(cards, unanswerable_per_style, r, unknown)
    return [{**q, "id": f"sty-en-{i:04d}", "lang": "en"} for i, q in enumerate(made)]
