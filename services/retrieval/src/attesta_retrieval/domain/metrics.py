"""Ranking metrics for the quality report (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Share of the relevant cards (any grade > 0) found in the top ``k``."""
    rel = {cid for cid, g in relevant.items() if g > 0}
    if not rel:
        return 0.0
    return len(rel & set(ranked[:k])) / len(rel)


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG@k with graded gains 2^grade - 1 and log2 discounts."""
    def dcg(grades: Sequence[int]) -> float:
        return sum((2.0 ** g - 1) / math.log2(i + 2) for i, g in enumerate(grades))

    ideal = dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([relevant.get(cid, 0) for cid in ranked[:k]]) / ideal


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)
