"""Kafka intake: runs and fetched ground-truth sources become stored evidence.

Input that can never become evidence (hash mismatch, oversized, not Unicode, odd media type) is
a ``PermanentError``: the messaging core dead-letters it with the reason and moves on.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from attesta_contracts import Envelope
from attesta_contracts.topics import GROUNDTRUTH_SOURCE_FETCHED, RUNS_RECORDED
from attesta_evidence.domain.model import IncomingEvidence, InvalidEvidence
from attesta_evidence.service_layer.intake import (
    evidence_from_run,
    evidence_from_source,
    record_evidence,
)
from attesta_platform.errors import PermanentError
from attesta_platform.messaging import Delivery, Messaging

CONSUMER_GROUP = "evidence"


def register_consumers(messaging: Messaging, pool: asyncpg.Pool, max_content_bytes: int, *,
                       group_id: str = CONSUMER_GROUP, auto_offset_reset: str = "earliest",
                       consumers_per_topic: int = 1) -> dict[str, list[Any]]:
    """Subscribe the intake handlers; returns the subscribers by topic.

    ``consumers_per_topic`` > 1 registers that many consumers of each topic in the group, so
    Kafka spreads the partitions over them and several records are in flight at once (order is
    kept per partition, i.e. per key). More consumers than partitions sit idle."""
    async def _record(env: Envelope[Any], build) -> None:
        try:
            incoming: IncomingEvidence = build(env.payload, max_content_bytes)
        except InvalidEvidence as exc:
            raise PermanentError(str(exc)) from None
        await record_evidence(pool, messaging, incoming, correlation_id=env.correlation_id,
                              causation_id=str(env.event_id))

    async def on_run_recorded(env: Envelope[Any], delivery: Delivery) -> None:
        await _record(env, evidence_from_run)

    async def on_source_fetched(env: Envelope[Any], delivery: Delivery) -> None:
        await _record(env, evidence_from_source)

    handlers = {RUNS_RECORDED: on_run_recorded, GROUNDTRUTH_SOURCE_FETCHED: on_source_fetched}
    return {topic: [messaging.consume(topic, group_id=group_id, handler=handler,
                                      auto_offset_reset=auto_offset_reset)
                    for _ in range(consumers_per_topic)]
            for topic, handler in handlers.items()}
