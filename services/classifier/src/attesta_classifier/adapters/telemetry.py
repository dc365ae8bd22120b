"""Prometheus instruments of the classifier, served on its internal API's ``GET /metrics``
(``attesta_platform.http.add_metrics_route``; docs/metrics.md lists them).

Decisions are counted once their transaction committed (``pipeline.count_outcomes``, called
by whoever owns the transaction), so a batch that is rolled back and retried is not counted
twice. Judge calls are counted below the Redis verdict cache (``MeteredJudge`` wraps the real
judge, the cache wraps it): a cache hit is not a judge call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from prometheus_client import Counter, Histogram

from ..domain.model import Brand, Decision, Fact, Run
from .judges import Judge, JudgeUnavailable

CLASSIFICATIONS = Counter(
    "attesta_classifier_classifications_total",
    "History rows appended (committed): (run, brand) pairs classified, by class, deciding stage "
    "(deterministic heuristic or judge) and trigger",
    ["citation_class", "decided_by", "trigger"])
REFUSALS = Counter(
    "attesta_classifier_refusals_total",
    "(run, brand) pairs refused (no active ground truth, or brand not tracked), by trigger",
    ["trigger"])
PARKED = Counter(
    "attesta_classifier_parked_total",
    "(run, brand) pairs the heuristic left ambiguous, parked for the judge worker, by trigger",
    ["trigger"])
JUDGE_CALLS = Counter(
    "attesta_classifier_judge_calls_total",
    "Calls to the judge (verdict-cache hits excluded), by judge model and outcome "
    "(ok, unavailable, error, cancelled)",
    ["judge_model", "outcome"])
JUDGE_SECONDS = Histogram(
    "attesta_classifier_judge_seconds", "Time of one judge call, whatever its outcome",
    ["judge_model"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120))
VERDICT_CACHE = Counter(
    "attesta_classifier_verdict_cache_total",
    "Redis verdict-cache lookups by result (hit, miss), and errors (Redis failed a read or a "
    "write, or held a corrupt entry; a failed read also counts as a miss)",
    ["result"])


class MeteredJudge:
    """A judge that counts its calls, their outcome and their time (``JUDGE_*``)."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.prompt_version = inner.prompt_version

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        outcome = "error"
        started = time.perf_counter()
        try:
            decision = await self.inner.judge(run=run, brand=brand, facts=facts)
            outcome = "ok"
            return decision
        except JudgeUnavailable:
            outcome = "unavailable"
            raise
        except asyncio.CancelledError:  # e.g. the manual reclassification's timeout
            outcome = "cancelled"
            raise
        finally:
            JUDGE_CALLS.labels(self.model_name, outcome).inc()
            JUDGE_SECONDS.labels(self.model_name).observe(time.perf_counter() - started)
