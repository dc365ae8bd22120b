"""``attesta gateway migrate``: the database, its least-privilege app role, the schema.

Run with the admin URL (``ATTESTA_PG_ADMIN_URL``). The app role, its password and the database
name are read from the gateway's own URL (``ATTESTA_GATEWAY_DATABASE_URL``), so the one URL the
gateway connects with is also the one thing to configure. Safe to run again: every step is
"if missing", then alembic upgrades to head.

The app role gets exactly what the gateway does: read keys, add keys, set ``revoked_at``
(a trigger refuses anything else), and read/write idempotency records. No DDL, no DELETE on keys.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

MIGRATIONS = Path(__file__).resolve().parents[1] / "migrations"


def _with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def migrate(admin_url: str, app_url: str) -> str:
    """Create/upgrade; returns the database name."""
    app = urlsplit(app_url)
    role, password = unquote(app.username or ""), unquote(app.password or "")
    database = app.path.lstrip("/")
    if not role or not password or not database:
        raise ValueError("ATTESTA_GATEWAY_DATABASE_URL needs a user, a password and a database")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            try:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)))
            except psycopg.errors.DuplicateObject:
                pass  # created concurrently (parallel test runs)
        conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              (database,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            except psycopg.errors.DuplicateDatabase:
                pass
    _upgrade(_with_database(admin_url, database))
    with psycopg.connect(_with_database(admin_url, database), autocommit=True) as conn:
        r, d = sql.Identifier(role), sql.Identifier(database)
        for stmt in (
            sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(d),
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(d, r),
            sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"),
            sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(r),
            sql.SQL("GRANT SELECT, INSERT ON api_keys TO {}").format(r),
            sql.SQL("GRANT UPDATE (revoked_at) ON api_keys TO {}").format(r),
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_records TO {}").format(r),
        ):
            conn.execute(stmt)
    return database


def _upgrade(admin_db_url: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    url = admin_db_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            cfg = Config()
            cfg.set_main_option("script_location", str(MIGRATIONS))
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, "head")
    finally:
        engine.dispose()
