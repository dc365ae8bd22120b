"""Loaders for the shipped, synthetic KB data (stdlib only, no pydantic).

What the services read at run time; the generator of these files, the brand sites and the
test fixtures are in `attesta_kb_tools` (libs/kb-tools), which no runtime image installs.

Every call returns fresh copies, so callers may mutate the results freely.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources
from typing import Any

DATA_PACKAGE = "attesta_kb.data"
SPLITS = ("train", "dev", "test")

# One JSON object of the data files (a card, a query, a brand). Their keys are documented on
# each loader and pinned by the tests; they stay plain dicts because every consumer reads them
# as JSON (the services validate cards into their own models at their edges), and a degraded
# card deliberately breaks any stricter shape.
Record = dict[str, Any]


def _read_text(name: str) -> str:
    return resources.files(DATA_PACKAGE).joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _jsonl(name: str) -> tuple[Record, ...]:
    rows: list[Record] = []
    for lineno, line in enumerate(_read_text(name).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:  # pragma: no cover - data files are generated
            raise ValueError(f"{name}:{lineno}: invalid JSON: {exc}") from exc
    return tuple(rows)


@lru_cache(maxsize=None)
def _brands_doc() -> Record:
    doc: Record = json.loads(_read_text("brands.json"))
    return doc


def load_cards() -> list[Record]:
    """The verified KB: dicts with keys card_id, title, text, source, metadata.

    metadata always has a string `license`, `kind` (medicine|condition|procedure|brand|
    product), `lang`, `updated`; tracked-brand and product cards carry `brand_id`.
    All metadata values are scalars (str/int/float/bool), so they fit vector-store metadata.
    """
    return copy.deepcopy(list(_jsonl("cards.jsonl")))


def load_queries(split: str | None = None) -> list[Record]:
    """Labeled questions: query_id, question, relevant ({card_id: grade}, grade 2 =
    answers it, 1 = partially relevant), split (train|dev|test), kind (kind of the
    primary relevant card) and tags (e.g. near_miss, descriptor, alias).

    The `test` split is for final reporting only: never train or tune on it.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    rows = _jsonl("queries.jsonl")
    return [copy.deepcopy(q) for q in rows if split is None or q["split"] == split]


def load_brands() -> list[Record]:
    """The tracked brands (id, name, aliases, domains, competitors, sources, facts,
    products, ...), in a stable order."""
    brands: list[Record] = _brands_doc()["brands"]
    return copy.deepcopy(brands)


def load_lookalikes() -> list[Record]:
    """Untracked companies whose names resemble tracked brands (name, domain, not, card_id)."""
    lookalikes: list[Record] = _brands_doc().get("lookalikes", [])
    return copy.deepcopy(lookalikes)


def get_brand(brand_id: str) -> Record:
    """One tracked brand by id; KeyError if unknown."""
    brands: list[Record] = _brands_doc()["brands"]
    for b in brands:
        if b["id"] == brand_id:
            return copy.deepcopy(b)
    raise KeyError(brand_id)


def cards_by_id() -> dict[str, Record]:
    """`load_cards()` indexed by card_id."""
    return {c["card_id"]: c for c in load_cards()}
