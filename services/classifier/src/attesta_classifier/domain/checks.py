"""Step 2 of the claim-checking judge: small named exact checks of one claim against the facts.

Each check looks at one kind of thing the claim says and answers, for each item it finds,
``supported`` (a fact says the same, in any number form, unit or name), ``contradicted`` (a fact
about the same thing says otherwise) or ``unknown`` (no fact about the same thing), with the
fact id it used:

- ``quantity``: numbers with their units and what they count (pint conversions; babel and
  text2num for the number forms of both languages), each read as the interval it states (an
  exact value, "fewer than 20", "at least 20", "about 20", "between 15 and 20": ``Stated``),
  compared only with facts' numbers about the same concept ("employees", "price", ...) and the
  same product: supported when the fact's value lies in the claim's interval, contradicted
  only when it clearly lies outside, else unknown;
- ``year``: a year and the event it dates (founded, launched, raised ...);
- ``place``: countries, regions and cities under any of their names, under the same relation
  (headquarters, markets, where things are made);
- ``person``: a person's name in a role (CEO, founder ...);
- ``negation``: a statement whose words are a fact's, with the same or the opposite polarity;
- ``name``: a proper name no fact contains (cannot be supported by words alone);
- ``description``: what is left, word by word (stems and lemmas in both languages) — it can
  support a claim, never contradict one.

A check never turns "no fact says this" into "contradicted": that is the model's or a person's
call. The word lists live in ``judge_words.json`` (``lexicon``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from attesta_platform.brandmatch import fold

from . import evidence as ev
from .claims import Claim
from .lexicon import lexicon, patterns, phrase_pattern
from .model import Brand, Fact

SUPPORTED, CONTRADICTED, UNKNOWN = "supported", "contradicted", "unknown"
MIN_COUNT = 2  # "one of them" is not a quantity claim
DESCRIPTION_COVERAGE = 0.8  # share of a longer description's words the facts must contain

_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_CAPWORD = re.compile(r"(?<![\w-])[A-ZÀ-ÖØ-Þ][\w'’-]*")
_PERSON = re.compile(r"(?<![\w-])[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ'’-]+(?:\s+(?:de|da|do|dos|das|van|von|di|le)?\s*"
                     r"[A-ZÀ-ÖØ-Þ][\w'’-]+){1,3}")
_LABEL = re.compile(r"^[^—:]{1,80}\s[—–-]\s([^:]{1,60}):")  # "Brand — number of employees: 72"
# Where a statement's clauses meet (a comma alone does not: "limpo à mão, sem máquinas").
_FACT_CLAUSE = re.compile(r"[;:]\s+|\s*[()]\s*|,?\s+(?:and|but|while|whereas|e|mas|enquanto)\s+|"
                          r",\s+(?=(?:which|who|where|que|onde|o que)\s)", re.IGNORECASE)


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str
    item: str
    fact_id: str | None = None
    detail: str = ""
    # An item the check found a fact for but could place neither inside nor outside what the
    # claim states ("about 20" against 23): undecided for good, no model verdict overrides it.
    final: bool = False


# --------------------------------------------------------------------------- word keys


def words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _TOKEN.findall(text) if not w[:1].isdigit()]


@lru_cache(maxsize=1)
def _synonym_of() -> dict[str, str]:
    """Every written form and lemma (simplemma's, both languages) of a synonym group's words ->
    the group's head: an inflection the list does not spell ("fabricamos", "vendidas") maps
    like the ones it does."""
    out: dict[str, str] = {}
    for head, variants in lexicon().synonyms.items():
        for v in (head, *variants):
            for form in ev.word_forms(v) if " " not in v else (fold(v),):
                out.setdefault(form, head)
    return out


@lru_cache(maxsize=8192)
def keys_of(word: str) -> frozenset[str]:
    folded = fold(word)
    synonyms = _synonym_of()
    head = synonyms.get(folded) or next((synonyms[f] for f in sorted(ev.word_forms(folded)) if f in synonyms), None)
    return ev.lemma_keys(head or folded)


@lru_cache(maxsize=1)
def _ignored() -> frozenset[str]:
    lx, sw = lexicon(), ev.stopwords()
    return frozenset({*sw["en"], *sw["pt"], *lx.vague, *lx.meta, *lx.negators, *lx.negators_es_only,
                      *(w for p in lx.contrast for w in p.split())})


def content_words(text: str, drop: Iterable[str] = ()) -> list[str]:
    """Words that carry meaning: no stop, vague, meta or negation word, none of ``drop``."""
    dropped, ignored = set(drop), _ignored()
    out = []
    for w in words(text):
        f = fold(w)
        base = f.split("'")[0]
        if len(base) > 2 and base not in ignored and f not in ignored and f not in dropped and base not in dropped:
            out.append(w)
    return out


# --------------------------------------------------------------------------- concepts


@lru_cache(maxsize=1)
def _concept_keys() -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    """Per concept: the keys of its single words, and its multi-word phrases (folded)."""
    out = {}
    for concept, entries in lexicon().concepts.items():
        single = frozenset(k for e in entries if " " not in e for k in ev.word_forms(e))
        out[concept] = (single, tuple(e for e in entries if " " in e))
    return out


def concepts_in(folded: str) -> frozenset[str]:
    toks = {k for w in words(folded) for k in ev.word_forms(w)}
    return frozenset(c for c, (single, phrases) in _concept_keys().items()
                     if toks & single or any(p in folded for p in phrases))


def concepts_near(folded: str, start: int, end: int, label: str = "", counted: bool = True) -> frozenset[str]:
    """What a number at [start, end) is about: a structured fact's label; else, for a count, the
    words right after it ("62 lojas"), else before it; for an amount with a unit or a currency,
    the words either side ("custa R$ 39,90", "dois anos de garantia")."""
    if label:
        return concepts_in(label)
    after = concepts_in(" ".join(folded[end:].split()[:3]))
    before = concepts_in(" ".join(folded[:start].split()[-3:]))
    return (after or before) if counted else (before | after)


_YEAR_BOUND = re.compile(r"[.;:!?]\s|\b(?:1[89]|20)\d{2}\b")


def year_concepts(folded: str, start: int, end: int, label: str = "") -> frozenset[str]:
    """The event a year dates: a structured fact's label, else the words of its sentence
    around it, up to ten before and six after, never past another year."""
    if label:
        return concepts_in(label)
    before = _YEAR_BOUND.split(folded[:start])[-1].split()[-10:]
    after = _YEAR_BOUND.split(folded[end:])[0].split()[:6]
    return concepts_in(" ".join([*before, *after]))


# --------------------------------------------------------------------------- stated quantities

EXACT, APPROX, AT_MOST, AT_LEAST, RANGE = "exact", "approx", "at_most", "at_least", "range"
JUST_OVER, JUST_UNDER = "just_over", "just_under"  # "just over 20", "quase 20": a bound, and near it
UP_TO, STARTING_AT = "up_to", "starting_at"  # "up to 60 km", "a partir de R$ 39": a maximum (minimum) reached
_INF = float("inf")


@dataclass(frozen=True)
class Stated:
    """A quantity as the text states it: an interval of values in ``quantity.unit``. ``values``
    is (v,) for an exact value, an approximation or a bound, (low, high) for a range."""

    quantity: ev.Quantity
    kind: str  # exact | approx | at_most | at_least | just_over | just_under | up_to | starting_at | range
    values: tuple[float, ...]
    opens: int = -1  # where the statement starts ("fewer than 20", "entre 15 e 20"); -1: at the number

    @property
    def start(self) -> int:
        return self.opens if self.opens >= 0 else self.quantity.start

    # Read like the quantity itself (its value, for a range the upper end; its unit, its text).
    @property
    def value(self) -> float:
        return self.quantity.value

    @property
    def unit(self) -> str:
        return self.quantity.unit

    @property
    def text(self) -> str:
        return self.quantity.text


@dataclass(frozen=True)
class Comparators:
    before: tuple[tuple[str, str], ...]  # (folded phrase, kind), longest first
    after: tuple[tuple[str, str], ...]  # "20 or more", "20 ou menos"
    range_from: tuple[tuple[str, str], ...]  # "between", "entre", "de"
    range_to: frozenset[str]  # "and", "e", "y", "a", "to" after "between X" / "entre X"
    range_to_alone: frozenset[str]  # "to", "-": a range without an opener ("15 to 20")
    approx: float  # "about X" is consistent within this share of X
    approx_clearly_outside: float  # and contradicted only beyond this one
    conversion: float  # the rounding a unit conversion implies


def _longest_first(pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(set(pairs), key=lambda p: (-len(p[0]), p)))


@lru_cache(maxsize=1)
def comparators() -> Comparators:
    """The comparator words (``lexicon().comparators``: section ``quantity_comparators`` of
    ``judge_words.json``, English, Portuguese and Spanish) by the kind of statement they make."""
    lx = lexicon()
    words_of, tol = lx.comparators, lx.comparator_tolerance
    return Comparators(
        before=_longest_first((w, kind) for kind in (APPROX, AT_MOST, AT_LEAST, JUST_OVER, JUST_UNDER, UP_TO,
                                                     STARTING_AT) for w in words_of[kind]),
        after=_longest_first([*((w, AT_LEAST) for w in words_of["at_least_after"]),
                              *((w, AT_MOST) for w in words_of["at_most_after"])]),
        range_from=_longest_first((w, RANGE) for w in words_of["range_from"]),
        range_to=frozenset(words_of["range_to"]), range_to_alone=frozenset(words_of["range_to_alone"]),
        approx=tol["approx"], approx_clearly_outside=tol["approx_clearly_outside"], conversion=tol["conversion"])


def _glued(a: str, b: str) -> bool:
    """Would ``a`` and ``b`` written side by side make one word ("turnover" is not "over")?"""
    return bool(a) and bool(b) and a[-1].isalnum() and b[0].isalnum()


def _ends_with(before: str, phrases: Sequence[tuple[str, str]]) -> tuple[str, int] | None:
    """The kind of the longest phrase ``before`` (folded) ends with, as whole words, and how
    many characters from the end of ``before`` it starts."""
    b = before.rstrip()
    for p, kind in phrases:
        if b.endswith(p) and not _glued(b[: len(b) - len(p)], p):
            return kind, len(before) - len(b) + len(p)
    return None


def _starts_with(after: str, phrases: Sequence[tuple[str, str]]) -> str | None:
    a = after.lstrip()
    for p, kind in phrases:
        if a.startswith(p) and not _glued(p, a[len(p):]):
            return kind
    return None


_LEADING_WORD = re.compile(r"^[^\W\d_]+[,]?\s+")


def _comparator(text: str, q: ev.Quantity) -> Stated:
    """How one number is stated: a phrase right before it ("fewer than", "cerca de", "hasta"),
    else one right after it or after the word it counts ("20 or more", "20 funcionários ou
    mais"), else exact."""
    cx = comparators()
    before = _ends_with(fold(text[max(0, q.start - 40): q.start]), cx.before)
    if before:
        # Folding keeps the length of the Latin text it reads closely enough to find the phrase.
        return Stated(q, before[0], (q.value,), max(0, q.start - before[1]))
    after = fold(text[q.end: q.end + 40]).lstrip()
    kind = _starts_with(after, cx.after) or _starts_with(_LEADING_WORD.sub("", after, count=1), cx.after)
    return Stated(q, kind or EXACT, (q.value,))


def _range(text: str, a: ev.Quantity, b: ev.Quantity) -> Stated | None:
    """Two numbers that make one range: "between 15 and 20", "entre 15 e 20", "de 4 a 5 kg",
    "from 15 to 20", "15 to 20", "15-20" (the second number's unit is the range's when the first
    has none); None when they are two quantities."""
    if "calendar" in (a.unit, b.unit) or (a.unit != "count" and b.unit != "count" and a.dimension != b.dimension):
        return None
    unit = b.unit if b.unit != "count" else a.unit
    try:
        low = a.value if a.unit in ("count", unit) else ev.convert(a.value, a.unit, unit)
    except ev.Unconvertible:  # two quantities, not a range
        return None
    cx = comparators()
    gap = " ".join(fold(text[a.end: b.start]).split())
    opener = _ends_with(fold(text[max(0, a.start - 30): a.start]), cx.range_from)
    if not low < b.value or not (gap in cx.range_to_alone or (opener and gap in cx.range_to)):
        return None
    q = ev.Quantity(b.value, unit, a.start, b.end, text[a.start: b.end].strip())
    return Stated(q, RANGE, (low, b.value), a.start - opener[1] if opener else -1)


def stated_quantities(text: str, found: Sequence[ev.Quantity]) -> list[Stated]:
    """The quantities ``found`` in ``text`` (through ``numbers_to_digits``), each with the
    interval it states; a range's two numbers become one."""
    out: list[Stated] = []
    i = 0
    while i < len(found):
        pair = _range(text, found[i], found[i + 1]) if i + 1 < len(found) else None
        if pair:
            out.append(pair)
            i += 2
            continue
        out.append(_comparator(text, found[i]))
        i += 1
    return out


# "15-20 staff", "15–20 kg": a dash between two numbers is a range ("15 to 20"); not inside a
# date ("2020-05-01") or a code ("22-123-456"), not between two years ("2019-2021").
_DASH_RANGE = re.compile(r"(?<![\w.,/–—-])(\d+(?:[.,]\d+)?)\s?[-–—]\s?(\d+(?:[.,]\d+)?)(?![\w.,]*\d)(?!\s?[-–—/]\s?\d)")


def _dash_ranges(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if re.fullmatch(r"(?:1[89]|20)\d\d", m.group(1)):
            return m.group(0)
        return f"{m.group(1)} to {m.group(2)}"

    return _DASH_RANGE.sub(sub, text)


def _up(v: float, share: float) -> float:
    """``v`` moved up by ``share`` of its size (down for a negative ``share``): a temperature below
    zero widens like any other value."""
    return v + share * abs(v)


def _span(kind: str, values: Sequence[float], tol: float) -> tuple[float, float]:
    if kind == AT_MOST:
        return -_INF, _up(values[0], tol)
    if kind == AT_LEAST:
        return _up(values[0], -tol), _INF
    return _up(min(values), -tol), _up(max(values), tol)


def _claim_spans(kind: str, values: Sequence[float], conv: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The claim's interval (the fact inside it: consistent) and its outer band (the fact
    outside it: contradicted), in the fact's unit; ``conv`` is the rounding of a conversion."""
    cx = comparators()
    near, far = max(cx.approx, conv), max(cx.approx_clearly_outside, conv)
    v = values[0]
    if kind == APPROX:
        return _span(APPROX, values, near), _span(APPROX, values, far)
    # "just over 40": above 40, by little. Consistent from 40 to the far band above it;
    # contradicted only below 40 by more than an approximation's tolerance ("quase 50" is not
    # refuted by 51); far above it, undecided (how much "just" allows is the reader's call).
    if kind == JUST_OVER:
        return (_up(v, -conv), _up(v, far)), (_up(v, -near), _INF)
    if kind == JUST_UNDER:
        return (_up(v, -far), _up(v, conv)), (-_INF, _up(v, near))
    # "up to 40 hours": the most it reaches is 40; a fact of 30 neither confirms nor refutes it.
    if kind == UP_TO:
        return (_up(v, -conv), _up(v, conv)), (-_INF, _up(v, conv))
    if kind == STARTING_AT:
        return (_up(v, -conv), _up(v, conv)), (_up(v, -conv), _INF)
    inner = _span(kind, values, conv)
    return inner, inner


def _fact_span(kind: str, values: Sequence[float]) -> tuple[float, float]:
    """A fact's own interval: its value (also when it says "about": the fact's rounding widens
    the claim's tolerance instead; and when it says "up to" or "starting at": the value it
    reaches), its bound or its range."""
    if kind in (AT_MOST, JUST_UNDER):
        return -_INF, values[0]
    if kind in (AT_LEAST, JUST_OVER):
        return values[0], _INF
    return (values[0], values[-1]) if kind == RANGE else (values[0], values[0])


def _in_unit(value: float, unit: str, to: str) -> float:
    if value in (_INF, -_INF) or unit == to:
        return value
    return ev.convert(value, unit, to)


_POINTS = (EXACT, APPROX)


def _readings(s: Stated, other: Stated) -> list[tuple[float, ...]]:
    """The values as written and, when both sides state a value (exact or approximate), the
    other reading of a number whose separators mean different things in English and
    Portuguese ("1.290"): matching it takes a coincidence. Not against a bound: "fewer than
    20,000" would hold "90,000" read as 90, "more than 5,000" read as 5 almost any fact."""
    alt = s.quantity.other_reading
    both_points = s.kind in _POINTS and other.kind in _POINTS
    return [s.values, *(((alt,),) if alt is not None and both_points else ())]


def _relation_one(claim: Stated, cvals: tuple[float, ...], fact: Stated, fvals: tuple[float, ...]) -> str:
    unit = fact.quantity.unit
    conv = comparators().conversion if claim.quantity.unit != unit else 0.0
    values = [_in_unit(v, claim.quantity.unit, unit) for v in cvals]
    # An exact claim against a fact that says "about" is read as loosely as the fact.
    kind = APPROX if claim.kind == EXACT and fact.kind == APPROX else claim.kind
    inner, outer = _claim_spans(kind, values, conv)
    low, high = _fact_span(fact.kind, fvals)
    eps = 1e-9 * max(abs(low) if low != -_INF else 0.0, abs(high) if high != _INF else 0.0, 1.0)
    if inner[0] - eps <= low and high <= inner[1] + eps:
        return SUPPORTED
    if high < outer[0] - eps or low > outer[1] + eps:
        return CONTRADICTED
    return UNKNOWN


def relation(claim: Stated, fact: Stated) -> str:
    """Does the fact's value (or its own interval) lie in the claim's interval: ``supported``;
    clearly outside it (beyond the conversion's rounding, or beyond the wider band of an
    approximation): ``contradicted``; neither (near the edge of an "about", a fact that is
    itself a bound the claim's interval overlaps): ``unknown``. Any reading that fits supports;
    only every reading outside contradicts."""
    if claim.quantity.dimension != fact.quantity.dimension:
        return UNKNOWN
    try:
        found = {_relation_one(claim, c, fact, f) for c in _readings(claim, fact) for f in _readings(fact, claim)}
    except ev.Unconvertible:  # an odd pair of units: undecided, never a guess
        return UNKNOWN
    return SUPPORTED if SUPPORTED in found else CONTRADICTED if found == {CONTRADICTED} else UNKNOWN


# --------------------------------------------------------------------------- facts, indexed once


@dataclass(frozen=True)
class Numbers:
    quantities: tuple[tuple[Stated, frozenset[str]], ...]  # with what they are about
    years: tuple[tuple[ev.Quantity, frozenset[str]], ...]  # with the events they date


@dataclass(frozen=True)
class FactView:
    fact: Fact
    folded: str
    products: frozenset[str]  # the brand's product words it names
    numbers: Numbers
    places: tuple[tuple[ev.Place, str | None], ...]  # with their relation to the brand
    people: tuple[tuple[str, frozenset[str]], ...]  # folded name, roles
    clauses: tuple[FactClause, ...]
    keys: frozenset[str]
    denied: frozenset[str]  # keys the fact says only under a negation ("does not use X", "sem X")


@dataclass(frozen=True)
class FactIndex:
    views: tuple[FactView, ...]
    names: frozenset[str]  # folded words of the brand's names
    products: frozenset[str]  # folded product words (see claims.product_words)
    capitalized: frozenset[str]  # folded capitalized words the facts contain
    lang: str
    keys: frozenset[str]  # every fact's word keys
    slogan: re.Pattern[str]  # "<brand name>: <words>"
    place_names: frozenset[str] = frozenset()  # one-word names of the facts' places and countries


def product_words_in(folded: str, products: frozenset[str]) -> frozenset[str]:
    """The product words a text names, also in the possessive ("the Beacon's battery"): which
    facts a claim's numbers are compared with depends on it."""
    return frozenset(w for w in (re.sub(r"'s?$", "", t) for t in words(folded)) if w in products)


def _label(text: str) -> str:
    m = _LABEL.match(text)
    return fold(m.group(1)) if m else ""


def _in_name(text: str, q: ev.Quantity, names: frozenset[str]) -> bool:
    """"Fold 12", "Series 3": a count right after a name (a name word of the brand or its
    products, or a capitalized word inside a sentence) is part of the name."""
    before = text[: q.start].split()
    if q.unit != "count" or not before:
        return False
    word = before[-1]
    inside = len(before) > 1 and before[-2][-1:] not in ".!?:"
    return fold(word) in names or (word[:1].isupper() and word.isalpha() and inside)


_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50}
CENTURY_PART_SCALE = 10  # a decade part's years (0-4, 3-7, 6-9) times ten: a century's thirds


def _roman(numeral: str) -> int:
    values = [_ROMAN[c] for c in numeral]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


@lru_cache(maxsize=1)
def _century_pattern() -> re.Pattern[str]:
    """A century as written in English, Portuguese and Spanish, over folded text, with the part of
    it named ("the late 19th century", "início do século XX", "a finales del siglo XIX"; the
    part words are the decades' ``decade_parts``)."""
    part = "|".join(re.escape(w) for w in sorted({w for ws, _ in lexicon().decade_parts.values() for w in ws},
                                                 key=len, reverse=True))
    en = rf"(?:(?P<pe>{part})[\s-]+(?:the\s+)?)?(?P<ne>\d{{1,2}})(?:st|nd|rd|th)[\s-]+century(?![\w])"
    romance = (rf"(?:(?P<pr>{part})\s+(?:(?:d[aeo]s?|del)\s+)?)?(?:seculo|siglo)\s+"
               rf"(?P<nr>[ivxl]{{1,6}}|\d{{1,2}})(?![\w])")
    return re.compile(rf"(?<![\w'’-])(?:{en}|{romance})")


def centuries(text: str) -> list[ev.Quantity]:
    """Centuries and parts of centuries as spans of years, like decades (``ev.decades``): "the
    19th century" and "o século XIX" are 1800-1899 (the year 1900 neither inside nor outside
    it), "the late 19th century" 1860-1899 within them (since 2026.12.15)."""
    out = []
    parts = lexicon().decade_parts
    for m in _century_pattern().finditer(fold(text)):
        raw = m.group("ne") or m.group("nr")
        number = int(raw) if raw.isdigit() else _roman(raw)
        if not 1 <= number <= 21:
            continue
        first = (number - 1) * 100
        word = m.group("pe") or m.group("pr")
        low, high = next((years for words, years in parts.values() if word in words), (0, 9))
        out.append(ev.Quantity(float(first + low * CENTURY_PART_SCALE), "calendar", m.start(), m.end(),
                               text[m.start(): m.end()], until=float(first + high * CENTURY_PART_SCALE + 9),
                               outer=(float(first), float(first + 100))))
    return out


_YEAR_PREPOSITION = re.compile(r"\b(?:in|em|en|since|desde)\s+$")


def _short_year(q: ev.Quantity, folded: str, label: str) -> ev.Quantity | None:
    """"fundada em 98", "founded in 98": two digits right after a year's preposition, followed by
    no word but a function word, in words that date an event, are that year (since 2026.12.16;
    they were a count, compared with the facts' headcount)."""
    if q.unit != "count" or not re.fullmatch(r"\d{2}", q.text) or not _YEAR_PREPOSITION.search(folded[: q.start]):
        return None
    after = re.findall(r"[^\W\d_]+", folded[q.end: q.end + 20])[:1]
    sw = ev.stopwords()
    if (after and not re.match(r"\s*[,.;:)!?]|\s*$", folded[q.end:]) and after[0] not in sw["en"] | sw["pt"]) \
            or not year_concepts(folded, q.start, q.end, label):
        return None
    year = 2000 + int(q.text)
    year = year if year <= ev.CURRENT_DECADE + 9 else year - 100
    return ev.Quantity(float(year), "calendar", q.start, q.end, q.text)


def numbers(text: str, lang: str, names: frozenset[str], label: str = "") -> Numbers:
    digits = _dash_ranges(ev.numbers_to_digits(text, lang))
    folded = fold(digits)
    spans = centuries(digits)
    found = [_short_year(q, folded, label) or q for q in ev.quantities(digits, lang) if not _in_name(digits, q, names)
             and not any(c.start <= q.start < c.end for c in spans)] + spans
    years = [(q, year_concepts(folded, q.start, q.end, label)) for q in found if q.unit == "calendar"]
    qs = []
    for s in stated_quantities(digits, [q for q in found if q.unit != "calendar"]):
        q = s.quantity
        if s.kind == RANGE or not (q.unit == "count" and q.value < MIN_COUNT):
            # What it is about is read around the whole statement: "pesa pouco mais de 4 kg".
            about = concepts_near(folded, s.start, q.end, label, counted=q.unit == "count")
            # What a temperature measures is a temperature, whatever the words around it say.
            qs.append((s, about | {"temperature"} if q.unit.startswith("degree_") else about))
    return Numbers(tuple(qs), tuple(years))


@lru_cache(maxsize=1)
def _relation_stems() -> tuple[tuple[str, str], ...]:
    return tuple((stem, rel) for rel, stems in lexicon().place_relations.items() for stem in stems)


def relation_before(text: str, place: ev.Place, other_places: Sequence[ev.Place]) -> str | None:
    """The relation word nearest before a place ("based in", "exporta para", "montadas em"),
    looking past stop words, at most two other words and a list of places joined by stop words."""
    sw = ev.stopwords()
    place_words = {fold(w) for p in other_places if p.start < place.start for w in p.text.split()}
    skipped = 0
    later = ""
    for tok in reversed(text[: place.start].split()[-10:]):
        t = fold(tok.strip(",.;:()"))
        if not t:
            continue
        if tok.lower() == "é" and later in ("de", "do", "da"):
            return "hq"  # "é de Garanhuns": where it is from
        later = t
        rel = next((r for stem, r in _relation_stems() if t.startswith(stem)), None)
        if rel:
            return rel
        if t in place_words:
            if skipped:
                return None  # "based in X, just north of Y": Y is a landmark, not the seat
            continue
        if t in sw["en"] or t in sw["pt"]:
            continue
        skipped += 1
        if skipped > 2:
            return None
    return None


# "fundada em 1961 por", "founded in 1990 by": a year between a role verb and its "by"
_DATED_BY = r"\s+(?:in|em|en)\s+\d{4},?\s+(?:by|por|pel[oa])(?![\w'’])"


@lru_cache(maxsize=1)
def _role_patterns() -> dict[str, re.Pattern[str]]:
    out = {}
    for role, phrases in lexicon().roles.items():
        dated = [re.escape(p.rsplit(" ", 1)[0]) for p in phrases if p.endswith((" by", " por"))]
        plain = phrase_pattern(phrases).pattern
        # the verb with a year before its "by" (since 2026.12.16): the founder role was missed
        out[role] = re.compile(plain if not dated else
                               rf"{plain}|(?<![\w'’])(?:{'|'.join(dated)}){_DATED_BY}")
    return out


@lru_cache(maxsize=1)
def _title_patterns() -> dict[str, re.Pattern[str]]:
    verbs = lexicon().role_verbs
    return {role: phrase_pattern(tuple(p for p in phrases if p not in verbs))
            for role, phrases in lexicon().roles.items() if any(p not in verbs for p in phrases)}


_TITLES = frozenset("dr dra mr mrs ms prof sr sra is was e foi its seu sua".split())


def roles_near(folded: str, start: int, end: int, joiners: frozenset[str] = frozenset(),
               titles: bool = False) -> frozenset[str]:
    """The role written right next to a name: before it ("CEO Marcus Feld", "CEO: ...", "led
    by ...", "a CEO da <brand> é ...") or right after it ("..., chief medical officer", "... is
    chief executive officer"), with only stop words, titles and ``joiners`` (the brand's name
    words) between; in a list of people each keeps their own. ``titles``: only a title before
    it ("CEO", not "run by": ``role_verbs``)."""
    sw = ev.stopwords()
    glue = (sw["en"] | sw["pt"] | _TITLES | joiners) - _CONJUNCTIONS

    def only_glue(gap: str, limit: int) -> bool:
        # a role never reaches over a clause's end ("X is the CTO; Y is the chief executive": since
        # 2026.12.16 Y is no CTO)
        return len(gap) <= limit and "\n" not in gap and ";" not in gap and all(
            t in glue for t in re.findall(r"[^\W\d_]+", gap))

    found = set()
    for role, rx in (_title_patterns() if titles else _role_patterns()).items():
        for m in rx.finditer(folded):
            if (m.end() <= start and only_glue(folded[m.end():start], 60)) or (
                    not titles and m.start() >= end and only_glue(folded[end:m.start()], 30)):
                found.add(role)
    return frozenset(found)


_CONJUNCTIONS = frozenset("and or but ou mas nem".split())  # "X and CFO Y": the role is Y's ("e" folds like "é")


def people_and_places(text: str, skip: frozenset[str]) -> tuple[list[tuple[str, frozenset[str], int]], list[ev.Place]]:
    """People (capitalized runs of two to four words, not all of them dictionary words, that
    are no name of ``skip``: the brand, its products), with the roles written next to them, and
    the places named outside them
    ("Dana Okafor" is a person although Dana is a city; "Santa Catarina" is a place)."""
    folded = fold(text)
    found = [p for p in ev.places(text) if not set(fold(p.text).split()) & skip]
    people, spans = [], []
    roles = {w for phrases in lexicon().roles.values() for p in phrases for w in p.split()}
    for m in _PERSON.finditer(text):
        name = fold(m.group(0))
        parts = {re.sub(r"['’]s?$", "", w) for w in name.split()}
        # Words of the dictionary ("Fleet Manager") are a person's name only after a title ("CEO
        # Martin Greaves", "a presidente da X é Marta ..."; not "run by": a company may follow):
        # simplemma's dictionaries hold most first and last names too (since 2026.12.14).
        common = all(ev.is_common_word(w) for w in m.group(0).split())
        if (parts & (skip | roles) or (common and not roles_near(folded, m.start(), m.end(), skip, titles=True))
                or any(p.start <= m.start() and p.start + len(p.text) >= m.end() for p in found)):
            continue  # a brand or product name, words of the dictionary, a place
        people.append((name, roles_near(folded, m.start(), m.end(), skip), m.start()))
        spans.append((m.start(), m.end()))
    places = [p for p in found if not any(a <= p.start < b for a, b in spans)]
    return people, places


def negated(text: str, lang: str, spanish: bool = False) -> bool:
    """Does ``text`` negate? ``spanish``: the sentence reads as Spanish (``ev.is_spanish``), so its
    "no" is "not" (in Portuguese, "in the")."""
    pats = patterns()
    folded = pats["uncertainty"].sub(" ", fold(text))  # "se não me engano" negates nothing
    if lang == "pt":
        return bool(pats["negator_pt"].search(folded) or (spanish and pats["negator_es_only"].search(folded)))
    return bool(pats["negator_en"].search(folded) or pats["negator_contraction"].search(folded))


Polarity = tuple[bool, tuple[frozenset[str], ...]]  # negated?, each content word's keys


@dataclass(frozen=True)
class FactClause:
    """One clause of a fact with its polarity (``whole``). A clause with a negated tail ("A X faz
    pães de fermentação natural, sem conservantes") also keeps its head ("faz pães de fermentação
    natural", affirmative) and the tail: the tail denies only what it names, so a claim that says
    nothing of the tail's words is compared with the head, and one that does with the whole
    clause and the tail (before 2026.12.13 always with the whole, negated clause: a correct
    "faz pães de fermentação natural" was "the opposite of the fact", a false "não faz pães de
    fermentação natural" agreed with it)."""

    whole: Polarity
    tails: tuple[Polarity, ...] = ()
    head: Polarity | None = None

    def readings(self, claim_keys: frozenset[str]) -> tuple[Polarity, ...]:
        if self.head is None:
            return (self.whole,)
        tail_keys = frozenset(k for _, keys in self.tails for word in keys for k in word)
        return (self.whole, *self.tails) if claim_keys & tail_keys else (self.head,)


def _clauses(text: str, drop: frozenset[str], lang: str, spanish: bool = False) -> tuple[FactClause, ...]:
    def polarity(part: str, ws: list[str]) -> Polarity:
        return negated(part, lang, spanish), tuple(keys_of(w) for w in ws)

    out = []
    for c in _FACT_CLAUSE.split(text):
        ws = content_words(c, drop)
        if not ws:
            continue
        head, *tails = [q for q in split_tails(c) if q.strip()] or [c]
        head_ws = content_words(head, drop)
        if not tails or not head_ws:
            out.append(FactClause(polarity(c, ws)))
            continue
        out.append(FactClause(polarity(c, ws), tuple(polarity(t, content_words(t, drop)) for t in tails),
                              polarity(head, head_ws)))
    return tuple(out)


def _view(f: Fact, lang: str, names: frozenset[str], products: frozenset[str]) -> FactView:
    folded = fold(f.text)
    label = _label(f.text)
    found_people, found = people_and_places(f.text, names | products)
    places = tuple((p, relation_before(f.text, p, found)) for p in found)
    people = tuple((n, r) for n, r, _ in found_people)
    drop = names
    spanish = lang == "pt" and ev.is_spanish(f.text, names) is True
    # A word of the brand's name is still a word of the facts ("Cajuína Cosméticos" -> cosmetics).
    keys = frozenset(k for w in content_words(f.text) for k in keys_of(w))
    return FactView(f, folded, product_words_in(folded, products),
                    numbers(f.text, lang, names | products, label), places, people,
                    _clauses(f.text, drop, lang, spanish), keys, _denied(f.text, drop, lang, spanish))


@lru_cache(maxsize=1)
def _negated_tail() -> re.Pattern[str]:
    """Where a negated tail starts (over folded text): after a comma, a negator of the lexicon's
    ``tail`` list ("..., sem X", "..., not X"); with or without a comma, a contrast ("X rather
    than Y", "X em vez de Y", "X en lugar de Y": since 2026.12.14)."""
    lx = lexicon()
    tail = "|".join(re.escape(w) for w in sorted(lx.tail_openers, key=len, reverse=True))
    contrast = "|".join(re.escape(w) for w in sorted(lx.contrast, key=len, reverse=True))
    return re.compile(rf",\s+(?=(?:{tail})\s)|,?\s+(?=(?:{contrast})\s)")


def opens_with_contrast(clause: str) -> bool:
    """Is this clause a contrast tail ("rather than Y ...", "em vez de Y ...")?"""
    folded = fold(clause).lstrip()
    return any(folded.startswith(p + " ") for p in lexicon().contrast)


def split_tails(clause: str) -> list[str]:
    """A clause cut before each negated tail (found in its folded form, which keeps its length
    for the Latin scripts read here; otherwise the clause is kept whole)."""
    folded = fold(clause)
    if len(folded) != len(clause):
        return [clause]
    out, prev = [], 0
    for m in _negated_tail().finditer(folded):
        out.append(clause[prev: m.start()])
        prev = m.end()
    return [*out, clause[prev:]]


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def split_clauses(text: str) -> list[str]:
    """A text's clauses, sentence by sentence, a negated tail ("..., without X") apart."""
    return [q for sentence in _SENTENCE.split(text) for c in _FACT_CLAUSE.split(sentence) if c
            for q in split_tails(c) if q and q.strip()]


def _denied(text: str, drop: frozenset[str], lang: str, spanish: bool = False) -> frozenset[str]:
    """Keys only the fact's negated parts say: "made by hand, without machines" affirms
    nothing about machines, so a claim that they are used finds no support in it."""
    said: dict[bool, set[str]] = {True: set(), False: set()}
    for part in split_clauses(text):
        said[negated(part, lang, spanish)] |= {k for w in content_words(part, drop) for k in keys_of(w)}
    return frozenset(said[True] - said[False])


def index_facts(brand: Brand, facts: Sequence[Fact], products: frozenset[str]) -> FactIndex:
    facts = sorted(facts, key=lambda f: f.fact_id)
    lang = ev.detect_language(" ".join(f.text for f in facts[:60]))
    names = frozenset(w for n in brand.names for w in words(fold(n)))
    views = tuple(_view(f, ev.detect_language(f.text, lang), names, products) for f in facts)
    capitalized = frozenset(fold(m.group(0)) for f in facts for m in _CAPWORD.finditer(f.text))
    slogan = re.compile(r"^\s*(?:" + "|".join(re.escape(n) for n in brand.names) + r")\s*[:—–-]\s+(.+)$", re.IGNORECASE)
    return FactIndex(views, names, products, capitalized, lang,
                     frozenset().union(*(v.keys for v in views)), slogan, _place_names(views))


SLOGAN_MAX_WORDS = 6


def is_slogan(claim: Claim, index: FactIndex, residue: Sequence[str]) -> bool:
    """"Brand: moving the world forward": a few words after the name, none of them the facts'."""
    m = index.slogan.match(claim.sentence)
    return (m is not None and len(words(m.group(1))) <= SLOGAN_MAX_WORDS and not re.search(r"\d", m.group(1))
            and not any(keys_of(w) & index.keys for w in residue))


def is_tagline(claim: Claim, index: FactIndex) -> bool:
    """"Brand — a few words." or "Brand: a few words!": the shape of a slogan (``is_slogan``),
    whatever the words."""
    m = index.slogan.match(claim.sentence)
    return m is not None and len(words(m.group(1))) <= SLOGAN_MAX_WORDS and not re.search(r"\d", m.group(1))


# --------------------------------------------------------------------------- one claim


@dataclass(frozen=True)
class ClaimView:
    claim: Claim
    text: str
    folded: str
    products: frozenset[str]  # the brand's product words it names
    numbers: Numbers
    places: tuple[tuple[ev.Place, str | None], ...]
    people: tuple[tuple[str, frozenset[str], int], ...]
    spanish: bool | None = False  # reads as Spanish (its "no" negates), or either (None: ev.is_spanish)


def view_claim(claim: Claim, index: FactIndex) -> ClaimView:
    text = claim.text
    lang = ev.detect_language(text, index.lang)
    folded = fold(text)
    skip = index.names | index.products
    people, found = people_and_places(text, skip)
    return ClaimView(claim, text, folded, product_words_in(folded, index.products),
                     numbers(text, lang, skip), tuple((p, relation_before(text, p, found)) for p in found),
                     tuple(people), ev.is_spanish(text, skip) if lang == "pt" else False)


def _same_subject(claim: ClaimView, view: FactView) -> bool:
    """A claim about a product is checked against facts about that product; a claim about the
    brand against facts that name no product."""
    return bool(claim.products & view.products) if claim.products else not view.products


def _about_the_same(q: ev.Quantity, concepts: frozenset[str], fact_concepts: frozenset[str]) -> bool:
    """A count or an amount of money means nothing without what it counts: it matches a fact's
    only about the same concept (or when neither says); a weight or a length needs no more than
    not to be about something else."""
    if q.unit == "count" or q.unit.startswith("cur:"):
        return bool(concepts & fact_concepts) or not (concepts or fact_concepts)
    return not (concepts and fact_concepts and not concepts & fact_concepts)


def check_quantities(claim: ClaimView, index: FactIndex) -> list[CheckResult]:
    """Each quantity the claim states, as an interval, against the facts' quantities of the same
    dimension about the same concept and product (``relation``). Contradicted only when a fact
    about the same concept and subject lies clearly outside it and none is near its edge."""
    out = []
    for s, concepts in claim.numbers.quantities:
        q = s.quantity
        item = q.text if s.kind == EXACT else f"{q.text} ({s.kind.replace('_', ' ')})"
        pool = [(v, fs, fc, relation(s, fs)) for v in index.views for fs, fc in v.numbers.quantities
                if fs.quantity.dimension == q.dimension and (not claim.products or claim.products & v.products)]
        # A value matches a fact's by coincidence only; a bound or a range holds many values, so it
        # is held only by a fact about the same thing ("fewer than 20,000 litres" a year is not
        # held by a 500 ml bottle).
        match = next(((v, fs) for v, fs, fc, r in pool if r == SUPPORTED and _about_the_same(q, concepts, fc)
                      and (s.kind in _POINTS or (_same_subject(claim, v) and (concepts & fc or not concepts | fc)))),
                     None)
        if match:
            out.append(CheckResult("quantity", SUPPORTED, q.text, match[0].fact.fact_id,
                                   f"'{item}' holds '{match[1].quantity.text}'"))
            continue
        same = [(v, fs, r) for v, fs, fc, r in pool if concepts & fc and _same_subject(claim, v)]
        rivals = [(v, fs) for v, fs, r in same if r == CONTRADICTED]
        if rivals and len(rivals) == len(same):
            v, fs = rivals[0]
            out.append(CheckResult("quantity", CONTRADICTED, q.text, v.fact.fact_id,
                                   f"'{item}' where the fact gives {fs.quantity.text} ({'/'.join(sorted(concepts))})"))
        elif same:
            out.append(CheckResult("quantity", UNKNOWN, q.text, None,
                                   f"'{item}': the fact's {same[0][1].quantity.text} is not clearly inside or outside",
                                   final=True))
        else:
            out.append(CheckResult("quantity", UNKNOWN, q.text, None,
                                   f"'{item}': no fact gives {'/'.join(sorted(concepts)) or 'this quantity'}"))
    return out


def _years(q: ev.Quantity) -> tuple[tuple[float, float], tuple[float, float]]:
    """The years a year or a decade states, and the widest it can mean (a decade's part: the decade)."""
    inner = (q.value, q.until if q.until is not None else q.value)
    return inner, q.outer or inner


def year_relation(claim: ev.Quantity, fact: ev.Quantity) -> str:
    """A year against a year, either of them possibly a decade or a part of one: supported when
    the fact's years lie in the claim's, contradicted when they lie outside every year the claim
    can mean ("the late 1990s" against 2003 or 1988), else unknown (against 1994)."""
    (clo, chi), (colo, cohi) = _years(claim)
    (flo, fhi), (folo, fohi) = _years(fact)
    if clo <= flo and fhi <= chi:
        return SUPPORTED
    return CONTRADICTED if fohi < colo or folo > cohi else UNKNOWN


def check_years(claim: ClaimView, index: FactIndex) -> list[CheckResult]:
    out = []
    for y, events in claim.numbers.years:
        dated = [(v, fy, fe, year_relation(y, fy)) for v in index.views for fy, fe in v.numbers.years]
        same = [(v, fy) for v, fy, fe, r in dated if r == SUPPORTED and (not events or events & fe)]
        near = [(v, fy) for v, fy, fe, r in dated if r == UNKNOWN and events & fe]
        rivals = [(v, fy) for v, fy, fe, r in dated if events & fe and r == CONTRADICTED]
        if same and not rivals:
            out.append(CheckResult("year", SUPPORTED, y.text, same[0][0].fact.fact_id,
                                   f"year {y.text} ({'/'.join(sorted(events)) or 'named'}) is in the fact"))
        elif near and not same:
            out.append(CheckResult("year", UNKNOWN, y.text, None,
                                   f"year {y.text}: the fact's {near[0][1].text} is not clearly inside or outside"))
        elif rivals and not same:
            v, fy = rivals[0]
            out.append(CheckResult("year", CONTRADICTED, y.text, v.fact.fact_id,
                                   f"year {y.text} where the fact gives {fy.text} ({'/'.join(sorted(events))})"))
        else:
            out.append(CheckResult("year", UNKNOWN, y.text, None, f"year {y.text}: " + (
                "the facts disagree" if same else f"no fact dates this ({'/'.join(sorted(events)) or 'no event'})")))
    return out


def check_places(claim: ClaimView, index: FactIndex) -> list[CheckResult]:
    out = []
    fact_places = [(v, fp, fr) for v in index.views for fp, fr in v.places]
    for p, rel in claim.places:
        same = [(v, fp) for v, fp, fr in fact_places if ev.same_place(p, fp) and (rel is None or fr in (None, rel))]
        # A rival is a place of the same kind, or in another country, under the same relation: a
        # city does not contradict its own state's name.
        rivals = [(v, fp) for v, fp, fr in fact_places if rel is not None and fr == rel
                  and (fp.kind == p.kind or not fp.countries & p.countries)]
        elsewhere = [(v, fp) for v, fp, _ in fact_places if ev.same_place(p, fp)]
        if same or (elsewhere and not rivals):
            v, fp = (same or elsewhere)[0]
            out.append(CheckResult("place", SUPPORTED, p.text, v.fact.fact_id, f"{p.text} ({rel or 'named'}) = {fp.text}"))
        elif rivals:
            out.append(CheckResult("place", CONTRADICTED, p.text, rivals[0][0].fact.fact_id,
                                   f"{p.text} ({rel}) where the facts give {', '.join(fp.text for _, fp in rivals[:4])}"))
        elif rel == "near" and any(p.countries & fp.countries for _, fp, _ in fact_places):
            # "in X, near Y", "just north of Y": a landmark in a country the facts name situates
            # another place; it says nothing about the brand to check.
            out.append(CheckResult("place", "none", p.text, None, f"{p.text}: a landmark (no relation to the brand)"))
        else:
            out.append(CheckResult("place", UNKNOWN, p.text, None, f"{p.text}: no fact places the brand there"))
    return out


def check_people(claim: ClaimView, index: FactIndex) -> list[CheckResult]:
    """People the claim names: a fact's person (also written in lower case) in a role the facts
    give them, or another name in a role the facts give to someone else."""
    out = []
    known = {name: (v, roles) for v in index.views for name, roles in v.people}
    seen: set[str] = set()
    found = list(claim.people)
    found += [(name, roles_near(claim.folded, i, i + len(name), index.names), i) for name in known
              if (i := claim.folded.find(name)) >= 0 and not any(name == n for n, _, _ in found)]
    for name, roles, _ in found:
        seen.add(name)
        match = next((known[k] for k in known if k == name or set(name.split()) >= set(k.split())
                      or set(k.split()) >= set(name.split())), None)
        if match:
            v, fact_roles = match
            # A person of the facts in a role the facts give someone else only ("founded by" their
            # CTO) is contradicted like an unknown name in that role (since 2026.12.15).
            swapped = [(hv, k) for k, (hv, fr) in known.items() if roles & fr
                       and not set(k.split()) & set(name.split())] if fact_roles else []
            # a role the facts do not give them: undecided, as for a name no fact has in that role
            extra = roles - fact_roles if fact_roles else frozenset()
            if roles & fact_roles and extra:
                # "founded by X, who still runs it" where the facts make X only its CEO: the second
                # role is the claim's own; a person decides (since 2026.12.16; it was supported)
                out.append(CheckResult("person", UNKNOWN, name, None,
                                       f"{name}: the facts give {'/'.join(sorted(fact_roles))}, "
                                       f"not {'/'.join(sorted(extra))}", final=True))
            elif not roles or not fact_roles or roles & fact_roles:
                out.append(CheckResult("person", SUPPORTED, name, v.fact.fact_id, f"{name} ({'/'.join(sorted(roles)) or 'named'})"))
            elif swapped:
                out.append(CheckResult("person", CONTRADICTED, name, swapped[0][0].fact.fact_id,
                                       f"{name} as {'/'.join(sorted(roles))} where the facts name {swapped[0][1]}"))
            else:
                out.append(CheckResult("person", UNKNOWN, name, None, f"{name}: the facts give another role"))
            continue
        holders = [(v, k) for k, (v, fr) in known.items() if roles & fr]
        if holders:
            out.append(CheckResult("person", CONTRADICTED, name, holders[0][0].fact.fact_id,
                                   f"{name} as {'/'.join(sorted(roles))} where the facts name {holders[0][1]}"))
        elif roles:
            out.append(CheckResult("person", UNKNOWN, name, None, f"{name}: no fact names a {'/'.join(sorted(roles))}"))
    return out


def check_negation(claim: ClaimView, index: FactIndex) -> list[CheckResult]:
    """A clause whose content words are, all but one, a fact clause's (and the other way round):
    supported when both are affirmative or both negated, contradicted when one negates the
    other ("builds its hulls from fibreglass" against "has never used fibreglass in its hulls")."""
    out = []
    drop = index.names | index.products
    # The claim's clauses are cut like the facts' (a negated tail apart): polarity is per clause.
    for clause in split_clauses(claim.text):
        ws = content_words(clause, drop)
        if len(ws) < 2:
            continue
        lang = ev.detect_language(clause, index.lang)
        # A sentence that reads as Spanish and as Portuguese alike ("X no vende café"): its "no"
        # may negate or not. Both readings are checked; when they disagree, nothing is decided.
        readings = (claim.spanish,) if claim.spanish is not None else (False, True)
        found = {_clause_polarity(clause, [keys_of(w) for w in ws], negated(clause, lang, sp), index)
                 for sp in readings}
        if len(found) > 1:
            item = " ".join(clause.split())
            out.append(CheckResult("negation", UNKNOWN, item, None, "its 'no' reads as Spanish or as Portuguese"))
        elif (result := found.pop()) is not None:
            out.append(result)
    return out


def _clause_polarity(clause: str, ckeys: list[frozenset[str]], neg: bool, index: FactIndex) -> CheckResult | None:
    """One claim clause (its words' keys, negated or not) against every fact clause."""
    union = frozenset().union(*ckeys)
    # "X rather than Y [in Z]": the contrast denies Y; the words after it may still be the
    # claim's affirmed context (Z), so the clause can agree with a fact, never contradict one.
    contrast = opens_with_contrast(clause)
    hits = []
    for v in index.views:
        for fneg, fkeys in (r for fc in v.clauses for r in fc.readings(union)):
            flat = frozenset().union(*fkeys)
            covered = sum(bool(k & flat) for k in ckeys)
            fcovered = sum(bool(k & union) for k in fkeys)
            if (covered >= max(2, len(ckeys) - 1) and fcovered >= max(2, len(fkeys) - 1)
                    and not (contrast and fneg != neg)):
                hits.append((fneg, v))
    if not (neg or any(fneg for fneg, _ in hits)):
        return None  # no negation on either side: the description check's business
    item = " ".join(clause.split())
    denier = None if hits or not neg else _denier(ckeys, index)
    if denier is not None:
        return CheckResult("negation", SUPPORTED, item, denier.fact.fact_id, f"'{item}' denies what the fact denies")
    polarities = {fneg == neg for fneg, _ in hits}
    if len(polarities) == 1:
        agree = polarities.pop()
        return CheckResult("negation", SUPPORTED if agree else CONTRADICTED, item, hits[0][1].fact.fact_id,
                           f"'{item}' {'agrees with' if agree else 'is the opposite of'} the fact")
    return CheckResult("negation", UNKNOWN, item, None,
                       "the facts say both" if hits else "a negated statement no fact states")


def _denier(ckeys: Sequence[frozenset[str]], index: FactIndex) -> FactView | None:
    """A fact that says every word of a negated clause and denies one of them at least ("rather
    than down in its sleeping bags" against "fills its sleeping bags with ..., not down"): a
    short negated tail rarely shares enough words with a fact clause to be compared as a whole."""
    def said(v: FactView) -> int:
        return sum(bool(k & v.keys) for k in ckeys)

    # every word but one ("não usa conservantes" against "..., sem conservantes")
    return next((v for v in index.views if said(v) >= max(1, len(ckeys) - 1) and any(k & v.denied for k in ckeys)),
                None)


def unknown_names(claim: ClaimView, index: FactIndex, consumed: frozenset[str]) -> list[str]:
    """Capitalized words no fact contains (an award, a product, a partner the facts never name);
    a capitalized first word only when it is no dictionary word."""
    lx = lexicon()
    roles = {w for phrases in lx.roles.values() for p in phrases for w in p.split()}
    out = []
    for m in _CAPWORD.finditer(claim.text):
        w = re.sub(r"['’]s?$", "", fold(m.group(0)))
        initial = not claim.text[: m.start()].strip(" \"“(-")
        if (len(w) <= 2 or w in index.names or w in index.products or w in index.capitalized or w in consumed
                or w in roles or w in _ignored() or (initial and ev.is_common_word(w)) or _of_a_place(w, index)):
            continue
        out.append(m.group(0))
    return list(dict.fromkeys(out))


DEMONYM_STEM = 4  # "Scottish"/"Scotland", "Portuguese"/"Portugal", "brasileira"/"Brasil"


def _of_a_place(word: str, index: FactIndex) -> bool:
    """A word made from the name of a place the facts name (a demonym: "Portuguese" for a brand
    the facts place in Portugal) is that place's adjective, not an unknown name; the place
    check has already judged the place itself."""
    stem = word[:DEMONYM_STEM]
    return len(word) > DEMONYM_STEM and any(
        len(name) >= DEMONYM_STEM and name[:DEMONYM_STEM] == stem and name != word
        for name in index.place_names)


def _lower_demonym(word: str, index: FactIndex) -> bool:
    """A lower-case demonym of a place the facts name ("curitibana", "portuguesa", "brasileño"):
    Portuguese and Spanish write them so; the ending (``demonym_endings``) keeps "portas" from
    passing for a word made from "Porto"."""
    return word.endswith(lexicon().demonym_endings) and _of_a_place(word, index)


def _place_names(views: Sequence[FactView]) -> frozenset[str]:
    """The one-word names of the facts' places and of their countries (English, Portuguese): a
    word of a longer name ("Nova", "United") would make too many names look like adjectives."""
    codes = {c for v in views for p, _ in v.places for c in p.countries}
    own = {fold(p.text) for v in views for p, _ in v.places}
    # pycountry's names through evidence's table; a private helper, read-only, on purpose.
    return frozenset(n for n in own | {name for name, code in ev._countries().items() if code in codes}
                     if " " not in n)


def check_description(claim: ClaimView, residue: Sequence[str], index: FactIndex, *, alone: bool) -> list[CheckResult]:
    """What no other check looked at, word by word (stems and lemmas of both languages), in the
    fact about the same subject that says most of it and the one that says most of the rest.
    Supported when every word
    is there (one in five may be missing from a longer description); ``alone`` (no other check
    supported anything in the claim) also needs two words at least: one shared word is chance."""
    # A claim about a product is supported only by what the facts say about that product.
    views = [v for v in index.views if v.products & claim.products] if claim.products else list(index.views)
    if not residue or not views:
        return []
    denying = _denying_words(claim, index)
    # An affirmative word is not supported by what a fact says only to deny it; a word the claim
    # denies next to what it affirms ("em vez de plástico") only by what a fact denies.
    wanted = [(_word_keys(w), None if denying is None else fold(w) in denying) for w in residue]

    def found(v: FactView, item: tuple[tuple[frozenset[str], ...], bool | None]) -> bool:
        keys, deny = item
        said = v.keys if deny is None else v.denied if deny else v.keys - v.denied
        # a word, or every part of a compound ("hand-forged": "forged by hand")
        return bool(keys[0] & said) or (len(keys) > 1 and all(k & said for k in keys[1:]))

    first = min(views, key=lambda v: (-sum(found(v, i) for i in wanted), v.fact.fact_id))
    left = [i for i in wanted if not found(first, i)]
    second = min(views, key=lambda v: (-sum(found(v, i) for i in left), v.fact.fact_id))
    # the fact that says most of it, and the one that says most of the rest
    missing = [w for w, i in zip(residue, wanted, strict=True) if not (found(first, i) or found(second, i))]
    item = " ".join(residue)
    allowed = int(len(residue) * (1 - DESCRIPTION_COVERAGE)) if len(residue) >= 5 else 0
    if len(missing) <= allowed and not (alone and len(residue) - len(missing) < 2):
        return [CheckResult("description", SUPPORTED, item, first.fact.fact_id,
                            f"{len(residue) - len(missing)}/{len(residue)} of its words are in the facts")]
    detail = f"no fact says {', '.join(missing[:5])}" if missing else "too little to check"
    return [CheckResult("description", UNKNOWN, item, None, detail)]


def _word_keys(word: str) -> tuple[frozenset[str], ...]:
    """A word's keys, then, for a lower-case compound ("hand-forged", "cast-iron"), each part's."""
    parts = [p for p in word.split("-") if len(p) > 2 and not p[:1].isdigit()] if word[:1].islower() else []
    return (keys_of(word), *(keys_of(p) for p in parts)) if len(parts) > 1 else (keys_of(word),)


def _denying_words(claim: ClaimView, index: FactIndex) -> frozenset[str] | None:
    """The folded words of a claim's negated clauses when it also affirms something ("usa azeite
    em vez de óleo de girassol": óleo, girassol); None when the claim is wholly negated (then,
    as before 2026.12.14, any fact's words support it: the negation check reads its polarity)."""
    lang = ev.detect_language(claim.text, index.lang)
    parts = [(negated(c, lang, claim.spanish is True), c) for c in split_clauses(claim.text)]
    if not parts or all(n for n, _ in parts):
        return None
    return frozenset(fold(w) for n, c in parts if n for w in words(c))


def _consumed(claim: ClaimView, results: Sequence[CheckResult], index: FactIndex) -> frozenset[str]:
    """Words the specific checks already accounted for: numbers' units and what they count,
    places and their relation words, people and their roles, clauses the negation check read."""
    lx = lexicon()
    # A negated clause no fact states is not accounted for: its names and words are still checked.
    out = {fold(w) for r in results if not (r.check == "negation" and r.status == UNKNOWN) for w in words(r.item)}
    if claim.numbers.quantities or claim.numbers.years:
        out |= {w for w in words(claim.folded) if ev.word_forms(w) & _all_concept_keys()}
        out |= {w for _, phrases in _concept_keys().values() for p in phrases if p in claim.folded for w in p.split()}
        cx = comparators()
        out |= {w for p, _ in (*cx.before, *cx.after, *cx.range_from) for w in p.split()}
        out |= {w for p in (*cx.range_to, *cx.range_to_alone) for w in p.split()}
        # every word of a unit ("square metres", "metros quadrados": since 2026.12.15)
        out |= {w for u in (*lx.units, *lx.currency_suffix) for w in fold(u).split()}
    out |= {w for m in patterns()["uncertainty"].finditer(claim.folded) for w in m.group(0).split()}
    if claim.places:
        out |= {w for w in words(claim.folded) if any(w.startswith(s) for s, _ in _relation_stems())}
    if any(r.check == "person" for r in results):
        out |= {w for phrases in lx.roles.values() for p in phrases for w in p.split()}
    return frozenset(out) | index.names | index.products


# "Coventry, England", "Dundee, na Escócia", "Barcelos (Minho)": the name right after a place is
# the region it lies in, written in whatever language (the place tables know few regions outside
# the facts' language).
_APPOSITION = re.compile(r"\s*[,(]\s*(?:(?:na|no|em|in|on|the|a|o|do|da|de|of)\s+)*"
                         r"([A-ZÀ-ÖØ-Þ][\w'’-]*(?:\s+[A-ZÀ-ÖØ-Þ][\w'’-]*)?)")


def _apposed_regions(claim: ClaimView, results: Sequence[CheckResult]) -> frozenset[str]:
    """Capitalized words in apposition to a place the facts name: the place check has found the
    brand's place, the words after it only situate that place and are no unknown name."""
    found = {r.item for r in results if r.check == "place" and r.status == SUPPORTED}
    out: set[str] = set()
    for p, _ in claim.places:
        m = _APPOSITION.match(claim.text, p.start + len(p.text)) if p.text in found else None
        if m:
            out |= {fold(w) for w in m.group(1).split()}
    return frozenset(out)


@lru_cache(maxsize=1)
def _all_concept_keys() -> frozenset[str]:
    return frozenset().union(*(single for single, _ in _concept_keys().values()))


@dataclass(frozen=True)
class Assessment:
    claim: Claim
    status: str  # supported | contradicted | unknown | none (nothing checkable: a hedge, vague words, names)
    results: tuple[CheckResult, ...]


def assess(claim: Claim, index: FactIndex) -> Assessment:
    """Every exact check on one claim, and what they add up to."""
    if not claim.text.strip():
        return Assessment(claim, "none", ())
    cv = view_claim(claim, index)
    results = [*check_quantities(cv, index), *check_years(cv, index), *check_places(cv, index),
               *check_people(cv, index), *check_negation(cv, index)]
    consumed = _consumed(cv, results, index) | _apposed_regions(cv, results)
    names = unknown_names(cv, index, consumed)
    digits = ev.numbers_to_digits(cv.text, ev.detect_language(cv.text, index.lang))
    residue = [w for w in content_words(digits, consumed | {fold(n) for n in names})
               if (not w[:1].isupper() or fold(w) in index.capitalized) and not _lower_demonym(fold(w), index)]
    if not results and ((not residue and len(names) != 1) or (not names and is_slogan(claim, index, residue))):
        return Assessment(claim, "none", ())  # vague words, a list of other names, a slogan
    if not results and not names and is_tagline(claim, index):
        # "Brand — a few of the facts' words": the brand's own slogan copied (ECHO) or a short
        # description (DESCRIPTIVE); the words cannot tell which (since 2026.12.15): a person's call
        return Assessment(claim, UNKNOWN, (CheckResult("tagline", UNKNOWN, claim.text, None,
                                                       "a tagline after the brand's name: its slogan or a "
                                                       "description", final=True),))
    results += [CheckResult("name", UNKNOWN, n, None, f"'{n}' is in no fact") for n in names]
    results += check_description(cv, residue, index, alone=not any(r.status == SUPPORTED for r in results))
    statuses = {r.status for r in results}
    status = (CONTRADICTED if CONTRADICTED in statuses else UNKNOWN if UNKNOWN in statuses
              else SUPPORTED if SUPPORTED in statuses else "none")
    return Assessment(claim, status, tuple(results))
