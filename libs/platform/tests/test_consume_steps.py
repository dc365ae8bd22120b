"""The outcome policy, and the real consume loop (``GroupConsumer``) crashed at each commit step
on an in-memory log: fetched -> handled -> outputs staged -> committed. After each crash a new
consumer resumes from the committed offsets; every message's effect and output happen exactly
once, only the poison and undecodable messages are dead-lettered (one dead-letter id each), and
no offset is ever committed before the outputs of the messages below it are durable. Each case
runs with batches one after the other (overlap 1) and overlapping (overlap 2 and 3)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition

from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED
from attesta_platform.consuming import GroupConsumer
from attesta_platform.envelopes import Delivery, envelope_bytes
from attesta_platform.errors import PermanentError, TransientError
from attesta_platform.outcomes import Decision, RetryPolicy, outcome, resume_points
from attesta_contracts import topic as lookup_topic

pytestmark = pytest.mark.unit

TOPIC = "steps.test"
POLICY = RetryPolicy(attempts=2, initial_delay_s=0.001, max_delay_s=0.01)


# -- the policy itself ---------------------------------------------------------------------------
def test_outcome_is_one_function_for_every_decision():
    assert outcome(None, 1, POLICY) is Decision.COMMIT
    assert outcome(None, 2, POLICY, messages=50) is Decision.COMMIT
    assert outcome(TransientError("db"), 1, POLICY) is Decision.RETRY
    assert outcome(ConnectionError("db"), 1, POLICY, messages=50) is Decision.RETRY
    assert outcome(TransientError("db"), 2, POLICY) is Decision.REREAD
    assert outcome(TransientError("db"), 2, POLICY, messages=50) is Decision.REREAD
    assert outcome(PermanentError("bad"), 1, POLICY) is Decision.DEAD_LETTER
    assert outcome(ValueError("bug"), 1, POLICY) is Decision.DEAD_LETTER
    assert outcome(ValueError("bug"), 1, POLICY, messages=2) is Decision.SPLIT


def test_resume_points_stop_at_each_partitions_first_message_not_done():
    fetched = {"p0": 10, "p1": 20, "p2": 30}  # the offset after the last record fetched
    assert resume_points(fetched, ()) == fetched
    assert resume_points(fetched, [("p1", 17), ("p1", 15), ("p0", 9), ("p1", 18)]) == \
        {"p0": 9, "p1": 15, "p2": 30}


# -- an in-memory log and an idempotent store ----------------------------------------------------
class Crash(BaseException):
    """The process dies here (not an Exception: no handler, retry or dead letter sees it)."""


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass
class Log:
    partitions: dict[int, list[Record]]
    committed: dict[int, int] = field(default_factory=dict)
    commits: int = 0
    crash_at_commit: int | None = None  # the n-th commit lands, then the process dies
    dead: bool = False

    def end(self) -> dict[int, int]:
        return {p: len(r) for p, r in self.partitions.items()}


class Metadata:
    def __init__(self, log: Log) -> None:
        self.log = log

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(self.log.partitions)


class Client:
    def __init__(self, log: Log) -> None:
        self.log = log

    async def fetch_all_metadata(self) -> Metadata:
        return Metadata(self.log)


class FakeConsumer:
    """The part of AIOKafkaConsumer the consume path uses. Like aiokafka, one fetch drains one
    partition's buffer (``chunk`` records at most), taking the partitions in turn."""

    def __init__(self, log: Log, store: Store, chunk: int = 4) -> None:
        self.log, self.store, self.chunk = log, store, chunk
        self._client = Client(log)
        self.positions: dict[TopicPartition, int] = {}
        self.turn = 0

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def subscribe(self, topics: list[str], listener: Any) -> None:
        for p in self.log.partitions:
            self.positions[TopicPartition(TOPIC, p)] = self.log.committed.get(p, 0)

    def assignment(self) -> set[TopicPartition]:
        return set(self.positions)

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int = 500) -> dict[TopicPartition, list[Record]]:
        wanted = sorted(partitions or self.positions, key=lambda tp: tp.partition)
        for i in range(len(wanted)):
            tp = wanted[(self.turn + i) % len(wanted)]
            recs = self.log.partitions[tp.partition][self.positions[tp]:][:min(self.chunk, max_records)]
            if recs:
                self.turn += 1
                self.positions[tp] = recs[-1].offset + 1
                return {tp: recs}
        await asyncio.sleep(timeout_ms / 1000)
        return {}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    async def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.log.dead:
            raise ConnectionError("the process is gone")
        for tp, offset in offsets.items():
            self.store.check_commit(tp.partition, offset)
            self.log.committed[tp.partition] = offset
        self.log.commits += 1
        if self.log.commits == self.log.crash_at_commit:
            self.log.dead = True  # after the commit landed: nothing more reaches the log


class LateFakeConsumer(FakeConsumer):
    """Partitions assigned a moment after the subscription, as a real group join does."""

    def subscribe(self, topics: list[str], listener: Any) -> None:
        asyncio.get_running_loop().call_later(0.05, super().subscribe, topics, listener)


@dataclass
class Store:
    """A database: the effect, the inbox claim and the outbox row of a message are written in
    one transaction (a redelivered message changes nothing)."""

    log: Log
    effects: Counter[str] = field(default_factory=Counter)
    outbox: Counter[str] = field(default_factory=Counter)
    durable_order: dict[int, list[int]] = field(default_factory=dict)  # offsets, per partition
    dead_letters: Counter[tuple[str, int, int]] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    calls: int = 0
    crash_step: str | None = None
    crash_call: int = 2  # the second handler call that reaches the step
    reached: Counter[str] = field(default_factory=Counter)
    flaky_left: int = 3  # the first calls that see "flaky" fail transiently
    seen: list[tuple[int, str]] = field(default_factory=list)  # (incarnation, request id)
    incarnation: int = 0
    crashed_batch: list[str] = field(default_factory=list)
    durable_at_crash: set[str] = field(default_factory=set)

    def durable(self, partition: int, offset: int) -> bool:
        rec = self.log.partitions[partition][offset]
        if rec.value is None or (TOPIC, partition, offset) in self.dead_letters:
            return True
        rid = json.loads(rec.value)["payload"]["request_id"]
        return self.effects[rid] > 0 and self.outbox[rid] > 0

    def check_commit(self, partition: int, offset: int) -> None:
        """The commit-after-outputs rule: everything below a committed offset is done."""
        for o in range(offset):
            if not self.durable(partition, o):
                self.violations.append(f"committed {partition}@{offset} before {o} was durable")

    def crash_here(self, step: str, batch: list[str]) -> None:
        self.reached[step] += 1
        if self.crash_step == step and self.reached[step] == self.crash_call \
                and self.incarnation == 0:
            self.log.dead = True
            self.crashed_batch = batch
            self.durable_at_crash = set(self.effects)
            raise Crash(step)

    async def dead_letter(self, consumer: str, delivery: Delivery, exc: BaseException | str,
                          attempts: int) -> None:
        if self.log.dead:
            raise Crash("the process is gone")
        self.dead_letters[(delivery.topic, delivery.partition, delivery.offset)] += 1

    async def handle(self, items: list[Any]) -> list[tuple[Any, str]]:
        if self.log.dead:
            raise Crash("the process is gone")
        self.calls += 1
        rids = [i.envelope.payload.request_id for i in items]
        self.seen.extend((self.incarnation, r) for r in rids)
        self.crash_here("fetched", rids)
        if "flaky" in rids and self.flaky_left > 0:
            self.flaky_left -= 1
            raise TransientError("database away")
        if any(r.startswith("poison") for r in rids):
            raise ValueError("poison breaks the whole batch")
        staged = [i for i in items if self.effects[i.envelope.payload.request_id] == 0]
        rejected = [(i, "rule says no") for i in staged
                    if i.envelope.payload.request_id.startswith("reject")]
        staged = [i for i in staged if not i.envelope.payload.request_id.startswith("reject")]
        await asyncio.sleep(0.002)  # the database round trip: another batch's CPU runs meanwhile
        self.crash_here("handled", rids)  # the transaction never committed: nothing is kept
        for i in staged:
            rid = i.envelope.payload.request_id
            self.effects[rid] += 1
            self.outbox[rid] += 1
            self.durable_order.setdefault(i.delivery.partition, []).append(i.delivery.offset)
        self.crash_here("staged", rids)  # committed in the database, the handler never returned
        return rejected


def build_log(per_partition: int = 12) -> tuple[Log, set[str], set[tuple[str, int, int]]]:
    parts: dict[int, list[Record]] = {}
    good: set[str] = set()
    bad: set[tuple[str, int, int]] = set()
    for p in range(3):
        recs = parts.setdefault(p, [])
        for i in range(per_partition):
            offset = len(recs)
            rid = f"m{p}-{i}"
            if (p, i) == (0, 5):
                rid = "poison-0"
            elif (p, i) == (1, 2):
                rid = "reject-1"
            elif (p, i) == (2, 6):
                rid = "flaky"
            if (p, i) == (1, 7):
                value: bytes | None = b"\xff not json"
            elif (p, i) == (2, 3):
                value = None  # a tombstone
            else:
                value = envelope_bytes(CHAT_REQUESTED, ChatRequested(request_id=rid, question="q"),
                                       producer="t", correlation_id=rid, event_id=uuid.uuid4())
            recs.append(Record(TOPIC, p, offset, f"k{p}".encode(), value))
            if value is None:
                continue
            if rid.startswith(("poison", "reject")) or value.startswith(b"\xff"):
                bad.add((TOPIC, p, offset))
            else:
                good.add(rid)
    return Log(parts), good, bad


async def incarnation(log: Log, store: Store, overlap: int,
                      kafka: type[FakeConsumer] = FakeConsumer) -> None:
    """One consumer process: runs until it dies or everything is committed."""
    consumer = GroupConsumer(kafka(log, store), TOPIC, group_id="g",  # type: ignore[arg-type]
                             spec=lookup_topic(CHAT_REQUESTED), retry=POLICY, dead_letters=store,
                             batch_handler=store.handle, batch_max=500, wait_ms=5,
                             overlap=overlap)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    for _ in range(2000):
        if log.dead or log.committed == log.end() or task.done():
            break
        await asyncio.sleep(0.005)
    stop.set()
    try:
        await asyncio.wait_for(task, 10)
    except Crash:
        pass


@pytest.mark.parametrize("overlap", [1, 2, 3])
@pytest.mark.parametrize("step", ["fetched", "handled", "staged", "committed"])
async def test_a_crash_at_each_step_loses_nothing_and_doubles_nothing(step: str, overlap: int):
    log, good, bad = build_log()
    store = Store(log)
    if step == "committed":
        log.crash_at_commit = 2
    else:
        store.crash_step = step
    await incarnation(log, store, overlap)
    assert log.dead, "the crash did not happen"
    committed_at_crash = dict(log.committed)
    durable_at_crash = set(store.effects) if step == "committed" else store.durable_at_crash
    log.dead = False
    store.incarnation = 1
    await incarnation(log, store, overlap)

    assert log.committed == log.end()
    assert store.violations == []  # no offset committed before its outputs were durable
    assert set(store.effects) == good  # nothing lost ...
    assert set(store.effects.values()) == {1} and set(store.outbox.values()) == {1}  # ... or doubled
    assert set(store.dead_letters) == bad  # only the poison, rejected and undecodable ones
    for partition, offsets in store.durable_order.items():
        assert offsets == sorted(offsets), f"partition {partition} out of order"
    again = {rid for n, rid in store.seen if n == 1}
    if step in ("fetched", "handled"):  # nothing of the batch was kept: it is redelivered
        assert store.crashed_batch and set(store.crashed_batch) <= again
        assert not set(store.crashed_batch) & durable_at_crash
    if step == "staged":  # kept, not committed: redelivered, and the inbox absorbs it
        assert set(store.crashed_batch) <= again
        assert {r for r in store.crashed_batch
                if r != "flaky" and not r.startswith(("poison", "reject"))} <= durable_at_crash
    # Whatever was committed before the crash is never handed to a handler again.
    for partition, offset in committed_at_crash.items():
        for rec in log.partitions[partition][:offset]:
            if rec.value is not None and not rec.value.startswith(b"\xff"):
                assert json.loads(rec.value)["payload"]["request_id"] not in again


@pytest.mark.parametrize("overlap", [1, 3])
async def test_no_crash_every_message_once_in_partition_order(overlap: int):
    log, good, bad = build_log(per_partition=40)
    store = Store(log)
    await incarnation(log, store, overlap)
    assert log.committed == log.end()
    assert store.violations == []
    assert set(store.effects) == good and set(store.effects.values()) == {1}
    assert set(store.dead_letters) == bad and set(store.dead_letters.values()) == {1}
    for offsets in store.durable_order.values():
        assert offsets == sorted(offsets)


@pytest.mark.parametrize("overlap", [1, 3])
async def test_partitions_assigned_after_the_start_are_consumed(overlap: int):
    """The consume loop starts before the group has given it partitions: it must notice them
    when they come, not wait for a batch to end that never started."""
    log, good, bad = build_log()
    store = Store(log)
    await incarnation(log, store, overlap, LateFakeConsumer)
    assert log.committed == log.end()
    assert set(store.effects) == good and set(store.effects.values()) == {1}
    assert set(store.dead_letters) == bad
