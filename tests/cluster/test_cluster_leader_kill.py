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

import pytest

from tests.cluster.traffic import (
    Traffic,
    check_log,
    consume,
    create_topic,
    drain,
    new_topic_name,
    partition,
    produce,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.integration]

BEFORE_KILL = 150  # acknowledged records before the kill
AFTER_KILL = 150  # ... and after it, acknowledged by the new leader


async def test_acknowledged_writes_survive_kill_of_the_partition_leader(cluster) -> None:
    options = cluster.options()
    topic = new_topic_name()
    admin = options.admin()
    traffic, stop_producing, stop_consuming = Traffic(), asyncio.Event(), asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    try:
        await admin.start()
        await create_topic(admin, topic)
        tasks = [asyncio.create_task(consume(options, topic, traffic, stop_consuming)),
                 asyncio.create_task(produce(options, topic, traffic, stop_producing))]

        async def flowing() -> tuple[int, int]:
            return len(traffic.acked), len(traffic.consumed)

        await wait_for("records acknowledged and consumed before the kill", flowing,
                       lambda n: n[0] >= BEFORE_KILL and n[1] >= BEFORE_KILL // 2)
        leader = (await partition(admin, topic))["leader"]
        os.kill(cluster.broker_pid(leader), signal.SIGKILL)
        killed_at = time.monotonic()

        after = await wait_for("a new leader, the killed node out of the ISR",
                               lambda: partition(admin, topic),
                               lambda p: p["leader"] not in (-1, leader) and leader not in p["isr"])
        failover_s = time.monotonic() - killed_at

        async def acked_after_kill() -> int:
            return traffic.acked_after(killed_at)

        await wait_for("records acknowledged by the new leader", acked_after_kill,
                       lambda n: n >= AFTER_KILL)
        await drain(traffic, tasks, stop_producing, stop_consuming)

        # The log as a new reader sees it: each acknowledged record, once, in send order.
        await check_log(options, topic, traffic)

        # Two replicas in sync were enough for acks=all: the new leader went on acknowledging.
        assert after["leader"] != leader and len(after["isr"]) == 2
        first_read = min(t for r, t in traffic.consumed
                         if traffic.acked.get(r, 0) > killed_at) - killed_at
        print(f"\nleader {leader} killed: new leader {after['leader']} after {failover_s:.1f}s, "
              f"first ack after the kill {traffic.first_ack_after(killed_at):.1f}s, first new "
              f"record consumed {first_read:.1f}s; {len(traffic.acked)} acknowledged "
              f"({traffic.acked_after(killed_at)} after the kill), {len(traffic.failed)} sends "
              f"failed, 0 lost, 0 doubled")
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
