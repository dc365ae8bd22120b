"""Create the classifier database and its least-privilege role, then run alembic to head.

Run with the admin URL (``attesta classifier migrate``). Idempotent: re-running changes nothing.
The app role gets only what the service needs:
- ``classification_history`` and ``runs``: SELECT, INSERT (history is append-only; triggers also
  refuse UPDATE/DELETE/TRUNCATE to anyone, the owner included);
- ``ground_truth_facts``: SELECT, INSERT, UPDATE of (active, superseded_at, refresh_id) only;
- the mutable state tables: SELECT, INSERT, UPDATE (DELETE only where state is consumed:
  ``pending_judgments``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from attesta_platform.logs import get_logger

log = get_logger("attesta.classifier.migrate")


def migrations_dir() -> Path:
    override = os.environ.get("ATTESTA_CLASSIFIER_MIGRATIONS_DIR")
    if override:
        return Path(override)
    # services/classifier/migrations (this file: services/classifier/src/attesta_classifier/adapters/)
    return Path(__file__).resolve().parents[3] / "migrations"


def _with_db(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unsafe SQL identifier {name!r}")
    return f'"{name}"'


async def ensure_role_and_database(admin_url: str, database: str, role: str, password: str) -> None:
    conn = await asyncpg.connect(_with_db(admin_url, "postgres"))
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", role):
            try:
                await conn.execute(f"CREATE ROLE {_ident(role)} LOGIN PASSWORD "
                                   f"'{password.replace(chr(39), chr(39) * 2)}'")
            except asyncpg.DuplicateObjectError:  # a concurrent migrate created it
                pass
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database):
            try:
                await conn.execute(f"CREATE DATABASE {_ident(database)}")
            except asyncpg.DuplicateDatabaseError:
                pass
    finally:
        await conn.close()


def run_alembic(db_admin_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    sa_url = db_admin_url.replace("postgresql://", "postgresql+psycopg://", 1)
    cfg.set_main_option("sqlalchemy.url", sa_url.replace("%", "%%"))
    command.upgrade(cfg, "head")


GRANTS = """
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT, INSERT ON classification_history, runs TO {role};
GRANT SELECT, INSERT ON ground_truth_facts TO {role};
GRANT UPDATE (active, superseded_at, refresh_id) ON ground_truth_facts TO {role};
GRANT SELECT, INSERT, UPDATE ON brands, run_brand_status, messaging_inbox TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON pending_judgments TO {role};
GRANT SELECT, INSERT, UPDATE ON messaging_outbox TO {role};
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


async def grant_app_role(db_admin_url: str, database: str, role: str) -> None:
    conn = await asyncpg.connect(db_admin_url)
    try:
        await conn.execute(f"REVOKE ALL ON DATABASE {_ident(database)} FROM PUBLIC; "
                           f"GRANT CONNECT, TEMPORARY ON DATABASE {_ident(database)} TO {_ident(role)}")
        await conn.execute(GRANTS.format(role=_ident(role)))
    finally:
        await conn.close()


async def migrate(admin_url: str, database: str, role: str, password: str,
                  db_admin_url: str | None = None) -> None:
    """Everything ``attesta classifier migrate`` does. ``db_admin_url`` (admin credentials on the
    classifier database) defaults to ``admin_url`` pointed at ``database``."""
    import asyncio

    await ensure_role_and_database(admin_url, database, role, password)
    target = db_admin_url or _with_db(admin_url, database)
    await asyncio.to_thread(run_alembic, target)
    await grant_app_role(target, database, role)
    log.info("classifier database migrated", database=database, role=role)
