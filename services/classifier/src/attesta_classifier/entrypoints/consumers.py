"""Kafka entrypoints: runs.recorded.v1 -> classification (live group and backfill groups),
evidence.recorded.v1 -> the Merkle log's leaf index of answers' bytes (group
``classifier-evidence``), which the run exports carry, and collection.slot-completed.v1 -> the
workspace's alert rules evaluated after the slot (group ``classifier-alerts``).

The retry / dead-letter decision of this subscriber, once: an item the use case rejects is
dead-lettered with its reason (the batch goes on); an error in ``retryable`` (the store's "a
concurrent writer got there first", which the adapter names) is a ``TransientError``, so the
shared batch consumer retries the batch without committing; anything else is the consumer's
own retry policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from attesta_classifier.domain.alert_commands import EvaluateAfterSlot
from attesta_classifier.domain.commands import IncomingRun, RecordEvidenceLeaves, RecordRuns
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import BatchHandler, Incoming
from attesta_platform.errors import TransientError

LIVE_GROUP = "classifier"
EVIDENCE_GROUP = "classifier-evidence"
ALERTS_GROUP = "classifier-alerts"


def make_runs_handler(bus: MessageBus, *, consumer: str, trigger: str,
                      retryable: tuple[type[Exception], ...] = ()) -> BatchHandler:
    """One transaction per batch: inbox claims, runs, history rows, current classes, outbox;
    the decisions are counted on /metrics once it committed."""

    async def handle(items: Sequence[Incoming]) -> list[tuple[Incoming, str]]:
        by_event = {i.envelope.event_id: i for i in items}
        runs = tuple(IncomingRun(i.envelope.event_id, i.envelope.payload,
                                 i.envelope.correlation_id) for i in items)
        try:
            _, rejected = await bus.handle(RecordRuns(runs, consumer, trigger))
        except retryable as exc:
            # Another group (live vs backfill) stored one of these runs or claimed the same
            # pair meanwhile; the retry sees it and takes the slower, conflict-aware path.
            raise TransientError(f"concurrent writer: {exc}") from exc
        return [(by_event[r.item.event_id], r.reason) for r in rejected]

    return handle


def make_evidence_handler(bus: MessageBus) -> BatchHandler:
    """One transaction per batch: each logged SHA-256's leaf index, first one kept. An event
    without ``log_index`` (bytes not in the log) has nothing to keep; a malformed one never
    reaches here (the shared consumer dead-letters what its contract rejects)."""

    async def handle(items: Sequence[Incoming]) -> list[tuple[Incoming, str]]:
        leaves = tuple((i.envelope.payload.sha256, i.envelope.payload.log_index) for i in items
                       if i.envelope.payload.log_index is not None)
        if leaves:
            await bus.handle(RecordEvidenceLeaves(leaves))
        return []

    return handle


def make_slot_handler(bus: MessageBus) -> BatchHandler:
    """Each completed slot, one evaluation of its workspace's rules (idempotent per slot).
    ``SlotRunsPending`` is a ``TransientError``: the shared consumer retries the batch later
    (the slots already evaluated in it are skipped then); any other error splits the batch and
    dead-letters the slot that raised it, with the reason."""

    async def handle(items: Sequence[Incoming]) -> list[tuple[Incoming, str]]:
        for i in items:
            slot = i.envelope.payload
            await bus.handle(EvaluateAfterSlot(slot.workspace_id, slot.schedule_id, slot.slot,
                                               slot.completed_at, tuple(slot.run_ids)))
        return []

    return handle
