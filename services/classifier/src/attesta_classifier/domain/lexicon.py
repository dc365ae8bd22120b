"""The claim-checking judge's word lists: one versioned data file (``judge_words.json``), read
once on first use (never at import) and folded (accents and case removed) for matching."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from attesta_platform.brandmatch import fold

WORDS_FILE = "judge_words.json"


def _folded(items: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(fold(str(w)) for w in items))


def _both(section: dict[str, Any]) -> tuple[str, ...]:
    return _folded([*section.get("en", ()), *section.get("pt", ()), *section.get("es", ()), *section.get("all", ())])


def _groups(section: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    return {k: _folded(v) for k, v in section.items() if k != "about"}


def _keyed(mapping: dict[str, Any]) -> dict[str, Any]:
    """Keys as written (lower case) and folded, so both "milhão" and "milhao" are found."""
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        if k != "about":
            out[k.lower()] = v
            out[fold(k)] = v
    return out


def phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-word alternation of folded phrases, longest first (for folded text)."""
    alts = sorted(phrases, key=len, reverse=True)
    return re.compile(r"(?<![\w'’])(?:" + "|".join(re.escape(p) for p in alts) + r")(?![\w'’])")


@dataclass(frozen=True)
class Lexicon:
    version: str
    stopwords: dict[str, frozenset[str]]
    hedges: tuple[str, ...]
    uncertainty: tuple[str, ...]
    negators: tuple[str, ...]
    negators_by_lang: dict[str, tuple[str, ...]]
    injection: tuple[str, ...]
    anaphora: tuple[str, ...]
    vague: frozenset[str]
    meta: frozenset[str]
    concepts: dict[str, tuple[str, ...]]
    place_relations: dict[str, tuple[str, ...]]
    roles: dict[str, tuple[str, ...]]
    synonyms: dict[str, tuple[str, ...]]
    units: dict[str, str]
    currency_prefix: dict[str, str]
    currency_suffix: dict[str, str]
    scales: dict[str, float]
    # how a quantity is stated (section quantity_comparators): folded phrases of every language by
    # kind ("approx", "at_most", "range_from", ...), and the tolerances of the comparison
    comparators: dict[str, tuple[str, ...]]
    comparator_tolerance: dict[str, float]
    frequency: dict[str, str]
    # Spanish "no": a negator only in a sentence that reads as Spanish (Portuguese "no" is "in the")
    negators_es_only: tuple[str, ...] = ()
    # "rather than", "em vez de", "en lugar de": negate what follows, and open a negated tail
    contrast: tuple[str, ...] = ()
    tail_openers: tuple[str, ...] = ()  # "..., sem X", "..., not X": a negated tail after a comma
    # "early" / "mid" / "late" -> (words, (first, last) year of the decade they cover)
    decade_parts: dict[str, tuple[tuple[str, ...], tuple[int, int]]] = field(default_factory=dict)
    demonym_endings: tuple[str, ...] = ()  # "curitibana", "recifense": lower-case demonyms
    role_verbs: frozenset[str] = frozenset()  # "run by", "fundada por": roles that are no title
    subunits: tuple[str, ...] = ()  # "cêntimos", "cents": a currency's hundredth after its amount
    ambiguous_units: frozenset[str] = frozenset()  # "ha": also a verb ("há 10 anos", "ha crecido")

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Lexicon:
        return cls(
            version=str(doc["version"]),
            # Spanish function words count with the Portuguese ones: the judge reads two languages
            # ("pt" / "en"), and a Spanish answer is read as the Romance one.
            stopwords={"en": frozenset(_folded(doc["stopwords"]["en"])),
                       "pt": frozenset(_folded([*doc["stopwords"]["pt"], *doc["stopwords"].get("es", ())]))},
            hedges=_both(doc["hedges"]), uncertainty=_both(doc["uncertainty"]),
            negators=_both(doc["negators"]), injection=_both(doc["injection"]),
            negators_by_lang={"en": _folded([*doc["negators"]["en"], *doc["negators"]["contrast"]["en"]]),
                              "pt": _folded([*doc["negators"]["pt"], *doc["negators"].get("es", ()),
                                             *doc["negators"]["contrast"]["pt"], *doc["negators"]["contrast"]["es"]])},
            negators_es_only=_folded(doc["negators"]["es_only"]),
            contrast=_both(doc["negators"]["contrast"]), tail_openers=_both(doc["negators"]["tail"]),
            decade_parts={k: (_folded(v["words"]), (int(v["years"][0]), int(v["years"][1])))
                          for k, v in doc["decade_parts"].items() if k != "about"},
            demonym_endings=_both(doc["demonym_endings"]), role_verbs=frozenset(_both(doc["role_verbs"])),
            anaphora=_both(doc["anaphora"]),
            vague=frozenset(_both(doc["vague"])), meta=frozenset(_both(doc["meta"])),
            concepts=_groups(doc["concepts"]), place_relations=_groups(doc["place_relations"]),
            roles=_groups(doc["roles"]), synonyms=_groups(doc["synonyms"]),
            units=_keyed(doc["units"]), currency_prefix=_keyed(doc["currency_prefix"]),
            currency_suffix=_keyed(doc["currency_suffix"]),
            scales={k: float(v) for k, v in _keyed(doc["scales"]).items()},
            comparators={k: _both(v) for k, v in doc["quantity_comparators"].items() if k not in ("about", "tolerance")},
            comparator_tolerance={k: float(v) for k, v in doc["quantity_comparators"]["tolerance"].items()
                                  if k != "about"},
            frequency={k: str(v) for k, v in doc["frequency"].items() if k != "about"},
            subunits=tuple(dict.fromkeys(w for ws in (doc["subunits"].get(k, ()) for k in ("en", "pt", "es"))
                                         for x in ws for w in (x.lower(), fold(x)))),
            ambiguous_units=frozenset(_folded(doc["ambiguous_units"]["all"])),
        )


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    raw = resources.files("attesta_classifier.domain").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    return Lexicon.from_json(json.loads(raw))


def doc_negators(lang: str) -> tuple[str, ...]:
    return lexicon().negators_by_lang[lang]


@lru_cache(maxsize=1)
def patterns() -> dict[str, re.Pattern[str]]:
    """Compiled alternations over folded text, built once."""
    lx = lexicon()
    out = {"hedge": phrase_pattern(lx.hedges), "uncertainty": phrase_pattern(lx.uncertainty),
           # per language: Portuguese "no" (in the) negates nothing
           "negator_en": phrase_pattern(tuple(fold(n) for n in doc_negators("en") if "'" not in n)),
           "negator_pt": phrase_pattern(tuple(fold(n) for n in doc_negators("pt"))),
           "negator_es_only": phrase_pattern(lx.negators_es_only),
           "injection": re.compile("|".join(re.escape(p) for p in sorted(lx.injection, key=len, reverse=True))),
           "anaphora": phrase_pattern(lx.anaphora)}
    out["negator_contraction"] = re.compile(r"n['’]t\b")
    return out
