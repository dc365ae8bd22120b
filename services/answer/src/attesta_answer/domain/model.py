"""What generators see and return (pure data)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from attesta_answer.domain.citations import score_from
from attesta_answer.domain.firewall import strip_links
from attesta_contracts.chat import ContextChunk
from attesta_platform.errors import PermanentError

NO_CONTEXT_ANSWER = "I could not find this in the verified knowledge base."


class GeneratorOutputInvalid(PermanentError):
    """A generator's output does not have the answer's shape."""


@dataclass(frozen=True)
class Card:
    """A retrieved card as a generator sees it: id, title and text with every link removed
    (the firewall), never the card's source or metadata. Reconciliation checks spans against
    this same text, so a verified span can never carry a URL either."""

    card_id: str
    title: str
    text: str
    rank: int  # 0 = the retriever's best
    # Retrieval's evidence (issue #14), link-free like the text: each sentence of the card with
    # its similarity in meaning to the question and, where the cross-encoder scored it (full
    # path, issue #24), its logit; None when the retrieval sent none.
    sentences: tuple[tuple[str, float, float | None], ...] | None = None
    # The reranker's calibrated probability that the card is relevant (the displayed score / 100,
    # ADR-0024): only on the full path, else None.
    relevance: float | None = None
    # The dense side's cosine and the sparse side's BM25 score for the card, when each found it.
    dense: float | None = None
    bm25: float | None = None


@dataclass(frozen=True)
class Draft:
    """A generator's proposal. ``citations`` are untrusted: whatever the generator emitted
    (mappings with ``card_id`` and ``span`` when well-formed); reconciliation decides."""

    answer: str
    citations: tuple[Any, ...] = ()
    grounded: bool = True  # False: the generator found nothing relevant in the context


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _evidence(chunk: ContextChunk) -> tuple[tuple[str, float, float | None], ...] | None:
    """The chunk's scored sentences, link-free, keeping only finite similarities in [-1, 1]
    (a non-finite cross-encoder logit is dropped, the sentence kept)."""
    if not chunk.sentences:
        return None
    out = []
    for s in chunk.sentences:
        sim = s.similarity
        if isinstance(sim, float) and math.isfinite(sim) and -1.0 <= sim <= 1.0 and s.text.strip():
            out.append((strip_links(s.text), sim, _finite(s.relevance_logit)))
    return tuple(out) or None


def visible_cards(chunks: Iterable[ContextChunk], hybrid_path: Any = None) -> list[Card]:
    """One card per card id (the first, best-ranked chunk wins), links stripped; on the full
    path each card carries its displayed relevance."""
    cards: list[Card] = []
    seen: set[str] = set()
    for chunk in chunks:
        card_id = chunk.card_id
        if not card_id.strip() or card_id in seen:
            continue
        seen.add(card_id)
        score = score_from(chunk.scores.rerank_logit, hybrid_path)
        cards.append(Card(card_id, strip_links(chunk.title), strip_links(chunk.text), len(cards),
                          _evidence(chunk), None if score is None else score / 100,
                          _finite(chunk.scores.dense), _finite(chunk.scores.bm25)))
    return cards
