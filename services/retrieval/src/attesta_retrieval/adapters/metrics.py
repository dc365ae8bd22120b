"""Prometheus metrics of the retrieval service (served on the health port's /metrics), each
created on first use, not at import."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # prometheus_client is imported where a metric is first created
    from prometheus_client import Counter, Gauge, Histogram


class RetrievalMetrics:
    latency: Histogram | None = None
    expired: Counter | None = None
    multilingual: Gauge | None = None

    def observe(self, path: str, seconds: float) -> None:
        """Per-path counts and latency."""
        if RetrievalMetrics.latency is None:
            # The client library loads with the first metric (nothing at import time).
            from prometheus_client import Histogram

            RetrievalMetrics.latency = Histogram(
                "attesta_retrieval_seconds", "Retrieval latency by hybrid path", ["path"],
                buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10))
        RetrievalMetrics.latency.labels(path=path).observe(seconds)

    def count_expired(self, reason: str) -> None:
        if RetrievalMetrics.expired is None:
            # The client library loads with the first metric (nothing at import time).
            from prometheus_client import Counter

            RetrievalMetrics.expired = Counter(
                "attesta_retrieval_chat_expired_total",
                "Chat requests skipped because nobody waits for them any more: read after their "
                "deadline (reason=deadline) or older than the max age (reason=max_age)",
                ["reason"])
        RetrievalMetrics.expired.labels(reason=reason).inc()

    def mark_multilingual(self, ready: bool) -> None:
        """1 once questions in other languages are served by the multilingual side (issue
        #24), 0 while they are served the English way (still warming, failed, switched off)."""
        if RetrievalMetrics.multilingual is None:
            # The client library loads with the first metric (nothing at import time).
            from prometheus_client import Gauge

            RetrievalMetrics.multilingual = Gauge(
                "attesta_retrieval_multilingual_ready",
                "1 when questions in other languages are served by the multilingual dense side")
        RetrievalMetrics.multilingual.set(1 if ready else 0)
