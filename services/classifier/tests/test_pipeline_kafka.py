"""runs.recorded.v1 -> classification through real Kafka and PostgreSQL: the live batch consumer
(dead letters, duplicates), replay determinism and backfill resumability.

Each test publishes to its own topic carrying runs.recorded.v1 payloads (others use the shared
topic at the same time), with its own consumer groups and workspace."""

from __future__ import annotations

from functools import partial
import asyncio
import hashlib
import uuid
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.adapters import telemetry
from attesta_platform.consuming import StartAt
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.entrypoints.consumers import make_runs_handler
from attesta_classifier.service_layer import brands as brand_svc
from attesta_classifier.service_layer import ground_truth as gt_svc
from attesta_classifier.domain.commands import AddManualFact, CreateBrand
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import RUNS_RECORDED
from attesta_platform.messaging import Messaging, RetryPolicy, TopicCopy, envelope_bytes
from attesta_testing.infra import kafka_bootstrap, publish_raw

pytestmark = pytest.mark.integration

ANSWERS = ["See https://kestrel.example/kits for details.", "Nothing about that company here.",
           "Kestrel Labs? Read https://www.kestrel.example/about", "Migraine is a headache disorder.",
           "I could not find it."]


async def _workspace_with_brand(pool, workspace: str) -> None:
    await brand_svc.create_brand(CreateBrand(
        workspace, "Kestrel Labs", "kestrel", aliases=("Kestrel",), domains=("kestrel.example",)),
        ClassifierUnitOfWork(pool))
    await gt_svc.add_manual_fact(AddManualFact(
        workspace, "kestrel", "manual", "Kestrel Labs makes diagnostic test kits.",
        "https://kestrel.example/", "test"), ClassifierUnitOfWork(pool))


def _envelope(workspace: str, i: int, event_id: uuid.UUID | None = None, *, bad_sha: bool = False):
    answer = ANSWERS[i % len(ANSWERS)]
    at = datetime(2026, 12, 1, tzinfo=UTC)
    run_id = f"{workspace}-run-{i}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m",
                          prompt="Who makes diagnostic kits?", answer=answer,
                          answer_sha256=("0" * 64) if bad_sha else hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=at, answered_at=at)
    event_id = event_id or uuid.uuid5(uuid.NAMESPACE_URL, run_id)
    return run_id, envelope_bytes(RUNS_RECORDED, payload, event_id=event_id, producer="test",
                                     correlation_id=run_id)


async def _publish_runs(topic: str, workspace: str, n: int) -> list[str]:
    m = Messaging(kafka_bootstrap(), "classifier-test")
    await m.ensure_topics([topic], partitions=2)
    await m.start()
    try:
        ids = []
        for i in range(n):
            run_id, value = _envelope(workspace, i)
            await publish_raw(m, topic, value, key=run_id.encode())
            ids.append(run_id)
        return ids
    finally:
        await m.stop()


def _total(counter) -> float:
    return sum(s.value for m in counter.collect() for s in m.samples if s.name.endswith("_total"))


async def test_live_consumer_classifies_dead_letters_and_dedups(pool, heuristic, workspace, consume_until):
    decided_before, parked_before = _total(telemetry.CLASSIFICATIONS), _total(telemetry.PARKED)
    topic = f"test.classifier-runs.{uuid.uuid4().hex[:8]}"
    await _workspace_with_brand(pool, workspace)
    ids = await _publish_runs(topic, workspace, 12)
    m = Messaging(kafka_bootstrap(), "classifier-test", RetryPolicy(2, 0.05, 0.2))
    await m.start()
    try:
        # Poison: not JSON; a wrong answer hash; and a redelivered event (same event id).
        await publish_raw(m, topic, b"\xff not json", key=b"poison")
        _, bad = _envelope(workspace, 99, bad_sha=True)
        await publish_raw(m, topic, bad, key=b"bad")
        _, dup = _envelope(workspace, 0)
        await publish_raw(m, topic, dup, key=ids[0].encode())
        group = f"classifier-test-{uuid.uuid4().hex[:8]}"
        consumer = m.batch_consumer(TopicCopy(RUNS_RECORDED, topic), group_id=group, batch_max=5, wait_ms=100,
                                 handler=make_runs_handler(build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic), consumer=group, trigger="live"))

        async def all_classified() -> bool:
            async with pool.acquire() as conn:
                n = await conn.fetchval("SELECT count(*) FROM run_brand_status WHERE workspace_id = $1", workspace)
            return n == len(ids) and consumer.progress.dead_lettered == 2 and consumer.progress.processed == 15

        await consume_until(consumer, all_classified)
    finally:
        await m.stop()
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT run_id, citation_class, trigger FROM classification_history "
                                "WHERE workspace_id = $1", workspace)
        pending = await conn.fetchval("SELECT count(*) FROM pending_judgments WHERE workspace_id = $1", workspace)
        events = await conn.fetchval("SELECT count(*) FROM messaging_outbox WHERE topic = "
                                     "'classification.recorded.v1' AND key = ANY($1::text[])", ids)
    assert len(rows) + pending == len(ids)  # one decision (or parked judgment) per run, dup ignored
    assert events == len(rows)
    assert {r["citation_class"] for r in rows} <= {"STRONG", "ABSENT", "ECHO"}
    assert sum(r["citation_class"] == "STRONG" for r in rows) == 5  # i % 5 in (0, 2) for i < 12
    # On /metrics: the shared consumed-messages counter (as the core's consumers count it) and
    # the decisions, counted once their batch committed.
    consumed = {o: REGISTRY.get_sample_value("attesta_messages_consumed_total", {
        "consumer": group, "topic": topic, "outcome": o}) for o in ("processed", "dead_lettered")}
    assert consumed == {"processed": 13.0, "dead_lettered": 2.0}
    assert _total(telemetry.CLASSIFICATIONS) - decided_before == len(rows)
    assert _total(telemetry.PARKED) - parked_before == pending


async def test_replay_is_deterministic_and_backfill_resumes(pool, heuristic, workspace, classifier_db):
    from attesta_classifier.cli import backfill
    from attesta_classifier.settings import ClassifierSettings

    topic = f"test.classifier-runs.{uuid.uuid4().hex[:8]}"
    await _workspace_with_brand(pool, workspace)
    n = 30
    ids = await _publish_runs(topic, workspace, n)
    settings = ClassifierSettings(classifier_db_url=classifier_db.app_url,
                                  kafka_bootstrap_servers=kafka_bootstrap())

    # Live pass.
    live = f"live-{uuid.uuid4().hex[:8]}"
    await backfill(settings, group=live, start=StartAt(offset=0), topic=topic, batch=10, rate=10_000)

    # A backfill stopped part-way, then re-run under the same group: it resumes.
    group = f"backfill-{uuid.uuid4().hex[:8]}"
    stop = asyncio.Event()

    async def stop_after_first_batches() -> None:
        while True:
            async with pool.acquire() as conn:
                done = await conn.fetchval("SELECT count(*) FROM messaging_inbox WHERE consumer = $1", group)
            if done >= 8:
                stop.set()
                return
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(stop_after_first_batches())
    first = await backfill(settings, group=group, start=StartAt(offset=0), topic=topic, batch=4, rate=200,
                           stop=stop)
    await watcher
    assert 0 < first.processed < n
    second = await backfill(settings, group=group, start=StartAt(offset=0), topic=topic, batch=4, rate=10_000)
    assert second.processed <= n - first.processed + 8  # resumed from committed offsets, not from 0
    assert first.processed + second.processed >= n

    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT run_id, trigger, citation_class, decided_by, ground_truth_hash, heuristic_version, "
            "prompt_version, evidence_sha256 FROM classification_history WHERE workspace_id = $1 "
            "ORDER BY seq", workspace)
    by_trigger: dict[str, dict[str, list]] = {}
    for r in rows:
        by_trigger.setdefault(r["trigger"], {}).setdefault(r["run_id"], []).append(r)
    assert set(by_trigger) == {"backfill"}  # the "live" pass above also ran as a backfill group
    per_run = by_trigger["backfill"]
    # Two groups (live pass + resumed backfill), exactly one row each per run: no duplicates.
    assert all(len(v) == 2 for v in per_run.values()) and len(per_run) == len(ids) - _ambiguous(per_run, ids)
    for run_rows in per_run.values():
        a, b = run_rows
        assert (a["citation_class"], a["decided_by"], a["ground_truth_hash"], a["heuristic_version"],
                a["prompt_version"], a["evidence_sha256"]) == (
                b["citation_class"], b["decided_by"], b["ground_truth_hash"], b["heuristic_version"],
                b["prompt_version"], b["evidence_sha256"])


def _ambiguous(per_run: dict, ids: list[str]) -> int:
    """Runs the heuristic left to the judge (parked, so no deterministic row in either pass)."""
    return len([i for i in ids if i not in per_run])


async def test_ambiguous_run_never_blocks_the_partition(pool, heuristic, workspace):
    """No judge at all: the ambiguous run is parked (pending) and the runs behind it on the same
    partition are classified and committed."""
    topic = f"test.classifier-runs.{uuid.uuid4().hex[:8]}"
    await _workspace_with_brand(pool, workspace)
    m = Messaging(kafka_bootstrap(), "classifier-test")
    await m.ensure_topics([topic], partitions=1)
    await m.start()
    at = datetime(2026, 12, 1, tzinfo=UTC)
    answers = ["Kestrel Labs has sold diagnostic kits in 40 countries since 1990.",
               "See https://kestrel.example/kits", "Nothing relevant."]
    try:
        for i, answer in enumerate(answers):
            run_id = f"{workspace}-amb-{i}"
            p = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m",
                            prompt="Who sells diagnostic kits?", answer=answer,
                            answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                            requested_at=at, answered_at=at)
            await publish_raw(m, topic, envelope_bytes(RUNS_RECORDED, p, event_id=uuid.uuid4(), producer="t",
                                                         correlation_id=run_id), key=b"same-partition")
        group = f"classifier-test-{uuid.uuid4().hex[:8]}"
        consumer = m.batch_consumer(TopicCopy(RUNS_RECORDED, topic), group_id=group, batch_max=1, wait_ms=100,
                                 handler=make_runs_handler(build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic), consumer=group, trigger="live"),
                                 stop_at_end=True)
        progress = await asyncio.wait_for(consumer.run(asyncio.Event()), 60)
    finally:
        await m.stop()
    assert progress.processed == 3 and progress.batches == 3  # one run per batch, none re-read
    async with pool.acquire() as conn:
        states = {r["run_id"]: (r["status"], r["citation_class"]) for r in await conn.fetch(
            "SELECT run_id, status, citation_class FROM run_brand_status WHERE workspace_id = $1", workspace)}
    assert states == {f"{workspace}-amb-0": ("pending", None), f"{workspace}-amb-1": ("classified", "STRONG"),
                      f"{workspace}-amb-2": ("classified", "ABSENT")}
