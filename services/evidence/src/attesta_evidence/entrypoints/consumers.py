"""Kafka intake: runs, fetched ground-truth sources and AI engines' raw responses (from the
collector) become stored evidence.

Each fetched batch is recorded in one transaction (group commit: one append lock, one statement
per table; the log stays gap-free and in commit order) and its offsets are committed after it.
Input that can never become evidence (hash mismatch, oversized, not Unicode, odd media type) is
rejected with the reason: the messaging core dead-letters it and moves on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attesta_contracts.topics import (
    ENGINE_RESPONSE_CAPTURED,
    GROUNDTRUTH_SOURCE_FETCHED,
    RUNS_RECORDED,
)
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.domain.model import IncomingEvidence, InvalidEvidence
from attesta_evidence.service_layer.intake import (
    evidence_from_engine_response,
    evidence_from_run,
    evidence_from_source,
)
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import BatchHandler, GroupConsumer, Incoming
from attesta_platform.messaging import Messaging

CONSUMER_GROUP = "evidence"


def register_consumers(messaging: Messaging, bus: MessageBus,
                       max_content_bytes: int, *,
                       group_id: str = CONSUMER_GROUP, auto_offset_reset: str = "earliest",
                       consumers_per_topic: int = 1, batch_max: int = 500
                       ) -> dict[str, list[GroupConsumer]]:
    """Subscribe the intake handlers (contract payload -> ``RecordEvidence`` on ``bus``);
    returns the subscribers by topic.

    ``consumers_per_topic`` > 1 registers that many consumers of each topic in the group, so
    Kafka spreads the partitions over them (order is kept per partition, i.e. per key). More
    consumers than partitions sit idle."""
    def handler(build: Callable[[Any, int], IncomingEvidence]) -> BatchHandler:
        async def record(items: Sequence[Incoming]) -> list[tuple[Incoming, str]]:
            batch: list[Intake] = []
            rejected: list[tuple[Incoming, str]] = []
            for item in items:
                env = item.envelope
                try:
                    batch.append(Intake(build(env.payload, max_content_bytes), env.correlation_id,
                                        str(env.event_id)))
                except InvalidEvidence as exc:
                    rejected.append((item, str(exc)))
            if batch:
                await bus.handle(RecordEvidence(tuple(batch)))
            return rejected
        return record

    builders: dict[str, Callable[[Any, int], IncomingEvidence]] = {
        RUNS_RECORDED: evidence_from_run, GROUNDTRUTH_SOURCE_FETCHED: evidence_from_source,
        ENGINE_RESPONSE_CAPTURED: evidence_from_engine_response}
    return {topic: [messaging.consume_batch(topic, group_id=group_id, handler=handler(build),
                                            batch_max=batch_max, auto_offset_reset=auto_offset_reset)
                    for _ in range(consumers_per_topic)]
            for topic, build in builders.items()}
