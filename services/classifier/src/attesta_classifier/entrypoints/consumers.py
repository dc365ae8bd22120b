"""Kafka entrypoints: runs.recorded.v1 -> classification (live group and backfill groups)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import asyncpg

from attesta_classifier.service_layer.pipeline import Heuristic, IncomingRun, record_runs
from attesta_classifier.service_layer.unit_of_work import UnitOfWork
from attesta_platform.consuming import BatchHandler, Incoming
from attesta_platform.errors import TransientError

LIVE_GROUP = "classifier"


def make_runs_handler(new_uow: Callable[[], UnitOfWork], heuristic: Heuristic, *, consumer: str,
                      trigger: str) -> BatchHandler:
    """One transaction per batch: inbox claims, runs, history rows, current classes, outbox;
    the decisions are counted on /metrics once it committed."""

    async def handle(items: Sequence[Incoming]) -> list[tuple[Incoming, str]]:
        by_event = {i.envelope.event_id: i for i in items}
        runs = [IncomingRun(i.envelope.event_id, i.envelope.payload, i.envelope.correlation_id)
                for i in items]
        try:
            _, rejected = await record_runs(new_uow(), runs, consumer=consumer, trigger=trigger,
                                            heuristic=heuristic)
        except asyncpg.UniqueViolationError as exc:
            # Another group (live vs backfill) stored one of these runs or claimed the same
            # pair meanwhile; the retry sees it and takes the slower, conflict-aware path.
            raise TransientError(f"concurrent writer: {exc}") from exc
        return [(by_event[r.item.event_id], r.reason) for r in rejected]

    return handle
