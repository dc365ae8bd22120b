"""Test fixtures derived from the KB (stdlib only)."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources

from attesta_kb.dataset import Record


@lru_cache(maxsize=1)
def _degraded() -> tuple[Record, ...]:
    text = resources.files("attesta_kb_tools.data").joinpath("degraded_cards.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def load_degraded_cards() -> list[Record]:
    """Deliberately broken cards (never part of `attesta_kb.load_cards()`): missing,
    empty, null, javascript: and ftp:// sources, a non-string licence, a missing licence
    and metadata that is not a dict. Used to test graceful degradation."""
    return copy.deepcopy(list(_degraded()))
