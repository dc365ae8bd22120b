"""The messaging core's metrics, served on every service's /metrics (attesta_platform.service).

Outcomes of ``attesta_messages_consumed_total``: processed (handler returned, offset
committed), dead_lettered (committed after the dead letter was acked), redeliver (transient
attempts spent: not committed, read again), tombstone (skipped)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

MESSAGES_CONSUMED = Counter(
    "attesta_messages_consumed_total", "Messages a consumer finished with, by outcome",
    ["consumer", "topic", "outcome"])
HANDLER_RETRIES = Counter(
    "attesta_handler_retries_total", "Transient handler failures retried in place",
    ["consumer", "topic"])
HANDLER_SECONDS = Histogram(
    "attesta_handler_seconds", "Handler time per attempt", ["consumer", "topic"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
MESSAGES_PUBLISHED = Counter(
    "attesta_messages_published_total", "Records acknowledged by the broker", ["topic"])
