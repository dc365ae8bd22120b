"""Text rules shared by the generators and reconciliation (pure).

``normalise`` is the comparison form used to decide whether a cited span occurs in a card:

1. Unicode NFKC (full-width letters, ligatures, non-breaking spaces, "…" become plain forms);
2. invisible format characters removed (zero-width space/joiners, word joiner, BOM, soft
   hyphen, bidi controls): they change bytes, not what a reader sees;
3. every quote-like character becomes ``"`` (curly, low-9, guillemets, primes, backtick,
   apostrophe), every dash/hyphen/minus becomes ``-``;
4. Unicode case folding (``str.casefold``: "ß" matches "ss");
5. every run of whitespace (any Unicode space, tab, newline) becomes one space; ends trimmed.

Spans are additionally trimmed of surrounding quotes and sentence punctuation (models add or
drop a final full stop), see ``normalise_span``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Protocol

from attesta_kb.text import card_sentences

_INVISIBLE = dict.fromkeys(
    map(ord, "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
             "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"),
    None,
)
_QUOTES = "\"'`\u00ab\u00bb\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u2032\u2033\u2035\u2036\u2039\u203a\u300c\u300d\uff02\uff07"
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"
_FOLD = str.maketrans({**{c: '"' for c in _QUOTES}, **{c: "-" for c in _DASHES}})
_SPACE = re.compile(r"\s+")
_SPAN_EDGES = " \"-.,;:!?()[]"

WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")


# What no store downstream can keep: U+0000 (PostgreSQL text refuses it) and UTF-16 surrogates
# (no UTF-8 form: a lone one cannot even be serialized). Every other character is storable.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` without the characters a run could never be stored with (see ``_UNSTORABLE``),
    so a question or an answer that carries one cannot poison the services that store runs."""
    return _UNSTORABLE.sub("", text)


def strip_invisible(text: str) -> str:
    return text.translate(_INVISIBLE)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE).translate(_FOLD)
    return _SPACE.sub(" ", text.casefold()).strip()


def normalise_span(span: str) -> str:
    return normalise(span).strip(_SPAN_EDGES)


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` exactly as they appear in it (the KB's one splitter, shared with
    retrieval's sentence evidence)."""
    return card_sentences(text)


def words(text: str) -> list[str]:
    return WORD.findall(text.casefold())


# Words that say nothing about what is asked or stated (English function words, and question
# padding people add: "usually", "doctor said", "kind of").
STOP_WORDS = frozenset("""a about above after again against all am an and any are aren't as at be
because been before being below between both but by can can't cannot could couldn't did didn't
do does doesn't doing don't down during each few for from further had hadn't has hasn't have
haven't having he her here hers herself him himself his how i i'm if in into is isn't it it's
its itself just let's me more most my myself no nor not of off on once only or other ought our
ours ourselves out over own same she should shouldn't so some such than that that's the their
theirs them themselves then there there's these they this those through to too under until up
very was wasn't we were weren't what what's when where which while who whom why will with won't
would wouldn't you your yours yourself yourselves tell know please usually usual normally normal
typical typically generally thing things always mix mixed get got also really doctor doctors
mentioned mention heard said told want need like main exactly okay ok opposed compared regular
someone people person kind sort type share proportion percent percentage reach chance likely
""".split())


class _Stemmer(Protocol):
    """PyStemmer's Stemmer (the package has no type hints)."""

    def stemWord(self, word: str) -> str: ...


@lru_cache(maxsize=1)
def _stemmer() -> _Stemmer:
    import Stemmer  # PyStemmer (Snowball); imported on first use, not at import time

    stemmer: _Stemmer = Stemmer.Stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


def content_terms(text: str) -> list[str]:
    """The Snowball stems of ``text``'s words, stop words and one-letter words dropped."""
    return [stem(w) for w in words(text) if w not in STOP_WORDS and len(w) > 1]
