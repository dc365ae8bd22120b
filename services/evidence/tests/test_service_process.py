"""The service as an operator runs it: `attesta evidence migrate`, `attesta evidence keygen`,
`attesta run evidence` as a real process fed over Kafka, and `attesta evidence verify` against
it. Production refuses to start without a signing key."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import pytest

from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import RUNS_RECORDED
from attesta_testing.evidence import EvidenceProcess, keys_covering_partitions
from attesta_testing.infra import with_user
from attesta_platform.messaging import Messaging
from attesta_testing.infra import database_url, kafka_bootstrap, postgres_admin_url

pytestmark = pytest.mark.integration

ATTESTA = str(Path(sys.executable).parent / "attesta")


async def attesta(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        ATTESTA, *args, env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


async def test_production_refuses_a_missing_key_and_keygen_makes_one(tmp_path):
    key = tmp_path / "keys" / "log.pem"
    rc, out = await attesta("run", "evidence", env={
        "ATTESTA_ENV": "production", "ATTESTA_EVIDENCE_SIGNING_KEY_FILE": str(key)})
    assert rc == 2 and "does not exist" in out and "keygen" in out, out
    assert not key.exists()

    rc, out = await attesta("evidence", "keygen", "--out", str(key))
    assert rc == 0 and "key id:" in out, out
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert Path(f"{key}.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    rc, out = await attesta("evidence", "keygen", "--out", str(key))
    assert rc == 2 and "refusing to replace" in out, out
    rc, out = await attesta("evidence", "public-key", "--key", str(key))
    assert rc == 0 and out == Path(f"{key}.pub").read_text()


async def test_migrate_run_intake_and_verify_end_to_end(tmp_path):
    marker = uuid.uuid4().hex[:10]
    database, role, password = f"evidence_e2e_{marker}", f"evt_{marker}", "pw-e2e"
    env = {"ATTESTA_EVIDENCE_DATABASE": database, "ATTESTA_EVIDENCE_DB_ROLE": role,
           "ATTESTA_EVIDENCE_DB_PASSWORD": password, "ATTESTA_PG_ADMIN_URL": postgres_admin_url()}
    admin_db = database_url(postgres_admin_url(), database)
    proc = None
    try:
        rc, out = await attesta("evidence", "migrate", env=env)
        assert rc == 0, out
        rc, out = await attesta("evidence", "migrate", env=env)  # idempotent
        assert rc == 0, out
        key = tmp_path / "log.pem"
        assert (await attesta("evidence", "keygen", "--out", str(key)))[0] == 0
        proc = EvidenceProcess({
            **env, "ATTESTA_ENV": "production", "ATTESTA_EVIDENCE_SIGNING_KEY_FILE": str(key),
            "ATTESTA_EVIDENCE_DATABASE_URL": with_user(admin_db, role, password),
            "ATTESTA_EVIDENCE_CONSUMER_GROUP": f"evidence-e2e-{marker}",
            # a new group on the shared broker: skip the history others left on the topic
            "ATTESTA_EVIDENCE_CONSUMER_OFFSET_RESET": "latest",
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap(),
        }, tmp_path / "evidence.log").start()

        answer = f"End-to-end answer {marker}: Brandly (https://brandly.example/) \N{SNOWMAN}"
        digest = hashlib.sha256(answer.encode()).hexdigest()
        now = datetime.now(UTC)
        run = RunRecorded(run_id=f"run-{marker}", workspace_id="ws-e2e", engine="e", model="m",
                          prompt="p", answer=answer, answer_sha256=digest, requested_at=now,
                          answered_at=now)
        messaging = Messaging(kafka_bootstrap(), f"e2e-{marker}")
        await messaging.start()
        try:
            async with httpx.AsyncClient(base_url=proc.url) as http:
                # A brand-new "latest" group may still be rebalancing and skip a message: publish
                # again until it is stored (the same run twice is one record, one reference).
                for attempt in range(150):
                    if attempt % 15 == 0:
                        await messaging.publish(RUNS_RECORDED, run, key=run.run_id,
                                                correlation_id=marker)
                    resp = await http.get(f"/v1/public/evidence/{digest}")
                    if resp.status_code == 200:
                        break
                    await asyncio.sleep(0.2)
        finally:
            await messaging.stop()
        async with httpx.AsyncClient(base_url=proc.url) as http:
            assert resp.status_code == 200, resp.text
            assert resp.json()["references"] == [{"kind": "run", "count": 1}]
            check = await http.post(f"/v1/public/evidence/{digest}/check",
                                    json={"content": answer})
            assert check.json()["match"] is True
        rc, out = await attesta("evidence", "verify", "inclusion", "--base-url", proc.url,
                                "--public-key", f"{key}.pub", "--content", answer)
        assert rc == 0 and "OK included" in out, out
        assert proc.stop() == 0  # SIGTERM: a clean stop
    finally:
        if proc is not None:
            proc.stop()
        conn = await asyncpg.connect(postgres_admin_url())
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            await conn.execute(f'DROP ROLE IF EXISTS "{role}"')
        finally:
            await conn.close()


async def test_kill_9_mid_intake_loses_nothing_and_duplicates_nothing(evidence_db, tmp_path):
    """SIGKILL the service while it stores a burst of runs, start it again: every run is stored
    once, the log is gap-free and rebuilds to the signed root, one event per reference."""
    from attesta_evidence.adapters.keys import generate_key_file
    from attesta_evidence.domain import merkle
    from attesta_evidence.domain.model import leaf_entry

    marker = uuid.uuid4().hex[:10]
    key = tmp_path / "log.pem"
    generate_key_file(key)
    env = {"ATTESTA_EVIDENCE_DATABASE_URL": evidence_db.app_url,
           "ATTESTA_EVIDENCE_SIGNING_KEY_FILE": str(key),
           "ATTESTA_EVIDENCE_CONSUMER_GROUP": f"evidence-kill-{marker}",
           "ATTESTA_EVIDENCE_CONSUMER_OFFSET_RESET": "latest",
           "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap()}
    first = EvidenceProcess(env, tmp_path / "first.log").start()
    # Large enough to span many intake batches: group commit stores up to 500 records per
    # transaction at ~20,000 records/s (docs/benchmarks/evidence.md), so a burst of 2,000 could
    # be stored whole between two polls before the kill lands.
    n = 6000
    now = datetime.now(UTC)
    runs = []
    for i in range(n):
        answer = f"burst {marker} answer {i}"
        runs.append(RunRecorded(run_id=f"kill-{marker}-{i}", workspace_id="ws-kill", engine="e",
                                model="m", prompt="p", answer=answer,
                                answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                                requested_at=now, answered_at=now))
    messaging = Messaging(kafka_bootstrap(), f"kill-{marker}")
    await messaging.start()
    admin = await asyncpg.connect(evidence_db.admin_url)
    second = None
    try:
        # Until the new group has committed a position on every partition, a rebalance would
        # restart it at "latest" and skip messages; a probe per partition settles that first.
        probes = keys_covering_partitions(f"probe-{marker}", 3)
        for attempt in range(200):
            if attempt % 25 == 0:
                for key in probes:
                    text = f"probe {key}"
                    await messaging.publish(RUNS_RECORDED, RunRecorded(
                        run_id=key, workspace_id="ws-kill", engine="e", model="m", prompt="p",
                        answer=text, answer_sha256=hashlib.sha256(text.encode()).hexdigest(),
                        requested_at=now, answered_at=now), key=key, correlation_id=marker)
            if await admin.fetchval("SELECT count(DISTINCT ref_id) FROM evidence_references "
                                    "WHERE ref_id LIKE $1", f"probe-{marker}-%") == len(probes):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the probes were not stored")
        # Watched while it is still being published: waiting for the whole burst first once let
        # the service store all of it before the first look (6000 stored at the kill).
        publishing = asyncio.ensure_future(asyncio.gather(*(
            messaging.publish(RUNS_RECORDED, r, key=r.run_id, correlation_id=marker) for r in runs)))

        async def stored() -> int:
            return await admin.fetchval(
                "SELECT count(*) FROM evidence_references WHERE ref_id LIKE $1", f"kill-{marker}-%")

        for _ in range(6000):
            if await stored() >= 40:
                break
            await asyncio.sleep(0.005)  # poll often: a poll's gap is thousands of records
        first.proc.kill()  # SIGKILL mid-burst: no clean shutdown, no final commits
        first.proc.wait(10)
        await publishing
        at_kill = await stored()
        assert 40 <= at_kill < n, at_kill  # really killed mid-way

        second = EvidenceProcess(env, tmp_path / "second.log").start()
        for _ in range(1200):
            if await stored() >= n:
                break
            await asyncio.sleep(0.1)
        assert await stored() == n
        await asyncio.sleep(1.0)  # redeliveries after the restart would land by now
        assert await stored() == n
        rows = await admin.fetch("SELECT sha256, size_bytes, media_type, first_recorded_at, "
                                 "log_index FROM evidence ORDER BY log_index")
        assert [r["log_index"] for r in rows] == list(range(len(rows)))  # gap-free
        assert await admin.fetchval("SELECT max(idx) + 1 FROM log_nodes WHERE level = 0") == len(rows)
        refs = await admin.fetchval("SELECT count(*) FROM evidence_references")
        for _ in range(100):  # the relay publishes what the killed process staged
            if not await admin.fetchval(
                    "SELECT count(*) FROM messaging_outbox WHERE published_at IS NULL"):
                break
            await asyncio.sleep(0.1)
        assert await admin.fetchval("SELECT count(DISTINCT event_id) FROM messaging_outbox") == refs
        assert await admin.fetchval(
            "SELECT count(*) FROM messaging_outbox WHERE published_at IS NULL") == 0
        async with httpx.AsyncClient(base_url=second.url) as http:
            head = (await http.get("/v1/public/log/tree-head")).json()
        tree = merkle.MemoryTree.from_entries(
            leaf_entry(r["sha256"], r["size_bytes"], r["media_type"], r["first_recorded_at"])
            for r in rows)
        assert head["tree_size"] == len(rows) and head["root_hash"] == tree.root().hex()
    finally:
        await admin.close()
        await messaging.stop()
        if second is not None:
            assert second.stop() == 0
        first.stop()
