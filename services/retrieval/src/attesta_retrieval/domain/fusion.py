"""Reciprocal rank fusion and dedup by parent (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

RRF_K = 60  # Cormack et al. (2009); a larger k flattens the weight of the top ranks


def dedup_by_parent(scored_chunks: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """(card_id, score) per chunk, best first -> one entry per card with its best chunk's
    score, in order of first appearance (so a context chunk id is the card id)."""
    best: dict[str, float] = {}
    for card_id, score in scored_chunks:
        if card_id not in best:
            best[card_id] = score
    return list(best.items())


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked lists of ids: score(d) = sum over lists of 1 / (k + rank(d)), rank from 1.
    Ties are broken by the first list's order, then the id, so the result is deterministic."""
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    scores: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for li, ranking in enumerate(rankings):
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(doc, (li, rank))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]], kv[0]))
