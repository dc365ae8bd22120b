"""`attesta classifier migrate | seed-demo | backfill --from-time` as the lead runs them."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from attesta_classifier.cli import main

pytestmark = pytest.mark.integration


def test_migrate_creates_database_and_role(monkeypatch):
    from attesta_testing.infra import database_url, postgres_admin_url

    name = f"clsmig_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("ATTESTA_PG_ADMIN_URL", postgres_admin_url())
    monkeypatch.setenv("ATTESTA_CLASSIFIER_DB_NAME", name)

    async def check_and_drop() -> tuple[str, bool]:
        conn = await asyncpg.connect(database_url(postgres_admin_url(), name))
        try:
            version = await conn.fetchval("SELECT version_num FROM alembic_version")
            can_delete = await conn.fetchval(
                "SELECT has_table_privilege('attesta_classifier_app', 'classification_history', 'DELETE')")
        finally:
            await conn.close()
        admin = await asyncpg.connect(postgres_admin_url())
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
        return version, can_delete

    main(["migrate"])
    main(["migrate"])  # idempotent
    version, can_delete = asyncio.run(check_and_drop())
    assert version == "0010" and can_delete is False


def test_seed_demo_creates_kb_brands_with_ground_truth(monkeypatch, classifier_db, sites, capsys):
    from attesta_kb import load_brands

    ws = f"demo-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("ATTESTA_CLASSIFIER_DB_URL", classifier_db.app_url)
    main(["seed-demo", "--sites-base", sites.base_url, "--workspace", ws, "--refresh"])
    main(["seed-demo", "--sites-base", sites.base_url, "--workspace", ws])  # re-running updates
    out = capsys.readouterr().out
    assert f"seeded {len(load_brands())} brands" in out and "0 source(s) failed" in out

    async def check():
        conn = await asyncpg.connect(classifier_db.app_url)
        try:
            brands = await conn.fetch("SELECT brand_id, competitors, sources FROM brands WHERE workspace_id = $1", ws)
            facts = await conn.fetchval("SELECT count(*) FROM ground_truth_facts WHERE workspace_id = $1 AND active", ws)
        finally:
            await conn.close()
        return brands, facts

    brands, facts = asyncio.run(check())
    kb = {b["id"]: b for b in load_brands()}
    assert {b["brand_id"] for b in brands} == set(kb)
    for b in brands:
        assert all(s.startswith(sites.base_url) for s in b["sources"])
        assert set(b["competitors"]) == {c for c in kb[b["brand_id"]]["competitors"] if c in kb}
    assert facts > 100 * len(kb)


async def test_backfill_from_time(classifier_db, pool, workspace):
    from attesta_classifier.cli import backfill
    from attesta_classifier.settings import ClassifierSettings
    from attesta_contracts.runs import RunRecorded
    from attesta_contracts.topics import RUNS_RECORDED
    from attesta_platform.consuming import StartAt
    from attesta_platform.messaging import Messaging, envelope_bytes
    from attesta_testing.infra import kafka_bootstrap, publish_raw
    import hashlib

    topic = f"test.classifier-runs.{uuid.uuid4().hex[:8]}"
    m = Messaging(kafka_bootstrap(), "classifier-test")
    await m.ensure_topics([topic], partitions=1)
    await m.start()
    at = datetime.now(UTC)
    try:
        for i in range(6):
            if i == 3:
                await asyncio.sleep(1.2)
                cut = datetime.now(UTC)
                await asyncio.sleep(0.2)
            answer = f"answer {i}"
            p = RunRecorded(run_id=f"{workspace}-{i}", workspace_id=workspace, engine="e", model="m", prompt="p",
                            answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                            requested_at=at, answered_at=at)
            await publish_raw(m, topic, envelope_bytes(RUNS_RECORDED, p, event_id=uuid.uuid4(), producer="t",
                                                         correlation_id="c"), key=p.run_id.encode())
    finally:
        await m.stop()
    settings = ClassifierSettings(classifier_db_url=classifier_db.app_url, kafka_bootstrap_servers=kafka_bootstrap())
    progress = await backfill(settings, group=f"bf-{uuid.uuid4().hex[:6]}", start=StartAt(time=cut), topic=topic,
                              batch=10, rate=1000)
    assert progress.processed == 3
    later = await backfill(settings, group=f"bf-{uuid.uuid4().hex[:6]}",
                           start=StartAt(time=datetime.now(UTC) + timedelta(hours=1)), topic=topic, batch=10, rate=1000)
    assert later.processed == 0
    async with pool.acquire() as conn:
        stored = {r["run_id"] for r in await conn.fetch("SELECT run_id FROM runs WHERE workspace_id = $1", workspace)}
    assert stored == {f"{workspace}-{i}" for i in (3, 4, 5)}
