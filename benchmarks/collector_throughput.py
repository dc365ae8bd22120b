"""Collection throughput against a local fake engine with a fixed latency, side by side with the
ideal (concurrency / latency), and the collector's CPU per collected answer.

The fake engine (attesta_collector.fake_engine) runs in its own process, so the CPU measured
here is the collector's alone: claiming (PostgreSQL SKIP LOCKED leases), the HTTP call, parsing,
source extraction, and the transaction that records the sample, stores the raw response and
stages the run in the outbox. The outbox relay publishes the runs to a private copy of
runs.recorded.v1 during the measurement (its CPU is included).

    nice -n 10 .venv/bin/python benchmarks/collector_throughput.py [--latency-ms 200]
        [--concurrency 1 8 32] [--seconds 8]

Needs the infrastructure of `.state/env` (PostgreSQL, Kafka).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime


from attesta_collector.adapters import postgres as db
from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.adapters.engines import engine_http, openai_engines
from attesta_collector.bootstrap import unit_of_work_factory
from attesta_collector.domain.commands import (
    CreateEngine,
    CreatePrompt,
    CreateSchedule,
    GetSlotProgress,
    PlanSlotNow,
)
from attesta_collector.domain.model import EngineSpec, PromptSpec, ScheduleSpec
from attesta_collector.service_layer import catalog
from attesta_collector.service_layer.collecting import Collector, CollectorLimits, CollectorTopics
from attesta_collector.service_layer.planning import plan_slot_now
from attesta_testing.collector import (
    allow_url,
    engine_checks,
    engine_keys,
    migrated_database,
    private_topics,
)
from attesta_platform import outbox
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_platform.outbound import OutboundPolicy
from attesta_testing.infra import kafka_bootstrap, postgres_admin_url

WS = "bench"


def start_fake_engine(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "attesta_collector.fake_engine",
                             "--latency-ms", str(latency_ms)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None  # stdout=PIPE
    line = proc.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"fake engine did not start: {line!r}")
    return proc, m.group(1)


async def one(concurrency: int, latency_ms: float, seconds: float, base_url: str,
              messaging: Messaging, topics: CollectorTopics) -> dict:
    ideal = concurrency / (latency_ms / 1000)
    samples = max(10, int(ideal * seconds))
    prompts = max(1, samples // 5)
    async with migrated_database(postgres_admin_url(), prefix="bench_col") as database:
        pool = await db.create_pool(database.app_url, max_size=10)
        new_uow = unit_of_work_factory(pool)
        try:
            brands = StaticBrandDirectory({})
            for i in range(prompts):
                await catalog.create_prompt(CreatePrompt(WS, PromptSpec(
                    text=f"Which sleep tracker is best for person {i}?")), new_uow(), brands)
            # The fake engine's address:port is on the operator allow-list, as in the demo.
            await catalog.create_engine(CreateEngine(WS, EngineSpec(
                engine_id="fake", name="fake", base_url=base_url, model="fake-1",
                concurrency=concurrency, timeout_s=30)), new_uow(),
                engine_checks(allow_url(base_url)))
            await catalog.create_schedule(CreateSchedule(WS, ScheduleSpec(
                schedule_id="sch", engine_ids=["fake"], interval_s=3600,
                samples=max(1, samples // prompts))), new_uow())
            slot, planned = await plan_slot_now(
                PlanSlotNow(WS, "sch", datetime(2026, 1, 1, tzinfo=UTC)), new_uow())
            async with engine_http(OutboundPolicy.from_setting(allow_url(base_url))) as http:
                collector = Collector(new_uow, "bench", openai_engines(http, engine_keys(new_uow)),
                                      topics,
                                      CollectorLimits(poll_s=0.02))
                stop = asyncio.Event()
                cpu0, t0 = time.process_time(), time.perf_counter()
                relay = asyncio.create_task(outbox.run_relay(pool, messaging, stop, idle_s=0.02))
                work = asyncio.create_task(collector.run(stop))
                while True:
                    counts = await catalog.get_slot_progress(GetSlotProgress(WS, "sch", slot),
                                                             new_uow())
                    if counts.get("collected", 0) + counts.get("failed", 0) >= planned:
                        break
                    await asyncio.sleep(0.02)
                elapsed = time.perf_counter() - t0
                stop.set()
                await work
                await relay
                while await outbox.relay_batch(pool, messaging):
                    pass
                cpu = time.process_time() - cpu0
            achieved = counts.get("collected", 0) / elapsed
            return {"concurrency": concurrency, "samples": planned,
                    "failed": counts.get("failed", 0), "seconds": elapsed,
                    "achieved": achieved, "ideal": ideal, "ratio": achieved / ideal,
                    "cpu_ms_per_answer": 1000 * cpu / max(1, counts.get("collected", 0))}
        finally:
            await pool.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="ideal duration of each level (sets the number of samples)")
    args = parser.parse_args()
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    topics = private_topics(prefix)
    await ensure_topics(kafka_bootstrap(), [topics.runs_recorded, topics.collection_failed,
                                            topics.engine_response_captured], 3)
    messaging = Messaging(kafka_bootstrap(), "collector-bench")
    await messaging.start()
    proc, base_url = start_fake_engine(args.latency_ms)
    try:
        print(f"fake engine latency {args.latency_ms:g} ms; ideal = concurrency / latency")
        print("| concurrency | samples | seconds | achieved answers/s | ideal | % of ideal | "
              "collector CPU ms/answer |")
        print("|---|---|---|---|---|---|---|")
        for c in args.concurrency:
            r = await one(c, args.latency_ms, args.seconds, base_url, messaging, topics)
            print(f"| {r['concurrency']} | {r['samples']} ({r['failed']} failed) | "
                  f"{r['seconds']:.2f} | {r['achieved']:.1f} | {r['ideal']:.1f} | "
                  f"{100 * r['ratio']:.0f}% | {r['cpu_ms_per_answer']:.2f} |", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
        await messaging.stop()


if __name__ == "__main__":
    asyncio.run(main())
