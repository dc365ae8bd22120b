"""Migrations 0004 and 0005 on a real PostgreSQL: engines stored before it (naming a variable or a file of
the server) lose those references and keep working only through the operator's allow-list; the
file reference is logged with the entry that keeps it working; engine_secrets refuses DELETE,
keeps a secret's identity and value, and keeps a retired secret retired. 0005: every stored
engine gets an explicit collection method (derived as EngineSpec does), and samples collected
before it keep no method or build."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from attesta_collector.adapters.migrate import MIGRATION
from attesta_collector.domain.model import EngineSpec
from attesta_testing.infra import postgres_admin_url, temp_database

pytestmark = pytest.mark.integration


def _upgrade_to(db_admin_url: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    engine = create_engine(db_admin_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as connection:
            cfg = Config()
            cfg.set_main_option("script_location", str(Path(MIGRATION.script_location)))
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, revision)
    finally:
        engine.dispose()


OLD = {
    "by-env": {"name": "gpt", "base_url": "https://api.example.com/v1", "model": "m",
               "api_key_env": "OPENAI_API_KEY", "api_key_file": None, "concurrency": 4},
    "by-file": {"name": "mistral", "base_url": "https://api.example.com/v1", "model": "m",
                "api_key_env": None, "api_key_file": "/run/keys/mistral.key"},
    "keyless": {"name": "local", "base_url": "https://api.example.com/v1", "model": "m",
                "api_key_env": None, "api_key_file": None},
    "ours": {"kind": "assistant", "name": "assistant", "base_url": None, "model": "default",
             "api_key_env": None, "api_key_file": None},
    "sonar": {"name": "sonar", "base_url": "https://api.example.com/v1", "model": "sonar",
              "params": {"search_mode": "web"}, "api_key_env": None, "api_key_file": None},
    "online": {"name": "online", "base_url": "https://api.example.com/v1",
               "model": "openai/gpt-4o:online", "api_key_env": None, "api_key_file": None},
}
# Migration 0005 (issue #25 item 4) makes each stored engine's collection method explicit.
METHODS = {"by-env": "api", "by-file": "api", "keyless": "api", "ours": "assistant",
           "sonar": "api_with_search", "online": "api_with_search"}


async def test_old_engine_records_become_operator_keys_and_secrets_are_guarded(capfd):
    role = f"colmig_{uuid.uuid4().hex[:10]}"
    try:
        await _migrate_old_records(role)
    finally:
        admin = await asyncpg.connect(postgres_admin_url())
        try:
            await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        finally:
            await admin.close()
    logged = capfd.readouterr()
    text = logged.out + logged.err
    # The operator learns which entry keeps each converted engine working.
    file_name = "file-" + hashlib.sha256(b"/run/keys/mistral.key").hexdigest()[:12]
    entry = json.dumps({"ws-old": {file_name: "file:/run/keys/mistral.key"}})
    assert entry in text or json.dumps(entry) in text, text[-2000:]
    assert "OPENAI_API_KEY" in text


async def _migrate_old_records(role: str) -> None:
    async with temp_database("colmig") as url:
        await asyncio.to_thread(_upgrade_to, url, "0003")
        conn = await asyncpg.connect(url)
        try:
            for engine_id, spec in OLD.items():
                await conn.execute("INSERT INTO engines (workspace_id, engine_id, spec) "
                                   "VALUES ('ws-old', $1, $2)", engine_id, json.dumps(spec))
            await conn.execute(
                "INSERT INTO collections (collection_id, workspace_id, schedule_id, prompt_id, "
                "engine_id, slot, sample, prompt_text, status, model) VALUES ('col-old', "
                "'ws-old', 'sch', 'p', 'keyless', now(), 0, 'q', 'collected', 'm')")
        finally:
            await conn.close()
        await MIGRATION.migrate(postgres_admin_url(), urlsplit(url).path.lstrip("/"), role,
                                "test-pw")
        conn = await asyncpg.connect(url)
        try:
            specs = {r["engine_id"]: json.loads(r["spec"]) for r in await conn.fetch(
                "SELECT engine_id, spec::text AS spec FROM engines")}
            file_name = "file-" + hashlib.sha256(b"/run/keys/mistral.key").hexdigest()[:12]
            assert specs["by-env"]["operator_key"] == "OPENAI_API_KEY"
            assert specs["by-file"]["operator_key"] == file_name
            assert "operator_key" not in specs["keyless"] and "operator_key" not in specs["ours"]
            for engine_id, spec in specs.items():
                assert "api_key_env" not in spec and "api_key_file" not in spec, engine_id
                EngineSpec.model_validate(spec)  # every stored spec reads under the new contract
                assert spec["collection_method"] == METHODS[engine_id], engine_id
                assert {k: v for k, v in spec.items()
                        if k not in ("operator_key", "collection_method")} == {
                    k: v for k, v in OLD[engine_id].items()
                    if k not in ("api_key_env", "api_key_file")}
            # A sample collected before 0005: its method and build are unknown, not guessed.
            old_row = await conn.fetchrow("SELECT collection_method, model_build FROM collections")
            assert tuple(old_row) == (None, None)
            with pytest.raises(asyncpg.CheckViolationError):
                await conn.execute("UPDATE collections SET collection_method = 'grounded'")
            # engine_secrets: a row is never deleted, keeps its identity and value, and once
            # retired (sealed value erased) stays retired.
            await conn.execute("INSERT INTO engine_secrets (workspace_id, secret_id, name, kek_id, "
                               "wrapped_key, ciphertext) VALUES ('ws-old', 's1', 'n', 'k', "
                               "'\\x01', '\\x02')")
            for statement in ("DELETE FROM engine_secrets",
                              "UPDATE engine_secrets SET workspace_id='ws-other'",
                              "UPDATE engine_secrets SET ciphertext='\\x03'"):
                with pytest.raises(asyncpg.RaiseError):
                    await conn.execute(statement)
            with pytest.raises(asyncpg.CheckViolationError):  # retired means erased
                await conn.execute("UPDATE engine_secrets SET retired_at=now()")
            await conn.execute("UPDATE engine_secrets SET retired_at=now(), kek_id=NULL, "
                               "wrapped_key=NULL, ciphertext=NULL")
            with pytest.raises(asyncpg.RaiseError):
                await conn.execute("UPDATE engine_secrets SET retired_at=NULL, kek_id='k', "
                                   "wrapped_key='\\x01', ciphertext='\\x02'")
        finally:
            await conn.close()
