"""The one consume path: group consumers (one message or one batch per handler call) and the
group-less replay of a compacted topic. Services never loop over Kafka themselves.

What a group consumer guarantees (docs/foundation.md has the tests):
- an offset is committed only after the handler's effect is durable, or after the message was
  dead-lettered. Commits are *pipelined*: the completed offsets are handed to a background
  committer and the next message is processed meanwhile (a crash before the commit lands means
  a redelivery, which the effect's idempotency absorbs: at-least-once, as before). SIGTERM
  finishes the message or batch in hand, then waits for its commit before leaving the group;
- ONE routine, :func:`decide`, says what happens after a handler error, for single and batch
  handlers alike: retry in place (transient, attempts left), re-read later (transient, attempts
  spent: seek back, pause, nothing committed past it) or dead-letter (anything else);
- a single-message handler with ``concurrency`` > 1 runs messages of different keys at once,
  one key's messages in order, and takes the next batch while the last one's messages still
  wait for their effects (:class:`_Pipeline`): each partition commits up to its oldest
  message not done;
- a batch handler gets one call (one transaction) per fetched batch and returns the items it
  rejects with a reason; a batch that fails with a non-transient error is retried one message
  at a time, so only the poison message is dead-lettered;
- undecodable bytes (not UTF-8, not a valid envelope for the topic, newer schema) are
  dead-lettered with their reason before any handler sees them; tombstones are skipped
  (group consumers) or handed on as deletions (replays).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from attesta_contracts import Envelope, Topic
from attesta_platform.errors import PermanentError, is_transient
from attesta_platform.logs import get_logger

if TYPE_CHECKING:
    from attesta_platform.messaging import Delivery, Messaging, RetryPolicy

log = get_logger("attesta.consuming")
T = TypeVar("T")


@dataclass(frozen=True)
class Incoming:
    """A decoded message and where it came from."""

    envelope: Envelope[Any]
    delivery: Delivery


Handler = Callable[[Envelope[Any], "Delivery"], Awaitable[None]]
# A batch handler returns the items it rejects (with a reason): they are dead-lettered.
BatchHandler = Callable[[Sequence[Incoming]], Awaitable[list[tuple[Incoming, str]]]]


class Decision(enum.Enum):
    RETRY = "retry"  # transient, attempts left: wait (backoff + jitter) and call again
    REREAD = "reread"  # transient, attempts spent: do not commit; seek back and read it later
    DEAD_LETTER = "dead_letter"  # permanent (or unknown): dead-letter, commit, move on


def decide(exc: BaseException, attempt: int, policy: RetryPolicy) -> Decision:
    """What to do after a handler raised ``exc`` on its ``attempt``-th call."""
    if not is_transient(exc):
        return Decision.DEAD_LETTER
    return Decision.RETRY if attempt < policy.attempts else Decision.REREAD


# Two tuple shapes, so that checking ``outcome[0] is None`` tells the type checker which one.
Attempted = tuple[None, T, int] | tuple[Decision, BaseException, int]


async def attempt_with_policy(call: Callable[[], Awaitable[T]], policy: RetryPolicy,
                              what: str) -> Attempted[T]:
    """Call until it succeeds or :func:`decide` gives up: ``(None, result, attempts)`` on
    success, else ``(REREAD | DEAD_LETTER, error, attempts)``."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return None, await call(), attempt
        except Exception as exc:  # noqa: BLE001 - every error is classified by decide()
            decision = decide(exc, attempt, policy)
            if decision is not Decision.RETRY:
                return decision, exc, attempt
            from attesta_platform.messaging import HANDLER_RETRIES

            HANDLER_RETRIES.labels(*what.split("<-", 1)).inc()
            log.info("transient error, retrying", consumer=what, attempt=attempt, error=repr(exc))
            await asyncio.sleep(policy.delay(attempt))


@dataclass
class StartAt:
    """Where a group with no committed offset starts: an offset in every partition, or a time."""

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


class _Committer:
    """Commits completed offsets in the background, newest first wins, one commit in flight.

    The consumer marks ``tp -> next offset`` once a message's effect is durable and goes on;
    the committer sends whatever is marked when the previous commit returned, so under load
    one commit covers many messages and a quiet consumer commits each message at once. Under
    load, commits are also at least ``min_interval_s`` apart: each one is a write the broker
    replicates (as costly to it as a produce), and a crash redelivers at most that much more
    (effects are idempotent: at-least-once either way)."""

    def __init__(self, consumer: AIOKafkaConsumer, name: str, min_interval_s: float = 0.0) -> None:
        self._consumer, self._name = consumer, name
        self._min_interval_s = min_interval_s
        self._pending: dict[TopicPartition, int] = {}
        self._task: asyncio.Task[None] | None = None

    def mark(self, offsets: dict[TopicPartition, int]) -> None:
        for tp, off in offsets.items():
            if off > self._pending.get(tp, -1):
                self._pending[tp] = off
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            offsets, self._pending = self._pending, {}
            assigned = self._consumer.assignment()
            offsets = {tp: o for tp, o in offsets.items() if tp in assigned}
            if not offsets:
                continue
            started = time.monotonic()
            try:
                await self._consumer.commit(offsets)
            except Exception as exc:  # noqa: BLE001 - a lost commit means a redelivery, not a loss
                log.warning("offset commit failed; the messages will be redelivered",
                            consumer=self._name, error=repr(exc))
                return
            rest = self._min_interval_s - (time.monotonic() - started)
            if self._pending and rest > 0:
                await asyncio.sleep(rest)

    async def flush(self) -> None:
        """Wait until everything marked so far is committed (or its commit failed)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        if self._pending:
            self._task = asyncio.create_task(self._drain())
            await self._task


class _Pipeline:
    """Single-message handling with ``concurrency`` > 1, without a barrier between batches.

    Each message runs in its own task as soon as a slot is free; one key's messages (per
    partition) run one after the other, in order, each waiting for the one before it. A
    partition's offset is committed up to its oldest message not finished yet, so nothing is
    committed before its effect. The next batch is taken while the last one's messages still
    wait for their acknowledgements: a stage is then limited by its CPU, not by one broker
    round trip per batch. A transient error whose attempts are spent stops the dispatch; once
    the running messages are finished every partition is read again from its first message not
    done (the ones after it that were done run again: their effects are idempotent)."""

    def __init__(self, owner: GroupConsumer, handler: Handler) -> None:
        self.owner, self.handler = owner, handler
        self.slots = asyncio.Semaphore(owner.concurrency)
        self.running: set[asyncio.Task[None]] = set()
        self.tails: dict[tuple[int, bytes | None], asyncio.Task[None]] = {}  # last task per key
        self.pending: dict[TopicPartition, dict[int, None]] = {}  # offsets dispatched, not done
        self.after: dict[TopicPartition, int] = {}  # the offset after the last one dispatched
        self.failed: tuple[Delivery, BaseException] | None = None
        self.crashed: BaseException | None = None  # a task ended on an error: the consumer ends
        self.trouble = asyncio.Event()  # failed or crashed: wakes the consume loop

    async def dispatch(self, items: list[Incoming], batch: dict[TopicPartition, list[Any]],
                       stop: asyncio.Event) -> None:
        """Start the batch's messages (waiting for free slots); returns once all are started,
        or a failure or the stop ends the dispatch."""
        tps = {(tp.topic, tp.partition): tp for tp in batch}
        for item in items:
            await self.slots.acquire()
            if self.failed or self.crashed or stop.is_set():
                self.slots.release()
                return
            d = item.delivery
            tp = tps[(d.topic, d.partition)]
            self.pending.setdefault(tp, {})[d.offset] = None
            self.after[tp] = d.offset + 1
            lane = (d.partition, d.key)
            task = asyncio.create_task(self._one(tp, item, self.tails.get(lane)))
            self.tails[lane] = task
            self.running.add(task)
            task.add_done_callback(functools.partial(self._finished, lane))
        for tp, recs in batch.items():  # tombstones and dead letters after the last message
            self.after[tp] = recs[-1].offset + 1
            self._advance(tp)

    async def _one(self, tp: TopicPartition, item: Incoming, before: asyncio.Task[None] | None) -> None:
        try:
            if before is not None:
                await asyncio.wait([before])  # this key's previous message first
            if self.failed or self.crashed:
                return  # a re-read is coming: leave it not done
            owner = self.owner
            outcome = await attempt_with_policy(functools.partial(owner.timed, self.handler, item),
                                                owner.retry, owner.name)
            if outcome[0] is Decision.REREAD:
                self.failed = self.failed or (item.delivery, outcome[1])
                self.trouble.set()
                return
            if outcome[0] is Decision.DEAD_LETTER:
                await owner._dead_letter(item.delivery, outcome[1], outcome[2])
            else:
                owner._count("processed")
                owner.progress.processed += 1
            del self.pending[tp][item.delivery.offset]
            self._advance(tp)
        finally:
            self.slots.release()

    def _finished(self, lane: tuple[int, bytes | None], task: asyncio.Task[None]) -> None:
        self.running.discard(task)
        if self.tails.get(lane) is task:
            del self.tails[lane]
        if not task.cancelled() and task.exception() is not None and self.crashed is None:
            self.crashed = task.exception()
            self.trouble.set()

    def _advance(self, tp: TopicPartition) -> None:
        """Commit ``tp`` up to its oldest message not done (offsets are dispatched in order,
        so that is the first one pending)."""
        waiting = self.pending.get(tp)
        mark = next(iter(waiting)) if waiting else self.after.get(tp)
        if mark is not None:
            self.owner.committer.mark({tp: mark})
            self.owner.progress.positions[tp] = mark

    async def settle(self) -> None:
        """Wait for every started message; cancelled meanwhile, cancel them."""
        tasks = set(self.running)
        if not tasks:
            return
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise

    async def recover(self) -> None:
        """After a failure: let the started messages finish, then seek every partition back to
        its first message not done, commit up to it, and pause before reading again."""
        if self.crashed is not None:
            raise self.crashed
        if self.failed is None:
            return
        await self.settle()
        if self.crashed is not None:
            raise self.crashed
        owner = self.owner
        assigned = owner.consumer.assignment()
        for tp, after in self.after.items():
            if tp in assigned:  # a rebalance may have taken it meanwhile
                waiting = self.pending.get(tp)
                owner.consumer.seek(tp, next(iter(waiting)) if waiting else after)
                self._advance(tp)
        at, error = self.failed
        log.warning("dependency still failing; will re-read", consumer=owner.name,
                    offset=at.offset, error=repr(error))
        owner._count("redeliver")
        self.pending.clear()
        self.after.clear()
        await asyncio.sleep(owner.retry.max_delay_s)
        self.failed = None
        self.trouble.clear()


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc] # aiokafka is untyped: its base is Any
    def __init__(self, owner: GroupConsumer) -> None:
        self.owner = owner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        # Finish and commit what was started before another member takes the partitions over.
        if self.owner.pipeline is not None:
            await self.owner.pipeline.settle()
        await self.owner.committer.flush()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.owner.position_fresh(assigned)


class GroupConsumer:
    """One consumer group member on one topic, with a single-message or a batch handler.

    Built by ``Messaging.consume`` / ``Messaging.consume_batch`` (started with the messaging
    object), or directly and driven by :meth:`run` (backfills: a start position for a group
    with no committed offsets, a rate limit, a stop at the end offsets seen at start)."""

    def __init__(self, messaging: Messaging, topic: str, *, group_id: str, spec: Topic,
                 handler: Handler | None = None, batch_handler: BatchHandler | None = None,
                 batch_max: int = 500, wait_ms: int = 50, auto_offset_reset: str = "earliest",
                 retry: RetryPolicy | None = None, max_per_second: float | None = None,
                 start: StartAt | None = None, stop_at_end: bool = False,
                 client_id: str | None = None, concurrency: int = 1) -> None:
        if (handler is None) == (batch_handler is None):
            raise TypeError("give exactly one of handler / batch_handler")
        self.m, self.topic, self.group_id, self.spec = messaging, topic, group_id, spec
        self.handler, self.batch_handler = handler, batch_handler
        self.batch_max, self.wait_ms = batch_max, wait_ms
        self.concurrency = max(1, concurrency)
        self.retry = retry or messaging.retry
        self.max_per_second, self.start_at, self.stop_at_end = max_per_second, start, stop_at_end
        self.name = f"{group_id}<-{topic}"
        self.progress = Progress()
        self.consumer = messaging.kafka.consumer(
            client_id or messaging.producer, group_id, auto_offset_reset=auto_offset_reset,
            max_poll_records=batch_max, fetch_max_wait_ms=messaging.fetch_max_wait_ms)
        self.committer = _Committer(self.consumer, self.name, messaging.commit_interval_s)
        self.pipeline = _Pipeline(self, handler) if handler is not None and self.concurrency > 1 \
            else None
        self.started = asyncio.Event()
        self._connected = False
        self._counters: dict[str, Any] = {}  # metric children, looked up once
        self._timer: Any = None

    # -- lifecycle ----------------------------------------------------------------------------
    async def connect(self) -> None:
        if self._connected:
            return
        await self.consumer.start()
        self._connected = True
        # A topic created a moment ago may not be in the broker's metadata yet; subscribing
        # then would wait for the next metadata refresh (minutes), so look for it first.
        with contextlib.suppress(TimeoutError):
            await _partitions(self.consumer, self.topic, timeout_s=10)
        self.consumer.subscribe([self.topic], listener=_Rebalance(self))
        if self.stop_at_end:
            parts = await _partitions(self.consumer, self.topic)
            self.progress.end_offsets = await self.consumer.end_offsets(parts)
        self.started.set()

    async def run(self, stop: asyncio.Event) -> Progress:
        """Consume until ``stop`` is set (or, with ``stop_at_end``, the end is reached); the
        message or batch in hand is finished and committed before it returns."""
        await self.connect()
        stopping = asyncio.ensure_future(stop.wait())
        batch: dict[TopicPartition, list[Any]] = {}
        try:
            while not stop.is_set():
                # Right after a batch, what the fetcher holds already is taken without waiting
                # (no task, no timer): under load that is nearly every batch. Otherwise wait
                # for records, and let the stop cut that wait short.
                if batch:
                    batch = {tp: recs for tp, recs in (await self.consumer.getmany(
                        timeout_ms=0, max_records=self.batch_max)).items() if recs}
                if not batch:
                    fetch = asyncio.ensure_future(
                        self.consumer.getmany(timeout_ms=self.wait_ms, max_records=self.batch_max))
                    waits = [fetch, stopping]
                    if self.pipeline is not None:  # a message may fail after its batch was read
                        waits.append(asyncio.ensure_future(self.pipeline.trouble.wait()))
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    if self.pipeline is not None:
                        waits[2].cancel()
                    if not fetch.done():  # stopped (nothing in hand) or a message failed
                        fetch.cancel()
                        if stop.is_set() or self.pipeline is None:
                            break
                        await self.pipeline.recover()
                        continue
                    batch = {tp: recs for tp, recs in fetch.result().items() if recs}
                if batch:
                    if self.progress.first_batch_at is None:
                        self.progress.first_batch_at = time.monotonic()
                    if self.pipeline is not None:
                        await self.pipeline.dispatch(await self._decode(batch), batch, stop)
                        self.progress.batches += 1
                        await self.pipeline.recover()
                    else:
                        await self._process(batch)
                else:
                    for tp in self.consumer.assignment():
                        self.progress.positions[tp] = await self.consumer.position(tp)
                if self.stop_at_end and self._at_end():
                    break
            return self.progress
        finally:
            stopping.cancel()
            try:
                if self.pipeline is not None:  # the started messages finish, then commit
                    await self.pipeline.settle()
                await self.committer.flush()
            finally:
                await self.consumer.stop()
                self._connected = False

    async def position_fresh(self, assigned: Any) -> None:
        if self.start_at is None:
            return
        fresh = [tp for tp in assigned if await self.consumer.committed(tp) is None]
        if not fresh:
            return  # resuming: committed offsets win over a start position
        ends = await self.consumer.end_offsets(fresh)
        if self.start_at.time is not None:
            found = await self.consumer.offsets_for_times(
                {tp: int(self.start_at.time.timestamp() * 1000) for tp in fresh})
            for tp in fresh:
                hit = found.get(tp)
                self.consumer.seek(tp, hit.offset if hit is not None else ends[tp])
        elif self.start_at.offset is not None:
            for tp in fresh:
                self.consumer.seek(tp, min(self.start_at.offset, ends[tp]))

    def _at_end(self) -> bool:
        assigned = self.consumer.assignment()
        return bool(assigned) and all(self.progress.positions.get(tp, -1) >= end
                                      for tp, end in self.progress.end_offsets.items()
                                      if tp in assigned)

    # -- one fetched batch --------------------------------------------------------------------
    def _count(self, outcome: str, n: int = 1) -> None:
        if n > 0:
            counter = self._counters.get(outcome)
            if counter is None:  # a metric child lookup takes a lock: once per outcome
                from attesta_platform.messaging import MESSAGES_CONSUMED

                counter = self._counters[outcome] = MESSAGES_CONSUMED.labels(
                    self.group_id, self.topic, outcome)
            counter.inc(n)

    async def timed(self, handler: Handler, item: Incoming) -> None:
        """One handler call, its time observed."""
        if self._timer is None:
            from attesta_platform.messaging import HANDLER_SECONDS

            self._timer = HANDLER_SECONDS.labels(self.group_id, self.topic)
        started = time.monotonic()
        try:
            await handler(item.envelope, item.delivery)
        finally:
            self._timer.observe(time.monotonic() - started)

    async def _decode(self, batch: dict[TopicPartition, list[Any]]) -> list[Incoming]:
        from attesta_platform.messaging import UndecodableMessage, decode, delivery_of

        items: list[Incoming] = []
        for recs in batch.values():
            for rec in recs:
                delivery = delivery_of(rec)
                if rec.value is None:  # a tombstone: no event to handle
                    self._count("tombstone")
                    continue
                try:
                    items.append(Incoming(decode(self.spec, delivery.value), delivery))
                except UndecodableMessage as exc:
                    await self._dead_letter(delivery, str(exc), 1)
        return items

    async def _process(self, batch: dict[TopicPartition, list[Any]]) -> None:
        t0 = time.monotonic()
        items = await self._decode(batch)
        done = {tp: recs[-1].offset + 1 for tp, recs in batch.items()}
        if self.batch_handler is not None:
            ok = await self._handle_batch(items, batch)
        else:
            ok = await self._handle_each(items, batch)
        if not ok:
            return  # sought back: the rest is read again after a pause
        self.committer.mark(done)
        self.progress.positions.update(done)
        self.progress.processed += sum(len(r) for r in batch.values())
        self.progress.batches += 1
        if self.max_per_second:  # backfill: leave room for live traffic
            floor = sum(len(r) for r in batch.values()) / self.max_per_second - (time.monotonic() - t0)
            if floor > 0:
                await asyncio.sleep(floor)

    async def _handle_each(self, items: list[Incoming], batch: dict[TopicPartition, list[Any]]) -> bool:
        """One handler call per message, one after the other (``concurrency`` 1; more runs in
        :class:`_Pipeline`). The batch's offsets are committed once every message is done."""
        assert self.handler is not None
        for index, item in enumerate(items):
            outcome = await attempt_with_policy(
                functools.partial(self.timed, self.handler, item), self.retry, self.name)
            if outcome[0] is Decision.DEAD_LETTER:
                await self._dead_letter(item.delivery, outcome[1], outcome[2])
            elif outcome[0] is None:
                self._count("processed")
            else:  # REREAD: commit each partition up to its first message not done, read it again
                marks: dict[TopicPartition, int] = {}
                for tp, recs in batch.items():
                    left = [i.delivery.offset for i in items[index:]
                            if (i.delivery.topic, i.delivery.partition) == (tp.topic, tp.partition)]
                    marks[tp] = left[0] if left else recs[-1].offset + 1
                    self.consumer.seek(tp, marks[tp])
                self.committer.mark(marks)
                log.warning("dependency still failing; will re-read", consumer=self.name,
                            offset=item.delivery.offset, error=repr(outcome[1]))
                self._count("redeliver")
                await asyncio.sleep(self.retry.max_delay_s)
                return False
        return True

    async def _handle_batch(self, items: list[Incoming], batch: dict[TopicPartition, list[Any]]) -> bool:
        assert self.batch_handler is not None
        handler = self.batch_handler
        if not items:
            return True
        outcome = await attempt_with_policy(lambda: handler(items), self.retry, self.name)
        if outcome[0] is None:
            _, rejected, attempts = outcome
            for item, reason in rejected:
                await self._dead_letter(item.delivery, PermanentError(reason), attempts)
            self._count("processed", len(items) - len(rejected))
            return True
        if outcome[0] is Decision.REREAD:
            await self._reread(batch, outcome[1], items)
            return False
        log.warning("batch failed; retrying one by one", consumer=self.name, error=repr(outcome[1]))
        for item in items:
            outcome = await attempt_with_policy(functools.partial(handler, [item]), self.retry,
                                                self.name)
            if outcome[0] is None:
                _, rejected, attempts = outcome
                for it, reason in rejected:
                    await self._dead_letter(it.delivery, PermanentError(reason), attempts)
                if not rejected:
                    self._count("processed")
            elif outcome[0] is Decision.REREAD:
                await self._reread(batch, outcome[1], items, at=item.delivery)
                return False
            else:  # DEAD_LETTER
                await self._dead_letter(item.delivery, outcome[1], outcome[2])
        return True

    async def _reread(self, batch: dict[TopicPartition, list[Any]], error: BaseException | Any,
                      items: list[Incoming], at: Delivery | None = None) -> None:
        """Attempts spent on a transient error: seek each partition back to its first message
        a handler has to see again (``at``'s partition to ``at``: the ones before it were
        handled one by one; dead-lettered bytes before it are done), commit nothing, pause."""
        log.warning("dependency still failing; will re-read the batch", consumer=self.name,
                    error=repr(error))
        for tp, recs in batch.items():
            if at is not None and (tp.topic, tp.partition) == (at.topic, at.partition):
                self.consumer.seek(tp, at.offset)
                continue
            mine = [i.delivery.offset for i in items if i.delivery.partition == tp.partition]
            self.consumer.seek(tp, mine[0] if mine else recs[-1].offset + 1)
        self._count("redeliver")
        await asyncio.sleep(self.retry.max_delay_s)

    async def _dead_letter(self, delivery: Delivery, reason: BaseException | str, attempts: int) -> None:
        log.warning("dead-lettering message", consumer=self.group_id, topic=delivery.topic,
                    offset=delivery.offset, reason=str(reason))
        await self.m.dead_letter(self.group_id, delivery, reason, attempts)
        self.progress.dead_lettered += 1
        self._count("dead_lettered")


async def _partitions(consumer: AIOKafkaConsumer, topic: str, timeout_s: float = 30.0) -> list[TopicPartition]:
    deadline = time.monotonic() + timeout_s
    while True:
        # A fresh metadata fetch: the consumer's cache knows no topic it is not assigned.
        metadata = await consumer._client.fetch_all_metadata()  # noqa: SLF001 - no public API
        parts = metadata.partitions_for_topic(topic)
        if parts:
            return [TopicPartition(topic, p) for p in sorted(parts)]
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no partitions after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


# A replay handler gets the topic's latest records in order: (key, envelope or None for a
# tombstone, delivery). It raises like any handler; decide() applies.
ReplayItem = tuple[str, "Envelope[Any] | None", "Delivery"]
ReplayHandler = Callable[[Sequence[ReplayItem]], Awaitable[list[tuple[ReplayItem, str]]]]


class CompactedReplay:
    """Read a compacted topic from the beginning, without a consumer group, then follow it.

    Every instance sees every record (a shared group would split the partitions between
    instances) and each start replays the whole topic, so no offset is committed. Tombstones
    (null values) reach the handler as ``(key, None, delivery)``: the entity was deleted.
    ``caught_up`` is set once the end offsets seen at start are reached."""

    def __init__(self, messaging: Messaging, topic: str, *, spec: Topic, name: str,
                 handler: ReplayHandler, max_records: int = 256, client_id: str | None = None,
                 dead_letters: bool = True) -> None:
        self.dead_letters = dead_letters
        self.m, self.topic, self.spec, self.name, self.handler = messaging, topic, spec, name, handler
        self.consumer = messaging.kafka.consumer(client_id or name, None, max_poll_records=max_records)
        self.max_records = max_records
        self.end_at_start: dict[TopicPartition, int] = {}
        self.caught_up = asyncio.Event()
        self.read = 0
        self.dead_lettered = 0

    async def start(self, timeout_s: float = 30.0) -> None:
        await self.consumer.start()
        try:
            parts = await _partitions(self.consumer, self.topic, timeout_s)
            self.consumer.assign(parts)
            await self.consumer.seek_to_beginning(*parts)
            self.end_at_start = await self.consumer.end_offsets(parts)
        except BaseException:
            await self.consumer.stop()
            raise
        if not any(self.end_at_start.values()):
            self.caught_up.set()

    async def stop(self) -> None:
        await self.consumer.stop()

    async def progress(self) -> tuple[int, int]:
        """(records read, records that existed at start) over all partitions."""
        done = total = 0
        for tp, end in self.end_at_start.items():
            total += end
            done += min(await self.consumer.position(tp), end)
        return done, total

    async def _at_end(self) -> bool:
        for tp, end in self.end_at_start.items():
            if await self.consumer.position(tp) < end:
                return False
        return True

    async def poll(self, timeout_ms: int = 500) -> int:
        """Read and handle one batch; returns how many records it held."""
        from attesta_platform.messaging import MESSAGES_CONSUMED, UndecodableMessage, decode, delivery_of

        got = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=self.max_records)
        items: list[ReplayItem] = []
        for tp in sorted(got, key=lambda t: t.partition):
            for rec in got[tp]:
                delivery = delivery_of(rec)
                key = rec.key.decode("utf-8", "replace") if rec.key is not None else ""
                if rec.value is None:
                    if key:
                        items.append((key, None, delivery))
                    MESSAGES_CONSUMED.labels(self.name, self.topic, "tombstone").inc()
                    continue
                try:
                    items.append((key, decode(self.spec, delivery.value), delivery))
                except UndecodableMessage as exc:
                    await self._dead_letter(delivery, str(exc), 1)
        n = sum(len(r) for r in got.values())
        self.read += n
        if items:
            await self._handle(items)
        if not self.caught_up.is_set() and await self._at_end():
            self.caught_up.set()
        return n

    async def _handle(self, items: list[ReplayItem]) -> None:
        """No offsets to hold back: a transient failure is retried until it passes (the
        batch is held, so nothing read is skipped); anything else is retried one record at a
        time and the failing records are dead-lettered."""
        while True:
            outcome = await attempt_with_policy(
                lambda: self.handler(items), self.m.retry, f"{self.name}<-{self.topic}")
            if outcome[0] is not Decision.REREAD:
                break
            log.warning("dependency still failing; holding the batch", consumer=self.name,
                        error=repr(outcome[1]))
            await asyncio.sleep(self.m.retry.max_delay_s)
        if outcome[0] is None:
            _, rejected, attempts = outcome
            for rejected_item, reason in rejected:
                await self._dead_letter(rejected_item[2], PermanentError(reason), attempts)
            return
        for item in items:
            while True:
                outcome = await attempt_with_policy(
                    functools.partial(self.handler, [item]), self.m.retry,
                    f"{self.name}<-{self.topic}")
                if outcome[0] is not Decision.REREAD:
                    break
                await asyncio.sleep(self.m.retry.max_delay_s)
            if outcome[0] is Decision.DEAD_LETTER:
                await self._dead_letter(item[2], outcome[1], outcome[2])
            elif outcome[0] is None:
                _, rejected, attempts = outcome
                for it, reason in rejected:
                    await self._dead_letter(it[2], PermanentError(reason), attempts)

    async def _dead_letter(self, delivery: Delivery, reason: BaseException | str, attempts: int) -> None:
        from attesta_platform.messaging import MESSAGES_CONSUMED

        self.dead_lettered += 1
        if not self.dead_letters:
            return
        log.warning("dead-lettering record", consumer=self.name, topic=delivery.topic,
                    offset=delivery.offset, reason=str(reason))
        await self.m.dead_letter(self.name, delivery, reason, attempts)
        MESSAGES_CONSUMED.labels(self.name, self.topic, "dead_lettered").inc()

    async def run(self, stop: asyncio.Event | None = None, on_idle: Callable[[], Awaitable[None]] | None = None) -> None:
        """Poll until ``stop``; ``on_idle`` runs after a poll that read nothing."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            if not await self.poll() and on_idle is not None:
                await on_idle()
