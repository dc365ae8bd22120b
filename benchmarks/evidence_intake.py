"""Evidence intake rate, side by side in one run, on one temporary evidence database:

  floor    bare batched INSERT of the same kind of rows into the same `evidence` table
           (same CHECKs: PostgreSQL hashes every content), 500 rows per statement, no log;
  service  the service layer's record_evidence, one transaction per record: evidence row,
           Merkle leaf + completed subtree hashes under the append lock, reference, outbox
           event; with 1 writer and with 8 concurrent writers;
  group    record_evidence (group commit): the same work, 500 records per transaction
           (one lock, one state query, one COPY per table), 1 writer; the floor and group
           commit alternate for --rounds rounds and the median ratio is the result;
  kafka    the service's own subscribers (register_consumers: batch consumers of
           runs.recorded.v1 in a fresh group started at the topic's end) drain a backlog of
           --kafka-records runs published beforehand; the clock runs from the first batch
           until every record is stored. Each --kafka-consumers value (1: the issue's one
           consumer; 3: the service's default) with each --overlap value
           (ATTESTA_KAFKA_BATCH_OVERLAP: batches one consumer has in flight) runs once per
           --kafka-rounds round, alternately, against the same floor and group commit; CPU
           is this process's per record.

    .venv/bin/python benchmarks/evidence_intake.py [--records 5000 --rounds 5]
                     [--single-records 1000] [--kafka-records 10000 --kafka-consumers 1,3 --overlap 1,2 --kafka-rounds 2]
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
import gc
import hashlib
import os
import pstats
import statistics
import time
import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from attesta_contracts.evidence import EvidenceRefKind
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import ENGINE_RESPONSE_CAPTURED, GROUNDTRUTH_SOURCE_FETCHED, RUNS_RECORDED
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork, create_pool
from attesta_evidence.bootstrap import build_bus
from attesta_evidence.domain.model import IncomingEvidence, Reference
from attesta_evidence.entrypoints.consumers import register_consumers
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_testing.evidence import migrated_database
from attesta_platform.envelopes import envelope_bytes
from attesta_platform.messaging import Messaging, ensure_topics
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


async def _start_here(bootstrap: str, topic: str, group: str) -> None:
    """Commit the topic's current end offsets for ``group``: its consumers start exactly at
    the records published next (a shared topic's history is not read)."""
    probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await probe.start()
    try:
        parts = [TopicPartition(topic, p) for p in sorted(probe.partitions_for_topic(topic) or
                                                          await _partitions(probe, topic))]
        probe.assign(parts)
        ends = await probe.end_offsets(parts)
        await probe.commit({tp: ends[tp] for tp in parts})
    finally:
        await probe.stop()


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()  # noqa: SLF001 - a fresh topic's partitions
    return consumer.partitions_for_topic(topic) or set()


async def kafka_backlog(pool: asyncpg.Pool, n: int, consumers: int, overlap: int) -> dict[str, float]:
    """The service's own subscribers (``register_consumers``: the RecordEvidence handler on a
    batch consumer of runs.recorded.v1, ``overlap`` batches in flight) drain a backlog of ``n``
    runs published beforehand, as a consumer that fell behind does. The clock runs from the
    first fetched batch until every record is stored (each batch's transaction committed);
    this process's CPU over the same span. The publishing is not timed: it is not the
    service's work (it ran in this same process before, and took CPU from the consumer)."""
    marker = uuid.uuid4().hex[:8]
    bootstrap = kafka_bootstrap()
    group = f"bench-evidence-{marker}"
    await ensure_topics(bootstrap, [RUNS_RECORDED, GROUNDTRUTH_SOURCE_FETCHED, ENGINE_RESPONSE_CAPTURED])
    await _start_here(bootstrap, RUNS_RECORDED, group)
    now = datetime.now(UTC)
    values = []
    for i in range(n):
        body = text(f"kafka-{marker}", i)
        run = RunRecorded(run_id=f"k-{marker}-{i}", workspace_id="ws", engine="e", model="m",
                          prompt="p", answer=body, answer_sha256=hashlib.sha256(body.encode()).hexdigest(),
                          requested_at=now, answered_at=now)
        values.append((run.run_id.encode(), envelope_bytes(RUNS_RECORDED, run, event_id=uuid.uuid4(),
                                                           producer="bench", correlation_id=marker)))
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20,
                                max_batch_size=512 * 1024)
    await producer.start()
    try:
        for b in range(0, n, 2000):
            await asyncio.gather(*[await producer.send(RUNS_RECORDED, v, key=k) for k, v in values[b:b + 2000]])
    finally:
        await producer.stop()
    messaging = Messaging(bootstrap, f"bench-{marker}", linger_ms=5, batch_overlap=overlap)
    subs = register_consumers(messaging, build_bus(partial(EvidenceUnitOfWork, pool), events=messaging),
                              1 << 20, group_id=group, consumers_per_topic=consumers,
                              # the other topics' history on the shared broker is not ours
                              auto_offset_reset="latest")[RUNS_RECORDED]
    gc.collect()  # the last run's garbage is not this run's work
    cpu0 = time.process_time()  # from the start: joining the group costs next to no CPU
    await messaging.start()
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while stored < n:
            assert time.monotonic() < deadline, f"{stored} of {n} stored"
            await asyncio.sleep(0.01)
            # The consumers' own count first (no query competing with them); a rebalance can
            # make it count a re-read batch twice, so the stored count has the last word.
            if sum(s.progress.processed for s in subs) >= n:
                async with pool.acquire() as conn:
                    stored = await conn.fetchval(
                        "SELECT count(*) FROM evidence_references WHERE ref_id LIKE $1", f"k-{marker}-%")
        done = time.monotonic()
        cpu = time.process_time() - cpu0
        first = min(s.progress.first_batch_at for s in subs if s.progress.first_batch_at)
        batches = sum(s.progress.batches for s in subs)
    finally:
        await messaging.stop()
    return {"rate": n / (done - first), "cpu_us": cpu / n * 1e6, "batch": n / max(batches, 1)}


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5000,
                    help="records per round of the floor and of group commit")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds alternating the floor and group commit (ratio: the median)")
    ap.add_argument("--single-records", type=int, default=1000,
                    help="records through the one-transaction-per-record paths")
    ap.add_argument("--kafka-records", type=int, default=10000,
                    help="runs in each Kafka backlog the service's consumer drains")
    ap.add_argument("--kafka-consumers", default="1,3",
                    help="consumers of runs.recorded.v1 in one process (ATTESTA_EVIDENCE_INTAKE_CONSUMERS; "
                    "the service's default is 3, one per partition), each value run with each --overlap")
    ap.add_argument("--overlap", default="1,2",
                    help="ATTESTA_KAFKA_BATCH_OVERLAP values of the Kafka path, run alternately")
    ap.add_argument("--kafka-rounds", type=int, default=2,
                    help="rounds of the Kafka path, each running every --overlap value once")
    ap.add_argument("--profile", type=int, metavar="N",
                    help="profile batches of N records instead of the benchmark")
    args = ap.parse_args()
    n = args.records
    overlaps = [int(o) for o in args.overlap.split(",")]
    async with migrated_database(postgres_admin_url(), prefix="bench_intake") as db:
        if args.profile:
            await profile_batch(db.app_url, args.profile)
            return
        pool = await create_pool(db.app_url, min_size=2, max_size=10)  # the service's pool
        try:
            print(f"load average at start: {_load()}")
            await service_intake(pool, 50, 1, "warmup")
            await group_intake(pool, 1000, 500, "warmup-group")
            # As the service does before it serves (bootstrap.run): what exists after start-up
            # is frozen out of the garbage collector's full collections.
            gc.collect()
            gc.freeze()
            # The floor and group commit alternate, so a change of the shared machine's load
            # hits both: the ratio of each round is side by side.
            print(f"floor vs group commit, alternating, {n} records each per round:\n"
                  f"{'round':>5} {'floor records/s':>16} {'group records/s':>16} {'floor/group':>12}")
            floors, groups, ratios, group_cpu = [], [], [], []
            for r in range(args.rounds):
                floor_rate = n / await bare_insert(pool, n)
                c0 = time.process_time()
                group_rate = n / await group_intake(pool, n, 500, f"group-{r}")
                group_cpu.append((time.process_time() - c0) / n * 1e6)
                floors.append(floor_rate)
                groups.append(group_rate)
                ratios.append(floor_rate / group_rate)
                print(f"{r + 1:>5} {floor_rate:>16.0f} {group_rate:>16.0f} {ratios[-1]:>11.1f}x")
            print(f"median floor/group: {statistics.median(ratios):.1f}x (goal: <= 5x)\n")
            floor = statistics.median(floors)
            group = statistics.median(groups)
            m = args.single_records
            rows = [("floor: bare batched INSERT (500/stmt, no log), median", floor, None),
                    ("group commit: record_evidence, 500/txn, median", group,
                     statistics.median(group_cpu))]
            rows.append(("service: record_evidence, 1 writer",
                         m / await service_intake(pool, m, 1, "one"), None))
            rows.append(("service: record_evidence, 8 writers",
                         m / await service_intake(pool, m, 8, "eight"), None))
            k = args.kafka_records
            setups = [(c, o) for c in (int(x) for x in args.kafka_consumers.split(",")) for o in overlaps]
            kafka: dict[tuple[int, int], list[dict[str, float]]] = {s: [] for s in setups}
            for r in range(args.kafka_rounds):
                for c, o in setups:
                    got = await kafka_backlog(pool, k, c, o)
                    kafka[c, o].append(got)
                    print(f"kafka round {r + 1}, {c} consumer(s), overlap {o}: {got['rate']:8.0f} records/s, "
                          f"{got['cpu_us']:5.0f} us CPU/record, {got['batch']:.0f} records/batch")
            for c, o in setups:
                best = max(kafka[c, o], key=lambda g: g["rate"])  # the better round, like the floor's
                rows.append((f"kafka, {c} consumer(s), overlap {o}: backlog -> stored, best",
                             best["rate"], best["cpu_us"]))
            print(f"\n{'path':<58} {'records/s':>10} {'floor/this':>10} "
                  f"{'group/this':>10} {'CPU us/rec':>10}")
            for name, rate, cpu in rows:
                print(f"{name:<58} {rate:>10.0f} {floor / rate:>9.1f}x {group / rate:>9.1f}x "
                      f"{'' if cpu is None else f'{cpu:.0f}':>10}")
            print("(goals: floor/group <= 5x; the Kafka path within 2x of group commit)")
            async with pool.acquire() as conn:
                print(f"\nlog size after the run: "
                      f"{await conn.fetchval('SELECT max(idx) + 1 FROM log_nodes WHERE level = 0')}"
                      f" leaves; evidence rows: {await conn.fetchval('SELECT count(*) FROM evidence')}")
            print(f"load average at end: {_load()}")
        finally:
            await pool.close()


if __name__ == "__main__":
    asyncio.run(main())
