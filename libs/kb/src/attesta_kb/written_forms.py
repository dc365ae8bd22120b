"""Words a question writes in a form the cards never use (pure), read as the cards write them:
a name spelled letter by letter ("V-E-L-N-O-R-E-X", "Z as in zebra, E, N, ...") is the name,
a number written in words ("forty mg") is its digits.

One rule for both services: retrieval adds the whole name and the digits to its sparse query
(BM25 matches whole words) and embeds and reranks the question with the name joined; the
answer service's gate and pair reader read the question as ``as_asked`` gives it. Numbers in
words are read by text2num's ``alpha2digit`` (pinned in requirements/) in the question's
language where it has a grammar (en, pt, es), else English.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache

# One letter, optionally with the word it is spelled by (the phone alphabet: "as in" or "for",
# Portuguese "de" / "como em", Spanish "de" / "como en"); at least four in a row, each
# time with the same separator, so "a I", an initial ("J. R.") or "8 a.m. U.S.A." is not read
# as a spelled word.
_BY_WORD = r"\s+(?:as\s+in|for|de|como\s+em|como\s+en)\s+[^\W\d_]+"
_LETTER = rf"(?<![^\W\d_])[^\W\d_](?:{_BY_WORD})?"
_SPELLED = re.compile(rf"{_LETTER}(?P<sep>\s*[-.,/]\s*|\s+){_LETTER}(?:(?P=sep){_LETTER}){{2,}}(?![^\W\d_])",
                      re.IGNORECASE)
_AS_IN = re.compile(_BY_WORD, re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NUMBER_LANGUAGES = frozenset({"en", "pt", "es"})


def _letters(match: re.Match[str]) -> str:
    return "".join(re.findall(r"[^\W\d_]", _AS_IN.sub("", match.group(0))))


def spelled_words(text: str) -> list[str]:
    """The words ``text`` spells letter by letter, joined and lower-cased ("velnorex")."""
    return list(dict.fromkeys(_letters(m).casefold() for m in _SPELLED.finditer(text)))


def join_spelled(text: str) -> str:
    """``text`` with every name spelled letter by letter written whole ("Velnorex")."""
    return _SPELLED.sub(lambda m: _letters(m).capitalize(), text)


# An ordinal as alpha2digit writes it: "2º", "3ª", "20th".
_ORDINAL = re.compile(r"\d+(?:º|ª|st|nd|rd|th)")


def _no_quantity(token: str) -> bool:
    """A number below two, or an ordinal: words the cards write as words."""
    digits = token.strip(".,;:!?¿¡()\"'")
    return (digits.isdigit() and int(digits) < 2) or _ORDINAL.fullmatch(digits) is not None


def _keep_small_words(before: str, after: str) -> str:
    """``after`` with every word it turned into a number below two or an ordinal given back:
    alpha2digit (text2num 3.1, one threshold for both) reads Spanish "unas tres semanas"
    ("about three weeks") as "1 3 semanas" and Portuguese "segundo" ("according to") as "2º";
    an article is not a quantity, and the cards write ordinals in
    words ("third trimester")."""
    a, b = before.split(" "), after.split(" ")
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal" or not any(_no_quantity(t) for t in b[j1:j2]):
            out += b[j1:j2]
        elif i2 - i1 == j2 - j1:  # word for word: only the small ones go back
            out += [old if _no_quantity(new) else new for old, new in zip(a[i1:i2], b[j1:j2], strict=True)]
        else:
            out += a[i1:i2]
    return " ".join(out)


@lru_cache(maxsize=1024)
def as_asked(question: str, language: str | None = None) -> str:
    """``question`` with spelled-out names joined ("Velnorex") and numbers in words as digits
    (below two they stay words: "one of them" is not a quantity; so do ordinals); otherwise
    unchanged."""
    # loaded on first use: no work at import time (a compiled extension with its own start-up)
    from text_to_num import alpha2digit  # type: ignore[import-untyped]

    joined = join_spelled(question)
    lang = (language or "en").split("-")[0].casefold()
    converted = alpha2digit(joined, lang if lang in _NUMBER_LANGUAGES else "en", threshold=2)
    return joined if converted == joined else _keep_small_words(joined, converted)


def number_digits(text: str, language: str = "en") -> list[str]:
    """The numbers ``text`` writes in words, as digits ("twenty-five" -> "25"), new ones only."""
    present = set(_NUMBER.findall(text))
    return [n for n in dict.fromkeys(_NUMBER.findall(as_asked(text, language))) if n not in present]


def query_additions(question: str) -> list[str]:
    """What a sparse query adds to ``question``: spelled-out words whole, numbers as digits.
    English only: the sparse index is English, and another language's reading can misread an
    English word (Spanish "once" is eleven)."""
    return [*spelled_words(question), *number_digits(question)]
