"""The one consume path: group consumers (one message or one batch per handler call) and the
group-less replay of a compacted topic. Services never loop over Kafka themselves.

Three parts, each injected, none holding the whole ``Messaging``: envelope handling
(``attesta_platform.envelopes``: bytes to a checked envelope), the outcome policy
(``attesta_platform.outcomes``: one function says commit / retry / re-read / split /
dead-letter) and the dead-letter port (``outcomes.DeadLetters``). A consumer is given its
Kafka client, its retry policy and its dead-letter port by whoever builds it (``Messaging``).

What a group consumer guarantees (docs/foundation.md has the tests):
- an offset is committed only after the handler's effect is durable, or after the message was
  dead-lettered. Commits are *pipelined*: the completed offsets are handed to a background
  committer and the next message is processed meanwhile (a crash before the commit lands means
  a redelivery, which the effect's idempotency absorbs: at-least-once, as before). SIGTERM
  finishes the message or batch in hand, then waits for its commit before leaving the group;
- ONE routine, :func:`outcomes.outcome`, says what happens after a handler call, for single
  and batch handlers alike; :func:`run_one` and :func:`run_batch` are the only places that act
  on it;
- a single-message handler with ``concurrency`` > 1 runs messages of different keys at once,
  one key's messages in order, and takes the next batch while the last one's messages still
  wait for their effects (:class:`_Pipeline`): each partition commits up to its oldest
  message not done;
- a batch handler gets one call (one transaction) per fetched batch and returns the items it
  rejects with a reason; a batch that fails with a non-transient error is retried one message
  at a time, so only the poison message is dead-lettered. With ``overlap`` > 1, up to that
  many batches are in flight at once, never two of one partition (:class:`_Lanes`): one
  batch's CPU work runs while another's database work waits, each partition in order, each
  offset committed after its own batch's outputs;
- undecodable bytes (not UTF-8, not a valid envelope for the topic, newer schema) are
  dead-lettered with their reason before any handler sees them; tombstones are skipped
  (group consumers) or handed on as deletions (replays).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from attesta_contracts import Envelope, Topic
from attesta_platform.envelopes import Delivery, UndecodableMessage, decode, delivery_of
from attesta_platform.errors import PermanentError
from attesta_platform.logs import get_logger
from attesta_platform.messaging_metrics import HANDLER_RETRIES, HANDLER_SECONDS, MESSAGES_CONSUMED
from attesta_platform.outcomes import Decision as Decision
from attesta_platform.outcomes import DeadLetters, RetryPolicy, outcome, resume_points
from attesta_platform.outcomes import decide as decide

log = get_logger("attesta.consuming")
T = TypeVar("T")
X = TypeVar("X")


@dataclass(frozen=True)
class Incoming:
    """A decoded message and where it came from."""

    envelope: Envelope[Any]
    delivery: Delivery


Handler = Callable[[Envelope[Any], Delivery], Awaitable[None]]
# A batch handler returns the items it rejects (with a reason): they are dead-lettered.
BatchHandler = Callable[[Sequence[Incoming]], Awaitable[list[tuple[Incoming, str]]]]


@dataclass(frozen=True)
class Attempted(Generic[T]):
    """How a handler call ended once the retries in place are over: ``decision`` is COMMIT
    (``result`` holds what it returned), REREAD, SPLIT or DEAD_LETTER (``error`` says why)."""

    decision: Decision
    attempts: int
    result: T | None = None
    error: BaseException | None = None


async def attempt_with_policy(call: Callable[[], Awaitable[T]], policy: RetryPolicy,
                              what: str, messages: int = 1) -> Attempted[T]:
    """Call until it returns or :func:`outcomes.outcome` stops retrying in place."""
    attempt = 0
    while True:
        attempt += 1
        try:
            result = await call()
        except Exception as exc:  # noqa: BLE001 - every error is classified by outcome()
            decision = outcome(exc, attempt, policy, messages)
            if decision is not Decision.RETRY:
                return Attempted(decision, attempt, error=exc)
            HANDLER_RETRIES.labels(*what.split("<-", 1)).inc()
            log.info("transient error, retrying", consumer=what, attempt=attempt, error=repr(exc))
            await asyncio.sleep(policy.delay(attempt))
        else:
            return Attempted(Decision.COMMIT, attempt, result=result)


DeadLetter = Callable[[X, "BaseException | str", int], Awaitable[None]]


async def run_one(call: Callable[[], Awaitable[None]], policy: RetryPolicy, what: str,
                  dead_letter: Callable[[BaseException | str, int], Awaitable[None]]
                  ) -> Attempted[None]:
    """One message's handler call, acted on: dead-lettered when :func:`outcome` says so. The
    message is done unless the decision is REREAD."""
    done = await attempt_with_policy(call, policy, what)
    if done.decision is Decision.DEAD_LETTER:
        assert done.error is not None
        await dead_letter(done.error, done.attempts)
    return done


async def run_batch(handler: Callable[[Sequence[X]], Awaitable[list[tuple[X, str]]]],
                    items: Sequence[X], policy: RetryPolicy, what: str,
                    dead_letter: DeadLetter[X]) -> tuple[int, int | None, BaseException | None]:
    """One batch handler call over ``items``, acted on: rejected items and (after a SPLIT)
    poison items are dead-lettered. Returns (items handled, index of the first item not done
    or None when all are, the error that stopped there)."""
    first = await attempt_with_policy(functools.partial(handler, items), policy, what, len(items))
    if first.decision is Decision.COMMIT:
        for item, reason in first.result or []:
            await dead_letter(item, PermanentError(reason), first.attempts)
        return len(items) - len(first.result or []), None, None
    if first.decision is Decision.REREAD:
        return 0, 0, first.error
    if first.decision is Decision.DEAD_LETTER:  # a batch of one
        await dead_letter(items[0], first.error or "", first.attempts)
        return 0, None, None
    log.warning("batch failed; retrying one by one", consumer=what, error=repr(first.error))
    handled = 0
    for index, item in enumerate(items):
        handled_one, not_done, error = await run_batch(handler, [item], policy, what, dead_letter)
        if not_done is not None:
            return handled, index, error
        handled += handled_one
    return handled, None, None


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


async def _settle(running: set[asyncio.Task[None]]) -> None:
    """Wait for the tasks running now; cancelled meanwhile, cancel them."""
    tasks = set(running)
    if not tasks:
        return
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        raise


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
        self.failed: tuple[Delivery, BaseException | None] | None = None
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
            done = await run_one(functools.partial(owner.timed, self.handler, item), owner.retry,
                                 owner.name, functools.partial(owner.dead_letter, item.delivery))
            if done.decision is Decision.REREAD:
                self.failed = self.failed or (item.delivery, done.error)
                self.trouble.set()
                return
            if done.decision is Decision.COMMIT:
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
        await _settle(self.running)

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


class _Lanes:
    """Batch handling with up to ``overlap`` handler calls in flight, never two on one
    partition: a partition is fetched again only once its batch is done (handled, rejected
    items dead-lettered, offsets marked for commit) or, after a REREAD, once it was sought back
    and its pause is over. So each partition's batches run in order, each commit follows its
    own batch's outputs, and one batch's CPU work runs while another's database work waits."""

    def __init__(self, owner: GroupConsumer, overlap: int) -> None:
        self.owner, self.overlap = owner, overlap
        self.busy: dict[TopicPartition, asyncio.Task[None]] = {}
        self.running: set[asyncio.Task[None]] = set()
        self.freed = asyncio.Event()
        self.crashed: BaseException | None = None

    def free(self) -> list[TopicPartition]:
        """The assigned partitions no batch holds (none while ``overlap`` batches run)."""
        if len(self.running) >= self.overlap:
            return []
        return [tp for tp in self.owner.consumer.assignment() if tp not in self.busy]

    def start(self, batch: dict[TopicPartition, list[Any]]) -> None:
        task = asyncio.create_task(self.owner._process(batch))
        for tp in batch:
            self.busy[tp] = task
        self.running.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.running.discard(task)
        for tp in [tp for tp, t in self.busy.items() if t is task]:
            del self.busy[tp]
        if not task.cancelled() and task.exception() is not None and self.crashed is None:
            self.crashed = task.exception()
        self.freed.set()

    async def settle(self) -> None:
        """Wait for every batch in flight; cancelled meanwhile, cancel them."""
        await _settle(self.running)

    async def run(self, stop: asyncio.Event, stopping: asyncio.Future[Any]) -> None:
        owner = self.owner
        while not stop.is_set():
            if self.crashed is not None:
                raise self.crashed
            free = self.free()
            self.freed.clear()  # after free(): a batch ending from here on wakes the wait
            freed = asyncio.ensure_future(self.freed.wait())
            waits: list[asyncio.Future[Any]] = [stopping, freed]
            fetch: asyncio.Future[Any] | None = None
            if free:
                fetch = asyncio.ensure_future(owner.consumer.getmany(
                    *free, timeout_ms=owner.wait_ms, max_records=owner.batch_max))
                waits.append(fetch)
            try:
                # No fetch (no partition assigned yet, or every one busy): look again after
                # ``wait_ms`` at the latest, so a new assignment is noticed without a batch
                # ending first.
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED,
                                   timeout=None if fetch is not None else max(owner.wait_ms, 10) / 1000)
            finally:
                freed.cancel()
            if fetch is None or not fetch.done():  # a batch ended (or the stop): look again
                if fetch is not None:
                    fetch.cancel()
                continue
            batch = {tp: recs for tp, recs in fetch.result().items() if recs}
            if batch:
                if owner.progress.first_batch_at is None:
                    owner.progress.first_batch_at = time.monotonic()
                self.start(batch)
            else:
                for tp in free:
                    if tp not in self.busy and tp in owner.consumer.assignment():
                        owner.progress.positions[tp] = await owner.consumer.position(tp)
            if owner.stop_at_end and not self.running and owner._at_end():
                break


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc] # aiokafka is untyped: its base is Any
    def __init__(self, owner: GroupConsumer) -> None:
        self.owner = owner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        # Finish and commit what was started before another member takes the partitions over.
        if self.owner.pipeline is not None:
            await self.owner.pipeline.settle()
        if self.owner.lanes is not None:
            await self.owner.lanes.settle()
        await self.owner.committer.flush()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.owner.position_fresh(assigned)


class GroupConsumer:
    """One consumer group member on one topic, with a single-message or a batch handler.

    Built by ``Messaging.consume`` / ``Messaging.consume_batch`` (started with the messaging
    object), or ``Messaging.batch_consumer`` and driven by :meth:`run` (backfills: a start
    position for a group with no committed offsets, a rate limit, a stop at the end offsets
    seen at start). It is given its parts: the Kafka ``consumer`` (subscribed here), the retry
    ``policy`` and the ``dead_letters`` port."""

    def __init__(self, consumer: AIOKafkaConsumer, topic: str, *, group_id: str, spec: Topic,
                 retry: RetryPolicy, dead_letters: DeadLetters,
                 handler: Handler | None = None, batch_handler: BatchHandler | None = None,
                 batch_max: int = 500, wait_ms: int = 50, max_per_second: float | None = None,
                 start: StartAt | None = None, stop_at_end: bool = False, concurrency: int = 1,
                 overlap: int = 1, commit_interval_s: float = 0.0) -> None:
        if (handler is None) == (batch_handler is None):
            raise TypeError("give exactly one of handler / batch_handler")
        self.consumer, self.topic, self.group_id, self.spec = consumer, topic, group_id, spec
        self.retry, self.dead_letters = retry, dead_letters
        self.handler, self.batch_handler = handler, batch_handler
        self.batch_max, self.wait_ms = batch_max, wait_ms
        self.concurrency = max(1, concurrency)
        self.max_per_second, self.start_at, self.stop_at_end = max_per_second, start, stop_at_end
        self.name = f"{group_id}<-{topic}"
        self.progress = Progress()
        self.committer = _Committer(self.consumer, self.name, commit_interval_s)
        self.pipeline = _Pipeline(self, handler) if handler is not None and self.concurrency > 1 \
            else None
        # Overlapping batches: batch handlers only, and not under a rate limit (a backfill
        # paces itself one batch at a time).
        self.lanes = _Lanes(self, overlap) if batch_handler is not None and overlap > 1 \
            and not max_per_second else None
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
        try:
            if self.lanes is not None:
                await self.lanes.run(stop, stopping)
            else:
                await self._run_in_turn(stop, stopping)
            return self.progress
        finally:
            stopping.cancel()
            try:
                if self.pipeline is not None:  # the started messages finish, then commit
                    await self.pipeline.settle()
                if self.lanes is not None:
                    await self.lanes.settle()
                await self.committer.flush()
            finally:
                await self.consumer.stop()
                self._connected = False

    async def _run_in_turn(self, stop: asyncio.Event, stopping: asyncio.Future[Any]) -> None:
        """One fetched batch after the other (single-message handlers dispatch into
        :class:`_Pipeline` when ``concurrency`` > 1)."""
        batch: dict[TopicPartition, list[Any]] = {}
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
    def _count(self, kind: str, n: int = 1) -> None:
        if n > 0:
            counter = self._counters.get(kind)
            if counter is None:  # a metric child lookup takes a lock: once per outcome
                counter = self._counters[kind] = MESSAGES_CONSUMED.labels(
                    self.group_id, self.topic, kind)
            counter.inc(n)

    async def timed(self, handler: Handler, item: Incoming) -> None:
        """One handler call, its time observed."""
        if self._timer is None:
            self._timer = HANDLER_SECONDS.labels(self.group_id, self.topic)
        started = time.monotonic()
        try:
            await handler(item.envelope, item.delivery)
        finally:
            self._timer.observe(time.monotonic() - started)

    async def _decode(self, batch: dict[TopicPartition, list[Any]]) -> list[Incoming]:
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
                    await self.dead_letter(delivery, str(exc), 1)
        return items

    async def _process(self, batch: dict[TopicPartition, list[Any]]) -> None:
        t0 = time.monotonic()
        items = await self._decode(batch)
        if self.batch_handler is not None:
            not_done = await self._handle_batch(items)
        else:
            not_done = await self._handle_each(items)
        if not_done is not None:
            await self._reread(batch, not_done)
            return  # sought back: the rest is read again after a pause
        done = resume_points({tp: recs[-1].offset + 1 for tp, recs in batch.items()}, ())
        self.committer.mark(done)
        self.progress.positions.update(done)
        self.progress.processed += sum(len(r) for r in batch.values())
        self.progress.batches += 1
        if self.max_per_second:  # backfill: leave room for live traffic
            floor = sum(len(r) for r in batch.values()) / self.max_per_second - (time.monotonic() - t0)
            if floor > 0:
                await asyncio.sleep(floor)

    async def _handle_each(self, items: list[Incoming]) -> tuple[list[Incoming], Any] | None:
        """One handler call per message, one after the other (``concurrency`` 1; more runs in
        :class:`_Pipeline`). Returns the messages not done and why, or None when all are."""
        assert self.handler is not None
        for index, item in enumerate(items):
            done = await run_one(functools.partial(self.timed, self.handler, item), self.retry,
                                 self.name, functools.partial(self.dead_letter, item.delivery))
            if done.decision is Decision.REREAD:
                return items[index:], done.error
            if done.decision is Decision.COMMIT:
                self._count("processed")
        return None

    async def _handle_batch(self, items: list[Incoming]) -> tuple[list[Incoming], Any] | None:
        assert self.batch_handler is not None
        if not items:
            return None

        async def dead_letter(item: Incoming, reason: BaseException | str, attempts: int) -> None:
            await self.dead_letter(item.delivery, reason, attempts)

        handled, not_done, error = await run_batch(self.batch_handler, items, self.retry,
                                                   self.name, dead_letter)
        self._count("processed", handled)
        return None if not_done is None else (items[not_done:], error)

    async def _reread(self, batch: dict[TopicPartition, list[Any]],
                      not_done: tuple[list[Incoming], Any]) -> None:
        """Attempts spent on a transient error: seek each partition back to its first message
        a handler has to see again (dead-lettered and skipped records before it are done),
        commit up to there, pause."""
        left, error = not_done
        tps = {(tp.topic, tp.partition): tp for tp in batch}
        marks = resume_points({tp: recs[-1].offset + 1 for tp, recs in batch.items()},
                              ((tps[(i.delivery.topic, i.delivery.partition)], i.delivery.offset)
                               for i in left))
        for tp, offset in marks.items():
            self.consumer.seek(tp, offset)
        self.committer.mark(marks)
        log.warning("dependency still failing; will re-read", consumer=self.name,
                    offset=left[0].delivery.offset, error=repr(error))
        self._count("redeliver")
        await asyncio.sleep(self.retry.max_delay_s)

    async def dead_letter(self, delivery: Delivery, reason: BaseException | str, attempts: int) -> None:
        log.warning("dead-lettering message", consumer=self.group_id, topic=delivery.topic,
                    offset=delivery.offset, reason=str(reason))
        await self.dead_letters.dead_letter(self.group_id, delivery, reason, attempts)
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
# tombstone, delivery). It raises like any handler; outcomes.outcome() applies.
ReplayItem = tuple[str, "Envelope[Any] | None", Delivery]
ReplayHandler = Callable[[Sequence[ReplayItem]], Awaitable[list[tuple[ReplayItem, str]]]]


class CompactedReplay:
    """Read a compacted topic from the beginning, without a consumer group, then follow it.

    Every instance sees every record (a shared group would split the partitions between
    instances) and each start replays the whole topic, so no offset is committed. Tombstones
    (null values) reach the handler as ``(key, None, delivery)``: the entity was deleted.
    ``caught_up`` is set once the end offsets seen at start are reached."""

    def __init__(self, consumer: AIOKafkaConsumer, topic: str, *, spec: Topic, name: str,
                 handler: ReplayHandler, retry: RetryPolicy, dead_letters: DeadLetters | None,
                 max_records: int = 256) -> None:
        """``dead_letters`` None: a read-only tool skips undecodable records (counted)."""
        self.consumer, self.topic, self.spec, self.name = consumer, topic, spec, name
        self.handler, self.retry, self.dead_letters = handler, retry, dead_letters
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
        """No offsets to hold back: a transient failure whose attempts are spent is tried again
        after a pause from the first record not done (so nothing read is skipped); anything
        else is retried one record at a time and the failing records are dead-lettered."""
        what = f"{self.name}<-{self.topic}"

        async def dead_letter(item: ReplayItem, reason: BaseException | str, attempts: int) -> None:
            await self._dead_letter(item[2], reason, attempts)

        while items:
            _, not_done, error = await run_batch(self.handler, items, self.retry, what, dead_letter)
            if not_done is None:
                return
            log.warning("dependency still failing; holding the batch", consumer=self.name,
                        error=repr(error))
            await asyncio.sleep(self.retry.max_delay_s)
            items = items[not_done:]

    async def _dead_letter(self, delivery: Delivery, reason: BaseException | str, attempts: int) -> None:
        self.dead_lettered += 1
        if self.dead_letters is None:
            return
        log.warning("dead-lettering record", consumer=self.name, topic=delivery.topic,
                    offset=delivery.offset, reason=str(reason))
        await self.dead_letters.dead_letter(self.name, delivery, reason, attempts)
        MESSAGES_CONSUMED.labels(self.name, self.topic, "dead_lettered").inc()

    async def run(self, stop: asyncio.Event | None = None, on_idle: Callable[[], Awaitable[None]] | None = None) -> None:
        """Poll until ``stop``; ``on_idle`` runs after a poll that read nothing."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            if not await self.poll() and on_idle is not None:
                await on_idle()
