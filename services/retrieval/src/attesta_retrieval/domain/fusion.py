"""Reciprocal rank fusion and dedup by parent (pure)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

RRF_K = 60  # Cormack et al. (2009); a larger k flattens the weight of the top ranks
RANK_PRIOR_WEIGHT = 1.0


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


def rerank_order(logits: Sequence[float | None], prior_weight: float = RANK_PRIOR_WEIGHT) -> list[int]:
    """Positions in the fused head (index 0 = fused rank 1), best first, by the cross-encoder's
    logit plus a prior from the fused rank: ``logit - prior_weight * ln(rank)``.

    The logit is the log-odds that the card is relevant, judged from the card alone; the
    fused rank is evidence the cross-encoder never sees (two retrievers agreeing), and
    ln(1/rank) adds it as a log prior. Weight 0 orders by the cross-encoder alone. A missing
    or non-finite logit sorts last, in fused order. Ties keep the fused order."""
    def key(i: int) -> tuple[int, float, int]:
        x = logits[i]
        if x is None or not math.isfinite(x):
            return (1, 0.0, i)
        return (0, -(x - prior_weight * math.log(i + 1)), i)

    return sorted(range(len(logits)), key=key)
