"""``GET /metrics`` of the real evidence process (``attesta run evidence``): its own migrated
database, real Kafka intake. Runs go in through runs.recorded.v1 (new bytes, the same bytes under
a new run, the same run again), then public lookups, checks and proofs over HTTP; every counter
moves by exactly what happened, read before and after (the registry is never assumed fresh)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest

from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import (
    ENGINE_RESPONSE_CAPTURED,
    GROUNDTRUTH_SOURCE_FETCHED,
    RUNS_RECORDED,
)
from attesta_testing.evidence import EvidenceProcess
from attesta_platform.messaging import Messaging
from attesta_testing.infra import MetricsScrape, commit_group_at_end, kafka_bootstrap

pytestmark = pytest.mark.integration

INTAKE = "attesta_evidence_intake_total"
HEADS = "attesta_evidence_tree_heads_signed_total"
LOOKUPS = "attesta_evidence_lookups_total"
CHECKS = "attesta_evidence_checks_total"
PROOFS = "attesta_evidence_proof_requests_total"
PROOF_SECONDS = "attesta_evidence_proof_seconds_count"


def _run(run_id: str, answer: str) -> RunRecorded:
    now = datetime.now(UTC)
    return RunRecorded(run_id=run_id, workspace_id="ws-prom", engine="e", model="m", prompt="p",
                       answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                       requested_at=now, answered_at=now)


async def test_metrics_count_what_the_running_evidence_service_did(evidence_db, tmp_path):
    from attesta_evidence.adapters.keys import generate_key_file

    marker = uuid.uuid4().hex[:10]
    key = tmp_path / "log.pem"
    generate_key_file(key)
    group = f"evidence-prom-{marker}"
    # A fresh group committed at the topics' end: only what is published from now on.
    for topic in (RUNS_RECORDED, GROUNDTRUTH_SOURCE_FETCHED, ENGINE_RESPONSE_CAPTURED):
        await commit_group_at_end(kafka_bootstrap(), topic, group)
    proc = EvidenceProcess({"ATTESTA_EVIDENCE_DATABASE_URL": evidence_db.app_url,
                            "ATTESTA_EVIDENCE_SIGNING_KEY_FILE": str(key),
                            "ATTESTA_EVIDENCE_CONSUMER_GROUP": group,
                            "ATTESTA_EVIDENCE_INTAKE_CONSUMERS": "1",
                            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap()},
                           tmp_path / "evidence.log").start()
    messaging = Messaging(kafka_bootstrap(), f"prom-{marker}")
    await messaging.start()
    admin = await asyncpg.connect(evidence_db.admin_url)
    try:
        async with httpx.AsyncClient(base_url=proc.url) as http:
            scrape = MetricsScrape(http)
            await scrape.mark()
            heads_before = await admin.fetchval("SELECT count(*) FROM tree_heads")

            async def refs() -> int:
                return await admin.fetchval("SELECT count(*) FROM evidence_references")

            async def published(run: RunRecorded, want_refs: int) -> None:
                await messaging.publish(RUNS_RECORDED, run, key=run.run_id, correlation_id=marker)
                for _ in range(300):
                    if await refs() == want_refs:
                        return
                    await asyncio.sleep(0.05)
                raise AssertionError(f"{run.run_id} not stored")

            answer = f"Prometheus answer {marker}: Brandly \N{SNOWMAN}"
            sha = hashlib.sha256(answer.encode()).hexdigest()
            first = _run(f"run-a-{marker}", answer)
            await published(first, 1)                                # new bytes: stored
            await published(_run(f"run-b-{marker}", answer), 2)     # same bytes: duplicate
            # The same run again (a redelivery): nothing written. Its intake is visible only on
            # the counter, so wait for the message to be consumed as processed.
            await messaging.publish(RUNS_RECORDED, first, key=first.run_id, correlation_id=marker)
            for _ in range(300):
                if scrape.delta(await scrape.text(), INTAKE, kind="run", outcome="unchanged"):
                    break
                await asyncio.sleep(0.05)

            unknown = hashlib.sha256(f"never {marker}".encode()).hexdigest()
            assert (await http.get(f"/v1/public/evidence/{sha}")).status_code == 200
            assert (await http.get(f"/v1/public/evidence/{sha.upper()}")).status_code == 200
            assert (await http.get(f"/v1/public/evidence/{unknown}")).status_code == 404
            assert (await http.get("/v1/public/evidence/not-a-hash")).status_code == 400
            check = f"/v1/public/evidence/{sha}/check"
            assert (await http.post(check, json={"content": answer})).json()["match"] is True
            assert (await http.post(check, json={"content": answer + "!"})).json()["match"] is False
            assert (await http.post(check, json={"content": answer})).json()["match"] is True
            assert (await http.post(f"/v1/public/evidence/{unknown}/check",
                                    json={"content": "x"})).status_code == 404
            head = (await http.get("/v1/public/log/tree-head")).json()
            size = head["tree_size"]
            assert size == 1
            assert (await http.get("/v1/public/log/inclusion",
                                   params={"leaf_index": 0, "tree_size": size})).status_code == 200
            assert (await http.get("/v1/public/log/inclusion",
                                   params={"leaf_index": 0, "tree_size": size + 5})
                    ).status_code == 400
            for _ in range(2):
                assert (await http.get("/v1/public/log/consistency",
                                       params={"first": 1, "second": size})).status_code == 200
            after = await scrape.text()
            heads_signed = await admin.fetchval("SELECT count(*) FROM tree_heads") - heads_before

        d = scrape.delta
        assert d(after, INTAKE, kind="run", outcome="stored") == 1
        assert d(after, INTAKE, kind="run", outcome="duplicate") == 1
        assert d(after, INTAKE, kind="run", outcome="unchanged") == 1
        assert d(after, INTAKE, kind="ground_truth_source") == 0
        # Every head the process committed, and only those (the log grew once: one head).
        assert heads_signed == 1
        assert d(after, HEADS) == heads_signed
        assert d(after, LOOKUPS, result="found") == 2
        assert d(after, LOOKUPS, result="not_found") == 1
        assert d(after, LOOKUPS, result="invalid_sha256") == 1
        assert d(after, CHECKS, result="match") == 2
        assert d(after, CHECKS, result="mismatch") == 1
        assert d(after, CHECKS, result="not_found") == 1
        assert d(after, PROOFS, kind="inclusion", outcome="ok") == 1
        assert d(after, PROOFS, kind="inclusion", outcome="invalid_range") == 1
        assert d(after, PROOFS, kind="consistency", outcome="ok") == 2
        assert d(after, PROOF_SECONDS, kind="inclusion") == 1  # latency of served proofs only
        assert d(after, PROOF_SECONDS, kind="consistency") == 2
        # the shared consumer counter sees the three intake messages
        assert d(after, "attesta_messages_consumed_total", topic=RUNS_RECORDED,
                 outcome="processed") == 3
        async with httpx.AsyncClient(base_url=proc.url) as http:
            assert "/metrics" not in (await http.get("/openapi.json")).json()["paths"]
    finally:
        await admin.close()
        await messaging.stop()
        assert proc.stop() == 0

