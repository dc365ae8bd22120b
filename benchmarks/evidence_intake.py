"""Evidence intake rate, side by side in one run, on one temporary evidence database:

  floor    bare batched INSERT of the same kind of rows into the same `evidence` table
           (same CHECKs: PostgreSQL hashes every content), 500 rows per statement, no log;
  service  the service layer's record_evidence, one transaction per record: evidence row,
           Merkle leaf + completed subtree hashes under the append lock, reference, outbox
           event; with 1 writer and with 8 concurrent writers;
  group    record_evidence (group commit): the same work, 500 records per transaction
           (one lock, one state query, one COPY per table), 1 writer; the floor and group
           commit alternate for --rounds rounds and the median ratio is the result;
  kafka    end to end: runs.recorded.v1 messages consumed by the real subscribers (batch
           consumers: a fetched batch per transaction; a unique consumer group) until every
           record is stored and its event staged.

    .venv/bin/python benchmarks/evidence_intake.py [--records 5000 --rounds 5]
                     [--single-records 1000] [--kafka-records 1000]
    .venv/bin/python benchmarks/evidence_intake.py --profile 500   # where one batch's time goes

``--profile N`` runs nothing else: batches of N records through record_evidence, timed
with each SQL statement's wait (COPY included), then one under cProfile (top functions by own
time).

Needs the infrastructure of `.state/env` (PostgreSQL, Kafka).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import pstats
import statistics
import time
import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Any

import asyncpg

from attesta_contracts.evidence import EvidenceRefKind
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import GROUNDTRUTH_SOURCE_FETCHED, RUNS_RECORDED
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork, create_pool
from attesta_evidence.bootstrap import build_bus
from attesta_evidence.domain.model import IncomingEvidence, Reference
from attesta_evidence.entrypoints.consumers import register_consumers
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_testing.evidence import migrated_database
from attesta_platform.messaging import Messaging
from attesta_testing.infra import kafka_bootstrap, postgres_admin_url

FILLER = ("The assistant answered with a cited dose and a link to the brand's page; "
          "this sentence pads the record to a typical answer length. ") * 4


def text(tag: str, i: int) -> str:
    return f"{tag} answer {i} {uuid.uuid4().hex}. {FILLER}"


async def bare_insert(pool: asyncpg.Pool, n: int, batch: int = 500) -> float:
    async with pool.acquire() as conn:
        start_index = await conn.fetchval("SELECT coalesce(max(log_index) + 1, 0) FROM evidence")
        contents = [text("bare", i).encode() for i in range(n)]
        t = time.perf_counter()
        for b in range(0, n, batch):
            chunk = contents[b:b + batch]
            await conn.execute(
                "INSERT INTO evidence (sha256, content, media_type, size_bytes, log_index) "
                "SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bigint[], "
                "$5::bigint[])",
                [hashlib.sha256(c).hexdigest() for c in chunk], chunk,
                ["text/plain; charset=utf-8"] * len(chunk), [len(c) for c in chunk],
                list(range(start_index + 10_000_000 + b, start_index + 10_000_000 + b + len(chunk))))
        return time.perf_counter() - t


def _items(n: int, tag: str) -> list[IncomingEvidence]:
    items = []
    for i in range(n):
        body = text(tag, i)
        items.append(IncomingEvidence.build(body, hashlib.sha256(body.encode()).hexdigest(),
                                            "text/plain; charset=utf-8",
                                            Reference(EvidenceRefKind.RUN, f"{tag}-{i}", "ws"),
                                            1 << 20))
    return items


async def group_intake(pool: asyncpg.Pool, n: int, batch: int, tag: str) -> float:
    events = Messaging("127.0.0.1:1", "bench")  # envelopes only; events stay in the outbox
    items = [Intake(i, "bench", None) for i in _items(n, tag)]
    t = time.perf_counter()
    for b in range(0, n, batch):
        await record_evidence(RecordEvidence(tuple(items[b:b + batch])), EvidenceUnitOfWork(pool), events)
    return time.perf_counter() - t


class TimedConnection(asyncpg.Connection):  # type: ignore[misc]  # asyncpg ships no types
    """Times each statement the intake sends, COPY included, as the client waits for it."""

    timings: list[tuple[str, float]] | None = None  # set to a list to record

    async def _timed(self, label: str, call: Any) -> Any:
        t = time.perf_counter()
        try:
            return await call
        finally:
            if TimedConnection.timings is not None:
                TimedConnection.timings.append((label, time.perf_counter() - t))

    async def execute(self, query: str, *args: Any, **kw: Any) -> Any:
        return await self._timed(query, super().execute(query, *args, **kw))

    async def fetch(self, query: str, *args: Any, **kw: Any) -> Any:
        return await self._timed(query, super().fetch(query, *args, **kw))

    async def fetchrow(self, query: str, *args: Any, **kw: Any) -> Any:
        return await self._timed(query, super().fetchrow(query, *args, **kw))

    async def copy_records_to_table(self, table: str, **kw: Any) -> Any:
        return await self._timed(f"COPY {table}", super().copy_records_to_table(table, **kw))


async def profile_batch(db_url: str, n: int, repeats: int = 5) -> None:
    """Batches of ``n`` timed without the profiler (and each statement's time, as the client
    waited for it, median over the batches), then one batch under cProfile."""
    pool = await create_pool(db_url, min_size=1, max_size=1, connection_class=TimedConnection)
    events = Messaging("127.0.0.1:1", "bench")
    try:
        for k in range(2):
            await group_intake(pool, n, n, f"profile-warmup-{k}")
        walls, per_statement = [], {}
        for k in range(repeats):
            batch = [Intake(i, "bench", None) for i in _items(n, f"timed-{k}")]
            TimedConnection.timings = []
            t = time.perf_counter()
            await record_evidence(RecordEvidence(tuple(batch)), EvidenceUnitOfWork(pool), events)
            walls.append(time.perf_counter() - t)
            for sql, secs in TimedConnection.timings:
                per_statement.setdefault(" ".join(sql.split())[:72], []).append(secs)
        TimedConnection.timings = None
        batch = [Intake(i, "bench", None) for i in _items(n, "profile")]
        profiler = cProfile.Profile()
        profiler.enable()
        await record_evidence(RecordEvidence(tuple(batch)), EvidenceUnitOfWork(pool), events)
        profiler.disable()
    finally:
        await pool.close()
    walls.sort()
    median = walls[len(walls) // 2]
    print(f"{repeats} batches of {n} (no profiler): median {median * 1000:.1f} ms "
          f"({median / n * 1e6:.0f} us/record), min {walls[0] * 1000:.1f} ms\n")
    print("statements, median ms per batch (the client's wait: server time + round trip):")
    total = 0.0
    for sql, secs in per_statement.items():
        secs.sort()
        total += secs[len(secs) // 2]
        print(f"  {secs[len(secs) // 2] * 1000:8.2f}  {sql}")
    print(f"  {total * 1000:8.2f}  (sum; the rest of the batch's time is Python)\n")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(20)


async def service_intake(pool: asyncpg.Pool, n: int, writers: int, tag: str) -> float:
    events = Messaging("127.0.0.1:1", "bench")  # envelopes only; events stay in the outbox
    queue = iter(_items(n, tag))

    async def writer() -> None:
        for item in queue:
            await record_evidence(RecordEvidence((Intake(item, "bench", None),)), EvidenceUnitOfWork(pool), events)

    t = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    return time.perf_counter() - t


async def kafka_intake(pool: asyncpg.Pool, n: int, consumers: int) -> tuple[float, float]:
    marker = uuid.uuid4().hex[:8]
    messaging = Messaging(kafka_bootstrap(), f"bench-{marker}", linger_ms=5)
    subs = register_consumers(messaging, build_bus(partial(EvidenceUnitOfWork, pool), events=messaging), 1 << 20, group_id=f"bench-evidence-{marker}",
                              auto_offset_reset="latest", consumers_per_topic=consumers)
    await messaging.ensure_topics([RUNS_RECORDED, GROUNDTRUTH_SOURCE_FETCHED])
    await messaging.start()
    try:
        deadline = time.monotonic() + 90
        while not all(s.consumer is not None and s.consumer.assignment()
                      for s in subs[RUNS_RECORDED]):  # 3 partitions: each consumer gets one
            assert time.monotonic() < deadline, "consumers not assigned: " + repr(
                [sorted(tp.partition for tp in s.consumer.assignment()) for s in subs[RUNS_RECORDED]])
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # let the group settle: a late rebalance would re-read
        now = datetime.now(UTC)
        runs = []
        for i in range(n):
            body = text(f"kafka-{marker}", i)
            runs.append(RunRecorded(run_id=f"k-{marker}-{i}", workspace_id="ws", engine="e",
                                    model="m", prompt="p", answer=body,
                                    answer_sha256=hashlib.sha256(body.encode()).hexdigest(),
                                    requested_at=now, answered_at=now))
        t = time.perf_counter()
        for b in range(0, n, 200):
            await asyncio.gather(*(messaging.publish(RUNS_RECORDED, r, key=r.run_id,
                                                     correlation_id=marker)
                                   for r in runs[b:b + 200]))
        published = time.perf_counter() - t
        async with pool.acquire() as conn:
            while await conn.fetchval(
                    "SELECT count(*) FROM evidence_references WHERE ref_id LIKE $1",
                    f"k-{marker}-%") < n:
                await asyncio.sleep(0.05)
        return published, time.perf_counter() - t
    finally:
        await messaging.stop()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5000,
                    help="records per round of the floor and of group commit")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds alternating the floor and group commit (ratio: the median)")
    ap.add_argument("--single-records", type=int, default=1000,
                    help="records through the one-transaction-per-record paths")
    ap.add_argument("--kafka-records", type=int, default=1000)
    ap.add_argument("--kafka-consumers", type=int, nargs="*", default=[1])
    ap.add_argument("--profile", type=int, metavar="N",
                    help="profile batches of N records instead of the benchmark")
    args = ap.parse_args()
    n = args.records
    async with migrated_database(postgres_admin_url(), prefix="bench_intake") as db:
        if args.profile:
            await profile_batch(db.app_url, args.profile)
            return
        pool = await create_pool(db.app_url, min_size=2, max_size=10)  # the service's pool
        try:
            await service_intake(pool, 50, 1, "warmup")
            await group_intake(pool, 1000, 500, "warmup-group")
            # The floor and group commit alternate, so a change of the shared machine's load
            # hits both: the ratio of each round is side by side.
            print(f"floor vs group commit, alternating, {n} records each per round:\n"
                  f"{'round':>5} {'floor records/s':>16} {'group records/s':>16} {'floor/group':>12}")
            floors, groups, ratios = [], [], []
            for r in range(args.rounds):
                floor_rate = n / await bare_insert(pool, n)
                group_rate = n / await group_intake(pool, n, 500, f"group-{r}")
                floors.append(floor_rate)
                groups.append(group_rate)
                ratios.append(floor_rate / group_rate)
                print(f"{r + 1:>5} {floor_rate:>16.0f} {group_rate:>16.0f} {ratios[-1]:>11.1f}x")
            print(f"median floor/group: {statistics.median(ratios):.1f}x (goal: <= 5x)\n")
            floor = statistics.median(floors)
            m = args.single_records
            rows = [("floor: bare batched INSERT (500/stmt, no log), median", floor),
                    ("group commit: record_evidence, 500/txn, median",
                     statistics.median(groups))]
            rows.append(("service: record_evidence, 1 writer",
                         m / await service_intake(pool, m, 1, "one")))
            rows.append(("service: record_evidence, 8 writers",
                         m / await service_intake(pool, m, 8, "eight")))
            k = args.kafka_records
            for consumers in args.kafka_consumers:
                published, total = await kafka_intake(pool, k, consumers)
                rows.append((f"kafka, {consumers} consumer(s): runs.recorded.v1 -> stored",
                             k / total))
            print(f"{'path':<58} {'records/s':>10} {'floor/this':>10}")
            for name, rate in rows:
                print(f"{name:<58} {rate:>10.0f} {floor / rate:>9.1f}x")
            async with pool.acquire() as conn:
                print(f"\nlog size after the run: "
                      f"{await conn.fetchval('SELECT max(idx) + 1 FROM log_nodes WHERE level = 0')}"
                      f" leaves; evidence rows: {await conn.fetchval('SELECT count(*) FROM evidence')}")
        finally:
            await pool.close()


if __name__ == "__main__":
    asyncio.run(main())
