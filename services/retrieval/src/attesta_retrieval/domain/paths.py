"""The hybrid-path label (seed 000, ADR-0022 as the seed describes it) and how it is chosen."""

from __future__ import annotations

from dataclasses import dataclass

from attesta_contracts.chat import HybridPath


@dataclass(frozen=True)
class PathDecision:
    path: HybridPath | None
    reason: str | None


def decide_path(*, ran: bool, sparse_ok: bool, reranked: bool,
                why_not: str | None = None) -> PathDecision:
    """``full`` only when dense and sparse were fused *and* the cross-encoder scored them;
    ``dense_only`` when the sparse side was unavailable (never reranked: the reranker's
    candidates come from the fusion); ``rrf_only`` when fused but not reranked; absent when
    no retrieval ran. ``why_not`` explains any fallback."""
    if not ran:
        return PathDecision(None, why_not or "no retrieval ran")
    if not sparse_ok:
        return PathDecision(HybridPath.DENSE_ONLY, why_not or "sparse index unavailable")
    if reranked:
        return PathDecision(HybridPath.FULL, None)
    return PathDecision(HybridPath.RRF_ONLY, why_not or "reranker not used")
