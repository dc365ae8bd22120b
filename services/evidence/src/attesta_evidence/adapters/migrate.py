"""Create the evidence database and its least-privilege role, then run alembic to head.

Run with the admin URL (``attesta evidence migrate``). Idempotent. The app role may only SELECT
and INSERT the evidence tables (plus mark outbox rows published); it owns nothing, so it cannot
drop or disable the append-only triggers either.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from attesta_platform.logs import get_logger

log = get_logger("attesta.evidence.migrate")


def migrations_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "migrations"


def with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unsafe SQL identifier {name!r}")
    return f'"{name}"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


async def ensure_role_and_database(admin_url: str, database: str, role: str, password: str) -> None:
    conn = await asyncpg.connect(with_database(admin_url, "postgres"))
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", role):
            try:
                await conn.execute(f"CREATE ROLE {_ident(role)} LOGIN PASSWORD {_literal(password)} "
                                   "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION")
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
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role};
GRANT SELECT, INSERT ON evidence, evidence_references, log_nodes, tree_heads TO {role};
GRANT SELECT, INSERT ON messaging_outbox TO {role};
GRANT UPDATE (published_at) ON messaging_outbox TO {role};
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


async def grant_app_role(db_admin_url: str, database: str, role: str) -> None:
    conn = await asyncpg.connect(db_admin_url)
    try:
        await conn.execute(f"REVOKE ALL ON DATABASE {_ident(database)} FROM PUBLIC; "
                           f"GRANT CONNECT ON DATABASE {_ident(database)} TO {_ident(role)}")
        await conn.execute(GRANTS.format(role=_ident(role)))
    finally:
        await conn.close()


async def migrate(admin_url: str, database: str, role: str, password: str) -> None:
    """Everything ``attesta evidence migrate`` does."""
    await ensure_role_and_database(admin_url, database, role, password)
    target = with_database(admin_url, database)
    await asyncio.to_thread(run_alembic, target)
    await grant_app_role(target, database, role)
    log.info("evidence database migrated", database=database, role=role)
