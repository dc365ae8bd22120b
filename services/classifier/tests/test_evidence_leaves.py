"""evidence.recorded.v1 -> the Merkle log's leaf index of answers' bytes -> the run exports'
``log_index`` (issue #25 item 7), through real Kafka and PostgreSQL: the index is stored once
per SHA-256 (a duplicate event, or a later different index, keeps the first), a run whose
evidence was not seen exports an empty index, and a poison event is dead-lettered."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
from datetime import UTC, datetime
from functools import partial

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.entrypoints.consumers import make_evidence_handler
from attesta_contracts.evidence import EvidenceRecorded, EvidenceReference, EvidenceRefKind
from attesta_contracts.topics import EVIDENCE_RECORDED
from attesta_platform.messaging import Messaging, RetryPolicy, TopicCopy, envelope_bytes
from attesta_testing.infra import kafka_bootstrap, publish_raw

pytestmark = pytest.mark.integration


def _event(sha: str, log_index: int | None, event_id: uuid.UUID | None = None) -> bytes:
    payload = EvidenceRecorded(
        sha256=sha, media_type="text/plain; charset=utf-8", size_bytes=10,
        first_recorded_at=datetime(2026, 12, 1, tzinfo=UTC),
        reference=EvidenceReference(kind=EvidenceRefKind.RUN, ref_id="r"), new_content=True,
        log_index=log_index)
    return envelope_bytes(EVIDENCE_RECORDED, payload, event_id=event_id or uuid.uuid4(),
                          producer="test", correlation_id=sha)


async def test_leaf_index_is_stored_once_and_exported(pool, heuristic, workspace, make_client,
                                                      consume_until):
    c = make_client(workspace)
    logged, unseen = f"Logged answer {uuid.uuid4()}", f"Unseen answer {uuid.uuid4()}"
    runs = {}
    for answer in (logged, unseen):
        r = await c.post("/v1/runs", json={"engine": "e", "model": "m", "prompt": "p",
                                           "answer": answer})
        assert r.status_code == 202
        runs[r.json()["run_id"]] = r.json()["answer_sha256"]
    sha = hashlib.sha256(logged.encode()).hexdigest()
    unlogged = hashlib.sha256(f"not in the log {uuid.uuid4()}".encode()).hexdigest()
    first = uuid.uuid4()
    topic = f"test.classifier-evidence.{uuid.uuid4().hex[:8]}"
    m = Messaging(kafka_bootstrap(), "classifier-test", RetryPolicy(2, 0.05, 0.2))
    await m.ensure_topics([topic], partitions=1)
    await m.start()
    try:
        for value in (_event(sha, 7, first), _event(sha, 7, first),  # redelivered
                      _event(sha, 9),  # another leaf for the same bytes: the first one stays
                      _event(unlogged, None),  # bytes not in the log: nothing to keep
                      b"\xff not json",  # poison
                      _event(sha, 7).replace(sha.encode(), b"Z" * 64)):  # against the contract
            await publish_raw(m, topic, value, key=b"k")
        group = f"classifier-evidence-test-{uuid.uuid4().hex[:8]}"
        consumer = m.batch_consumer(
            TopicCopy(EVIDENCE_RECORDED, topic), group_id=group, batch_max=2, wait_ms=100,
            handler=make_evidence_handler(build_bus(partial(ClassifierUnitOfWork, pool),
                                                    heuristic=heuristic)))

        async def consumed() -> bool:
            return consumer.progress.dead_lettered == 2 and consumer.progress.processed == 6

        await consume_until(consumer, consumed)
    finally:
        await m.stop()
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT sha256, log_index FROM evidence_leaves "
                                "WHERE sha256 = ANY($1::text[])", [sha, unlogged])
    assert [(r["sha256"], r["log_index"]) for r in rows] == [(sha, 7)]

    by_run = {row["run_id"]: row for row in csv.DictReader(io.StringIO(
        (await c.get("/v1/exports/runs", params={"format": "csv"})).text))}
    assert set(by_run) == set(runs)
    for run_id, row in by_run.items():
        assert row["answer_sha256"] == runs[run_id]
        assert row["log_index"] == ("7" if runs[run_id] == sha else "")
    header = (await c.get("/v1/exports/runs", params={"format": "csv"})).text.splitlines()[0]
    assert header.split(",")[-2:] == ["reason", "log_index"]  # appended, the rest unmoved
    lines = [json.loads(x) for x in
             (await c.get("/v1/exports/runs", params={"format": "jsonl"})).text.splitlines()]
    assert {x["answer_sha256"]: x["log_index"] for x in lines} == {
        runs[i]: (7 if runs[i] == sha else None) for i in runs}
