"""Words a question writes in a form the cards never use (pure): a name spelled letter by
letter, a number written in words.

People spell a name they cannot say ("V-E-L-N-O-R-E-X", "Z, E, N, N, E, Q, U, I, L", "Z as in
zebra, E, N, ...") and write numbers as words ("forty mg"), while the cards write the
name whole and the number in digits. BM25 matches whole words, so neither form finds its card:
``query_additions`` returns the whole word and the digits, which the sparse side adds to the
question (the question itself is kept, as ``domain.spelling`` does with a slip).

Numbers in words are read by text2num's ``alpha2digit`` (pinned in requirements/), in English
only here: the sparse index is English, and another language's reading can misread an English
word (Spanish "once" is eleven).
"""

from __future__ import annotations

import re

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


def spelled_words(text: str) -> list[str]:
    """The words ``text`` spells letter by letter, joined and lower-cased ("velnorex")."""
    out = []
    for m in _SPELLED.finditer(text):
        letters = re.findall(r"[^\W\d_]", _AS_IN.sub("", m.group(0)))
        word = "".join(letters).casefold()
        if word not in out:
            out.append(word)
    return out


def number_digits(text: str, language: str = "en") -> list[str]:
    """The numbers ``text`` writes in words, as digits ("twenty-five" -> "25"); numbers below
    two stay words (text2num's threshold: "one of them" is not a quantity)."""
    from text_to_num import alpha2digit  # type: ignore[import-untyped]  # loaded on first use

    present = set(_NUMBER.findall(text))
    converted = alpha2digit(text, language, threshold=2)
    # below two is not a quantity, even where alpha2digit reads an article as one
    return [n for n in dict.fromkeys(_NUMBER.findall(converted))
            if n not in present and float(n.replace(",", ".")) >= 2]


def query_additions(question: str) -> list[str]:
    """What the sparse side adds to ``question``: spelled-out words whole, numbers as digits."""
    return [*spelled_words(question), *number_digits(question)]
