"""kill -9 of a partition's leader while a producer (the project's own: acks=all, idempotent)
writes and a group consumer reads: every acknowledged record is still in the log, once, in
order; the producer goes on being acknowledged by the new leader with two replicas in sync
(min.insync.replicas=2), and the consumer goes on receiving. The killed node is started again
afterwards and catches up (three replicas in sync)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import NewTopic

pytestmark = [pytest.mark.cluster, pytest.mark.integration]

BEFORE_KILL = 150  # acknowledged records before the kill
AFTER_KILL = 150  # ... and after it, acknowledged by the new leader
BOUND_S = 60.0  # every wait below gives up after this


@dataclass
class Traffic:
    acked: dict[int, float] = field(default_factory=dict)  # record number -> ack time
    failed: list[int] = field(default_factory=list)  # sends that raised (not acknowledged)
    consumed: list[tuple[int, float]] = field(default_factory=list)  # (record, receive time)


async def _partition(admin: Any, topic: str) -> dict[str, Any]:
    described = await asyncio.wait_for(admin.describe_topics([topic]), 10)
    partition: dict[str, Any] = described[0]["partitions"][0]
    return partition


async def _wait_for(what: str, probe: Any, ok: Any) -> Any:
    """Poll ``probe()`` until ``ok(result)``; a failing probe (its broker just died) is retried."""
    deadline, last = time.monotonic() + BOUND_S, None
    while time.monotonic() < deadline:
        try:
            last = await probe()
            if ok(last):
                return last
        except Exception as exc:  # noqa: BLE001 - retried until the bound
            last = exc
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what}: not within {BOUND_S:.0f}s (last: {last!r})")


async def _produce(options: Any, topic: str, traffic: Traffic, stop: asyncio.Event) -> None:
    producer = options.producer("cluster-leader-kill")
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
            i += 1
            await asyncio.sleep(0.005)  # a steady stream, so the kill lands in the middle of it
    finally:
        await producer.stop()


async def _consume(options: Any, topic: str, traffic: Traffic, stop: asyncio.Event) -> None:
    consumer = options.consumer("cluster-leader-kill", f"cluster-leader-kill-{uuid.uuid4().hex[:8]}")
    consumer.subscribe([topic])
    try:
        await consumer.start()
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=300)
            now = time.monotonic()
            traffic.consumed += [(int(m.value), now) for ms in batch.values() for m in ms]
    finally:
        await consumer.stop()


async def _read_all(options: Any, topic: str) -> list[int]:
    """The partition from its beginning to its end, as a fresh reader sees it now."""
    consumer = options.consumer("cluster-leader-kill-check", None)
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


async def test_acknowledged_writes_survive_kill_of_the_partition_leader(cluster) -> None:
    options = cluster.options()
    topic = f"cluster-test-{uuid.uuid4().hex[:12]}"
    admin = options.admin()
    traffic, stop_producing, stop_consuming = Traffic(), asyncio.Event(), asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    try:
        await admin.start()
        resp = await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                                   topic_configs={"min.insync.replicas": "2"})])
        assert [t[1] for t in resp.topic_errors] == [0]
        await _wait_for("a leader and three replicas in sync", lambda: _partition(admin, topic),
                        lambda p: p["leader"] >= 0 and len(p["isr"]) == 3)

        tasks = [asyncio.create_task(_consume(options, topic, traffic, stop_consuming)),
                 asyncio.create_task(_produce(options, topic, traffic, stop_producing))]

        async def flowing() -> tuple[int, int]:
            return len(traffic.acked), len(traffic.consumed)

        await _wait_for("records acknowledged and consumed before the kill", flowing,
                        lambda n: n[0] >= BEFORE_KILL and n[1] >= BEFORE_KILL // 2)
        leader = (await _partition(admin, topic))["leader"]
        os.kill(cluster.broker_pid(leader), signal.SIGKILL)
        killed_at = time.monotonic()

        after = await _wait_for("a new leader, the killed node out of the ISR",
                                lambda: _partition(admin, topic),
                                lambda p: p["leader"] not in (-1, leader) and leader not in p["isr"])
        failover_s = time.monotonic() - killed_at

        async def acked_after_kill() -> int:
            return sum(1 for t in traffic.acked.values() if t > killed_at)

        await _wait_for("records acknowledged by the new leader", acked_after_kill,
                        lambda n: n >= AFTER_KILL)
        stop_producing.set()
        await tasks[1]
        acked = sorted(traffic.acked)

        async def consumed() -> set[int]:
            return {r for r, _ in traffic.consumed}

        await _wait_for("the group consumer has every acknowledged record", consumed,
                        lambda got: got >= set(acked))
        stop_consuming.set()
        await tasks[0]

        # The log as a new reader sees it: each acknowledged record, once, in send order.
        log = await _read_all(options, topic)
        assert set(acked) <= set(log), f"acknowledged but lost: {sorted(set(acked) - set(log))[:10]}"
        assert len(log) == len(set(log)), "a record written twice"
        assert log == sorted(log), "records out of order"
        assert set(log) - set(acked) <= set(traffic.failed)  # extra only where a send raised

        # Two replicas in sync were enough for acks=all: the new leader went on acknowledging.
        assert after["leader"] != leader and len(after["isr"]) == 2
        first_ack = min(t for t in traffic.acked.values() if t > killed_at) - killed_at
        first_read = min(t for r, t in traffic.consumed
                         if traffic.acked.get(r, 0) > killed_at) - killed_at
        print(f"\nleader {leader} killed: new leader {after['leader']} after {failover_s:.1f}s, "
              f"first ack after the kill {first_ack:.1f}s, first new record consumed {first_read:.1f}s; "
              f"{len(acked)} acknowledged ({sum(1 for t in traffic.acked.values() if t > killed_at)} "
              f"after the kill), {len(traffic.failed)} sends failed, 0 lost, 0 doubled")
    finally:
        stop_producing.set()
        stop_consuming.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            await admin.delete_topics([topic])
        except Exception:  # noqa: BLE001 - best effort: the next run uses a new name anyway
            pass
        await admin.close()
        t0 = time.monotonic()
        restarted = cluster.up()  # the killed node rejoins; every replica in sync again
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        print(f"killed node back, all replicas in sync, in {time.monotonic() - t0:.1f}s")
