"""Plain data of the retrieval domain (no I/O)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Card:
    """A KB card as the index keeps it. ``source``/``metadata`` pass through untouched: the
    answer service guards them at enrichment time (ADR-0024 (C))."""

    card_id: str
    title: str
    text: str
    source: object  # unvalidated here: carried as published
    metadata: object
    content_sha256: str


@dataclass
class Hit:
    """One card in a ranking, with every score known so far (dedup by parent already done)."""

    card_id: str
    dense: float | None = None
    bm25: float | None = None
    rrf: float | None = None
    rerank_logit: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


def card_metadata(card: Mapping[str, Any]) -> Mapping[str, Any]:
    """A raw card's metadata, or nothing when it is not a mapping (a degraded card)."""
    meta = card.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def card_content_sha256(card: dict[str, Any]) -> str:
    """SHA-256 of a card's canonical JSON (sorted keys, no whitespace, UTF-8).

    What a publisher puts in ``KbCardPublished.content_sha256``; the index checks it so a
    card whose bytes do not match its hash is refused instead of indexed."""
    canonical = {k: card.get(k) for k in ("card_id", "title", "text", "source", "metadata")}
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
