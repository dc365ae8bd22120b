"""Traffic for the cluster's fault tests: the project's own producer (acks=all, idempotent)
writing numbered records to one partition and a group consumer reading them, with the times of
every acknowledgement and receipt, so a test can say what was lost, doubled or reordered around a
fault, and how long the cluster took to acknowledge again."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import NewTopic

BOUND_S = 90.0  # every wait gives up after this


@dataclass
class Traffic:
    acked: dict[int, float] = field(default_factory=dict)  # record number -> ack time
    failed: list[int] = field(default_factory=list)  # sends that raised (not acknowledged)
    consumed: list[tuple[int, float]] = field(default_factory=list)  # (record, receive time)

    def acked_after(self, t: float) -> int:
        return sum(1 for at in self.acked.values() if at > t)

    def first_ack_after(self, t: float) -> float:
        return min(at for at in self.acked.values() if at > t) - t


async def wait_for(what: str, probe: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool],
                   bound_s: float = BOUND_S) -> Any:
    """Poll ``probe()`` until ``ok(result)``; a failing probe (its broker just died) is retried."""
    deadline, last = time.monotonic() + bound_s, None
    while time.monotonic() < deadline:
        try:
            last = await probe()
            if ok(last):
                return last
        except Exception as exc:  # noqa: BLE001 - retried until the bound
            last = exc
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what}: not within {bound_s:.0f}s (last: {last!r})")


async def partition(admin: Any, topic: str) -> dict[str, Any]:
    described = await asyncio.wait_for(admin.describe_topics([topic]), 10)
    result: dict[str, Any] = described[0]["partitions"][0]
    return result


async def create_topic(admin: Any, topic: str, min_insync: int = 2) -> None:
    """One partition, three replicas; wait until it has a leader and all three in sync."""
    resp = await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                               topic_configs={"min.insync.replicas": str(min_insync)})])
    assert [t[1] for t in resp.topic_errors] == [0]
    await wait_for("a leader and three replicas in sync", lambda: partition(admin, topic),
                   lambda p: p["leader"] >= 0 and len(p["isr"]) == 3)


def new_topic_name() -> str:
    return f"cluster-test-{uuid.uuid4().hex[:12]}"


async def produce(options: Any, topic: str, traffic: Traffic, stop: asyncio.Event,
                  resend: bool = False) -> None:
    """A steady stream, so a fault lands in the middle of it. With ``resend`` a refused record
    is sent again until acknowledged (what the outbox does); otherwise the next one is sent."""
    producer = options.producer("cluster-fault-test")
    try:
        await producer.start()
        i = 0
        while not stop.is_set():
            try:
                await producer.send_and_wait(topic, str(i).encode(), key=b"k")
                traffic.acked[i] = time.monotonic()
            except Exception:  # noqa: BLE001 - not acknowledged: may or may not be stored
                traffic.failed.append(i)
                await asyncio.sleep(0.1)
                if resend:
                    continue
            i += 1
            await asyncio.sleep(0.005)
    finally:
        await producer.stop()


async def consume(options: Any, topic: str, traffic: Traffic, stop: asyncio.Event) -> None:
    consumer = options.consumer("cluster-fault-test", f"cluster-fault-test-{uuid.uuid4().hex[:8]}")
    consumer.subscribe([topic])
    try:
        await consumer.start()
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=300)
            now = time.monotonic()
            traffic.consumed += [(int(m.value), now) for ms in batch.values() for m in ms]
    finally:
        await consumer.stop()


async def read_all(options: Any, topic: str) -> list[int]:
    """The partition from its beginning to its end, as a fresh reader sees it now."""
    consumer = options.consumer("cluster-fault-test-check", None)
    tp = TopicPartition(topic, 0)
    try:
        await consumer.start()
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[int] = []
        deadline = time.monotonic() + BOUND_S
        while await consumer.position(tp) < end and time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=500)
            out += [int(m.value) for m in batch.get(tp, [])]
        return out
    finally:
        await consumer.stop()


async def check_log(options: Any, topic: str, traffic: Traffic, resent: bool = False) -> list[int]:
    """Every acknowledged record is in the log, once, in send order; anything else there is a
    record whose send raised (stored but not acknowledged). With ``resent`` such a record may
    also appear twice (sent again after the error): the services' inboxes drop that copy."""
    log = await read_all(options, topic)
    acked = set(traffic.acked)
    assert acked <= set(log), f"acknowledged but lost: {sorted(acked - set(log))[:10]}"
    assert set(log) - acked <= set(traffic.failed)
    doubled = {r for r in log if log.count(r) > 1}
    assert doubled <= (set(traffic.failed) if resent else set()), f"written twice: {sorted(doubled)[:10]}"
    firsts = list(dict.fromkeys(log))
    assert firsts == sorted(firsts), "records out of order"
    return log


async def drain(traffic: Traffic, tasks: list[asyncio.Task[None]], stop_producing: asyncio.Event,
                stop_consuming: asyncio.Event) -> None:
    """Stop the producer, let the consumer catch up on every acknowledged record, stop it."""
    stop_producing.set()
    await tasks[1]

    async def consumed() -> set[int]:
        return {r for r, _ in traffic.consumed}

    await wait_for("the group consumer has every acknowledged record", consumed,
                   lambda got: got >= set(traffic.acked))
    stop_consuming.set()
    await tasks[0]
