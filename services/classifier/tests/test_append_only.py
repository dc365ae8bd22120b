"""Append-only is enforced by PostgreSQL: the app role lacks the privileges, and triggers refuse
UPDATE/DELETE/TRUNCATE of history and runs even for the owner; facts are never deleted."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

pytestmark = pytest.mark.integration


async def _seed_row(admin: asyncpg.Connection) -> str:
    run_id = f"ao-{uuid.uuid4().hex}"
    sha = hashlib.sha256(b"a").hexdigest()
    await admin.execute("INSERT INTO runs (run_id, workspace_id, engine, model, prompt, answer, "
                        "answer_sha256) VALUES ($1, 'ws-ao', 'e', 'm', 'p', 'a', $2)", run_id, sha)
    await admin.execute(
        "INSERT INTO classification_history (classification_id, run_id, brand_id, workspace_id, "
        "citation_class, decided_by, ground_truth_hash, reason, trigger, heuristic_version, "
        "evidence_sha256) VALUES ($1, $2, 'b', 'ws-ao', 'ABSENT', 'deterministic', $3, 'r', 'live', "
        "'h1', $3)", uuid.uuid4(), run_id, sha)
    return run_id


@pytest.mark.parametrize("statement", [
    "UPDATE classification_history SET citation_class = 'STRONG' WHERE run_id = $1",
    "DELETE FROM classification_history WHERE run_id = $1",
    "UPDATE runs SET answer = 'rewritten' WHERE run_id = $1",
    "DELETE FROM runs WHERE run_id = $1",
])
async def test_app_role_and_owner_cannot_rewrite(admin_conn, app_conn, statement):
    admin, app = admin_conn, app_conn
    run_id = await _seed_row(admin)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app.execute(statement, run_id)
    # The owner (superuser here) is stopped by the trigger.
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await admin.execute(statement, run_id)
    assert await admin.fetchval("SELECT count(*) FROM classification_history WHERE run_id = $1", run_id) == 1


async def test_truncate_refused(admin_conn, app_conn):
    admin, app = admin_conn, app_conn
    await _seed_row(admin)
    for table in ("classification_history", "runs", "ground_truth_facts"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app.execute(f"TRUNCATE {table} CASCADE")
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only|refused"):
            await admin.execute(f"TRUNCATE {table} CASCADE")


async def test_facts_deactivate_only(admin_conn, app_conn):
    admin, app = admin_conn, app_conn
    ws = f"ws-{uuid.uuid4().hex[:8]}"
    await app.execute("INSERT INTO brands (workspace_id, brand_id, name) VALUES ($1, 'b', 'B')", ws)
    fid = f"f_{uuid.uuid4().hex}"
    await app.execute(
        "INSERT INTO ground_truth_facts (fact_id, workspace_id, brand_id, type, text, source_url, "
        "fetched_at, attribution, content_sha256) VALUES ($1, $2, 'b', 'manual', 't', 'https://b.example/', "
        "$3, 'a', $4)", fid, ws, datetime.now(UTC), "0" * 64)
    await app.execute("UPDATE ground_truth_facts SET active = false, superseded_at = now() "
                      "WHERE fact_id = $1", fid)  # allowed: deactivation
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app.execute("UPDATE ground_truth_facts SET text = 'other' WHERE fact_id = $1", fid)
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="only active"):
        await admin.execute("UPDATE ground_truth_facts SET text = 'other' WHERE fact_id = $1", fid)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app.execute("DELETE FROM ground_truth_facts WHERE fact_id = $1", fid)
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="never deleted"):
        await admin.execute("DELETE FROM ground_truth_facts WHERE fact_id = $1", fid)
    assert await app.fetchval("SELECT text FROM ground_truth_facts WHERE fact_id = $1", fid) == "t"


async def test_migrate_is_idempotent(classifier_db):
    from attesta_classifier.adapters.migrate import migrate

    await migrate(classifier_db.admin_url, classifier_db.name, "attesta_classifier_app",
                  "attesta-classifier-dev-only")
    admin = await asyncpg.connect(classifier_db.admin_url)
    try:
        assert await admin.fetchval("SELECT version_num FROM alembic_version") == "0010"  # the head revision
        grants = {r["privilege_type"] for r in await admin.fetch(
            "SELECT privilege_type FROM information_schema.role_table_grants "
            "WHERE grantee = 'attesta_classifier_app' AND table_name = 'classification_history'")}
        assert grants == {"SELECT", "INSERT"}
        alert_grants = {r["privilege_type"] for r in await admin.fetch(
            "SELECT privilege_type FROM information_schema.role_table_grants "
            "WHERE grantee = 'attesta_classifier_app' AND table_name = 'alerts'")}
        assert alert_grants == {"SELECT", "INSERT"}  # fired alerts are append-only
    finally:
        await admin.close()
