"""A batch consumer for runs.recorded.v1: many runs per database transaction.

The messaging core (``attesta_platform.messaging``) handles one message per handler call and
commits each; classification throughput needs a batch per transaction (one COPY of history
rows, one statement per table). This adapter keeps the core's guarantees and reuses its
pieces (``decode``, ``Messaging.dead_letter``, ``RetryPolicy``, ``is_transient``):
- offsets are committed only after the batch's transaction committed;
- an undecodable message, or one the handler rejects, goes to the dead-letter topic with the
  reason, then the partition moves on;
- a transient error retries the batch with backoff; when the attempts are spent the consumer
  seeks back to the batch's first offsets and reads it again after a pause (nothing lost);
- any other error from a batch is retried one message at a time, so only the poison message
  is dead-lettered;
- idempotency is the handler's (inbox rows in the same transaction).
It also serves backfills: a start position (offset or time) for a group with no committed
offsets, a rate limit, and a stop when the end offsets seen at start are reached.
Every message it finishes with is counted in the shared ``attesta_messages_consumed_total``
(processed, dead_lettered, redeliver, tombstone), like the core's consumers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from attesta_contracts import Envelope, topic as lookup_topic
from attesta_platform.errors import PermanentError, is_transient
from attesta_platform.logs import get_logger
from attesta_platform.messaging import (
    MESSAGES_CONSUMED, Delivery, Messaging, RetryPolicy, UndecodableMessage, decode)

log = get_logger("attesta.classifier.kafka_batch")


@dataclass(frozen=True)
class Incoming:
    envelope: Envelope[Any]
    delivery: Delivery


# The batch handler returns the items it rejects (with a reason) so they are dead-lettered.
BatchHandler = Callable[[Sequence[Incoming]], Awaitable[list[tuple[Incoming, str]]]]


@dataclass
class StartAt:
    """Where a group with no committed offset starts: an offset in every partition, a time, or
    the earliest message."""

    offset: int | None = None
    time: datetime | None = None


@dataclass
class Progress:
    processed: int = 0
    dead_lettered: int = 0
    batches: int = 0
    started: float = field(default_factory=time.monotonic)
    first_batch_at: float | None = None
    end_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    positions: dict[TopicPartition, int] = field(default_factory=dict)

    def remaining(self) -> int:
        return sum(max(0, end - self.positions.get(tp, 0)) for tp, end in self.end_offsets.items())

    def rate(self) -> float:
        return self.processed / max(1e-9, time.monotonic() - self.started)


class _Positioner(ConsumerRebalanceListener):
    def __init__(self, consumer: AIOKafkaConsumer, start: StartAt | None) -> None:
        self.consumer, self.start = consumer, start

    async def on_partitions_revoked(self, revoked: Any) -> None:
        return None

    async def on_partitions_assigned(self, assigned: Any) -> None:
        if self.start is None:
            return
        fresh = [tp for tp in assigned if await self.consumer.committed(tp) is None]
        if not fresh:
            return  # resuming: committed offsets win over --from-*
        if self.start.time is not None:
            found = await self.consumer.offsets_for_times(
                {tp: int(self.start.time.timestamp() * 1000) for tp in fresh})
            ends = await self.consumer.end_offsets(fresh)
            for tp in fresh:
                hit = found.get(tp)
                self.consumer.seek(tp, hit.offset if hit is not None else ends[tp])
        elif self.start.offset is not None:
            ends = await self.consumer.end_offsets(fresh)
            for tp in fresh:
                self.consumer.seek(tp, min(self.start.offset, ends[tp]))


class BatchConsumer:
    def __init__(self, *, bootstrap_servers: str, topic: str, group_id: str, handler: BatchHandler,
                 messaging: Messaging, payload_topic: str | None = None, batch_max: int = 500,
                 wait_ms: int = 50, retry: RetryPolicy | None = None,
                 max_per_second: float | None = None, start: StartAt | None = None,
                 stop_at_end: bool = False, client_id: str = "classifier") -> None:
        self.topic, self.group_id, self.handler, self.messaging = topic, group_id, handler, messaging
        # Tests and benchmarks read a private topic carrying the same payload type.
        self.spec = lookup_topic(payload_topic or topic)
        self.batch_max, self.wait_ms = batch_max, wait_ms
        self.retry = retry or messaging.retry
        self.max_per_second, self.start, self.stop_at_end = max_per_second, start, stop_at_end
        self.progress = Progress()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers, group_id=group_id, client_id=client_id,
            enable_auto_commit=False, auto_offset_reset="earliest",
            max_poll_records=batch_max, isolation_level="read_committed")
        self.started = asyncio.Event()
        self._dead_in_batch = 0

    def _consumed(self, outcome: str, n: int) -> None:
        if n > 0:
            MESSAGES_CONSUMED.labels(self.group_id, self.topic, outcome).inc(n)

    async def run(self, stop: asyncio.Event) -> Progress:
        await self.consumer.start()
        try:
            self.consumer.subscribe([self.topic], listener=_Positioner(self.consumer, self.start))
            if self.stop_at_end:
                parts = self.consumer.partitions_for_topic(self.topic) or set()
                deadline = time.monotonic() + 30
                while not parts:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"topic {self.topic} not found (no partitions after 30 s)")
                    await asyncio.sleep(0.2)
                    parts = self.consumer.partitions_for_topic(self.topic) or set()
                tps = [TopicPartition(self.topic, p) for p in parts]
                self.progress.end_offsets = await self.consumer.end_offsets(tps)
            self.started.set()
            while not stop.is_set():
                batch = await self.consumer.getmany(timeout_ms=self.wait_ms, max_records=self.batch_max)
                records = [r for rs in batch.values() for r in rs]
                if records:
                    if self.progress.first_batch_at is None:
                        self.progress.first_batch_at = time.monotonic()
                    await self._process(batch)
                else:
                    for tp in self.consumer.assignment():
                        self.progress.positions[tp] = await self.consumer.position(tp)
                if self.stop_at_end and self._at_end():
                    break
            return self.progress
        finally:
            await self.consumer.stop()

    def _at_end(self) -> bool:
        assigned = self.consumer.assignment()
        if not assigned:
            return False
        return all(self.progress.positions.get(tp, -1) >= end
                   for tp, end in self.progress.end_offsets.items() if tp in assigned)

    async def _process(self, batch: dict[TopicPartition, list[Any]]) -> None:
        t0 = time.monotonic()
        items: list[Incoming] = []
        n = tombstones = 0
        self._dead_in_batch = 0
        for tp, recs in batch.items():
            for rec in recs:
                n += 1
                delivery = Delivery(rec.topic, rec.partition, rec.offset, rec.key, rec.value or b"")
                if rec.value is None:
                    tombstones += 1
                    continue
                try:
                    items.append(Incoming(decode(self.spec, delivery.value), delivery))
                except UndecodableMessage as exc:
                    await self._dead_letter(delivery, str(exc), 1)
        if items and not await self._handle_with_retries(items, batch):
            self._consumed("redeliver", n - tombstones - self._dead_in_batch)
            return  # attempts spent: sought back, will re-read
        offsets = {tp: recs[-1].offset + 1 for tp, recs in batch.items()}
        await self.consumer.commit(offsets)
        self._consumed("processed", n - tombstones - self._dead_in_batch)
        self._consumed("tombstone", tombstones)
        self.progress.positions.update(offsets)
        self.progress.processed += n
        self.progress.batches += 1
        if self.max_per_second:  # backfill: leave room for live traffic
            floor = n / self.max_per_second - (time.monotonic() - t0)
            if floor > 0:
                await asyncio.sleep(floor)

    async def _handle_with_retries(self, items: list[Incoming], batch: dict[TopicPartition, list[Any]]) -> bool:
        for attempt in range(1, self.retry.attempts + 1):
            try:
                rejected = await self.handler(items)
            except Exception as exc:  # noqa: BLE001 - classified below
                if is_transient(exc):
                    if attempt < self.retry.attempts:
                        log.info("transient error, retrying batch", group=self.group_id,
                                 attempt=attempt, error=repr(exc))
                        await asyncio.sleep(self.retry.delay(attempt))
                        continue
                    log.warning("dependency still failing; re-reading batch", group=self.group_id,
                                error=repr(exc))
                    for tp, recs in batch.items():
                        self.consumer.seek(tp, recs[0].offset)
                    await asyncio.sleep(self.retry.max_delay_s)
                    return False
                log.warning("batch failed; retrying one by one", group=self.group_id, error=repr(exc))
                return await self._one_by_one(items, batch)
            for item, reason in rejected:
                await self._dead_letter(item.delivery, PermanentError(reason), attempt)
            return True
        return False  # pragma: no cover - the loop always returns

    async def _one_by_one(self, items: list[Incoming], batch: dict[TopicPartition, list[Any]]) -> bool:
        for item in items:
            for attempt in range(1, self.retry.attempts + 1):
                try:
                    rejected = await self.handler([item])
                except Exception as exc:  # noqa: BLE001
                    if is_transient(exc) and attempt < self.retry.attempts:
                        await asyncio.sleep(self.retry.delay(attempt))
                        continue
                    if is_transient(exc):
                        for tp, recs in batch.items():
                            self.consumer.seek(tp, recs[0].offset)
                        await asyncio.sleep(self.retry.max_delay_s)
                        return False
                    await self._dead_letter(item.delivery, exc, attempt)
                    break
                for it, reason in rejected:
                    await self._dead_letter(it.delivery, PermanentError(reason), attempt)
                break
        return True

    async def _dead_letter(self, delivery: Delivery, reason: BaseException | str, attempts: int) -> None:
        log.warning("dead-lettering run", group=self.group_id, topic=delivery.topic,
                    offset=delivery.offset, reason=str(reason))
        await self.messaging.dead_letter(self.group_id, delivery, reason, attempts)
        self.progress.dead_lettered += 1
        self._dead_in_batch += 1
        self._consumed("dead_lettered", 1)
