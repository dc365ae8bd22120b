"""Prometheus metrics of the answer service (served on the health port's /metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from prometheus_client import Counter, Histogram


@dataclass(frozen=True)
class AnswerMetrics:
    citations_dropped: Counter
    replies: Counter
    enrichment_fields: Counter
    build_seconds: Histogram
    expired: Counter


@lru_cache(maxsize=1)
def answer_metrics() -> AnswerMetrics:
    """Created once per process, on first use (registering twice would fail)."""
    return AnswerMetrics(
        citations_dropped=Counter(
            "attesta_answer_citations_dropped_total",
            "Citations removed by reconciliation, by reason.", ["reason"]),
        replies=Counter(
            "attesta_answer_replies_total", "Chat replies published, by status and generator.",
            ["status", "generator"]),
        enrichment_fields=Counter(
            "attesta_answer_enrichment_fields_total",
            "Enrichment outcome per citation field (set or absent).", ["field", "outcome"]),
        build_seconds=Histogram(
            "attesta_answer_build_seconds", "Time to build one answer (generator included).",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)),
        expired=Counter(
            "attesta_answer_expired_total",
            "Retrieval results skipped because their caller's deadline had passed."),
    )
