"""One way for every service to own its PostgreSQL database: ``attesta <service> migrate``.

Run with the admin URL (``ATTESTA_PG_ADMIN_URL``). Idempotent — every step is "if missing", so
re-running (or two concurrent runs, as parallel test sessions do) changes nothing:
1. the app role (LOGIN, and nothing else: no superuser, no CREATEDB/CREATEROLE/replication);
   its password is (re)set to the configured one;
2. the service's database;
3. alembic upgrades the schema to head, as the admin (the app role owns nothing, so it can
   neither alter tables nor drop the append-only triggers);
4. the database is closed to PUBLIC, and the app role gets CONNECT plus the service's own
   least-privilege ``grants`` (SQL with ``{role}`` where the quoted role name goes).

A service describes its database once (``ServiceMigration``: its alembic folder and grants); its
CLI runs ``migrate_command`` and its start-up opens the pool with ``open_migrated_pool``, which
tells an unmigrated database (exit 2) from an unreachable one (exit 3).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from attesta_platform.logs import get_logger

if TYPE_CHECKING:
    import asyncpg


def with_database(url: str, database: str) -> str:
    """``url`` (same server and credentials) pointed at another database."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def ensure_role_and_database(admin_url: str, database: str, role: str, password: str) -> None:
    with psycopg.connect(with_database(admin_url, "postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            try:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                                     "NOREPLICATION").format(sql.Identifier(role)))
            except psycopg.errors.DuplicateObject:
                pass  # a concurrent migrate created it
        conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            except psycopg.errors.DuplicateDatabase:
                pass


def upgrade_to_head(db_admin_url: str, script_location: Path) -> None:
    """alembic ``upgrade head`` on one open connection, which every service's ``env.py`` uses
    (``run_alembic_environment``)."""
    # heavy: Alembic and SQLAlchemy load only when a migration runs, not with every service
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    url = db_admin_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            cfg = Config()
            cfg.set_main_option("script_location", str(script_location))
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, "head")
    finally:
        engine.dispose()


def run_alembic_environment() -> None:
    """The whole of every service's alembic ``env.py``: run its migrations on the connection
    ``upgrade_to_head`` opened, so the upgrade is one transaction on one connection (there is
    no alembic.ini and no offline mode; migrations are plain SQL, no models)."""
    from alembic import context  # heavy: Alembic, loaded by its own env.py run only

    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


def grant(db_admin_url: str, database: str, role: str, grants: Iterable[str],
          database_privileges: str = "CONNECT") -> None:
    r, d = sql.Identifier(role), sql.Identifier(database)
    with psycopg.connect(db_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(d))
        conn.execute(sql.SQL("GRANT {} ON DATABASE {} TO {}").format(
            sql.SQL(database_privileges), d, r))
        for statement in grants:
            conn.execute(sql.SQL(statement).format(role=r))


def migrate_service_database(*, admin_url: str, database: str, role: str, password: str,
                             script_location: Path, grants: Iterable[str],
                             database_privileges: str = "CONNECT") -> None:
    """Everything ``attesta <service> migrate`` does (see the module docstring)."""
    ensure_role_and_database(admin_url, database, role, password)
    target = with_database(admin_url, database)
    upgrade_to_head(target, script_location)
    grant(target, database, role, grants, database_privileges)


@dataclass(frozen=True)
class ServiceMigration:
    """One service's database: what ``attesta <service> migrate`` creates and upgrades."""

    service: str
    script_location: Path  # the service's alembic folder (inside its package, so wheels carry it)
    grants: Sequence[str]
    database_privileges: str = "CONNECT"

    def run(self, admin_url: str, database: str, role: str, password: str) -> None:
        migrate_service_database(admin_url=admin_url, database=database, role=role,
                                 password=password, script_location=self.script_location,
                                 grants=self.grants, database_privileges=self.database_privileges)
        get_logger(f"attesta.{self.service}.migrate").info(
            f"{self.service} database migrated", database=database, role=role)

    async def migrate(self, admin_url: str, database: str, role: str, password: str) -> None:
        # psycopg and alembic block: off the event loop, so a running service may call it too.
        await asyncio.to_thread(self.run, admin_url, database, role, password)


def migrate_command(migration: ServiceMigration, admin_url: str, database: str, role: str,
                    password: str, done: str) -> int:
    """``attesta <service> migrate``: migrate, then print ``done`` (``{database}`` and ``{role}``
    filled in); the exit code 0 (a failure raises)."""
    migration.run(admin_url, database, role, password)
    print(done.format(database=database, role=role))
    return 0


async def open_migrated_pool(service: str, create: Callable[[], Awaitable[asyncpg.Pool]], *,
                             probe_table: str, url_setting: str) -> asyncpg.Pool:
    """The service's pool, once a query on ``probe_table`` shows the schema is there. A
    database without it exits 2 (run migrate); one that cannot be used exits 3, naming
    ``url_setting`` (the variable to fix). Both print why on stderr, not a traceback."""
    import asyncpg  # the async driver only at a service's start: `migrate` runs on psycopg alone

    pool: asyncpg.Pool | None = None
    try:
        pool = await create()
        async with pool.acquire() as conn:
            # probe_table is the service's own constant, never input
            await conn.fetchval(f"SELECT count(*) FROM {probe_table}")
    except asyncpg.UndefinedTableError:
        await _close_quietly(pool)
        print(f"{service}: the database has no {service} tables: run `attesta {service} migrate` "
              "with ATTESTA_PG_ADMIN_URL", file=sys.stderr)
        raise SystemExit(2) from None
    except (OSError, asyncpg.PostgresError) as exc:
        await _close_quietly(pool)
        print(f"{service}: cannot use PostgreSQL at {url_setting}: {exc!r}", file=sys.stderr)
        raise SystemExit(3) from None
    return pool


async def _close_quietly(pool: asyncpg.Pool | None) -> None:
    if pool is not None:
        pool.terminate()  # exiting anyway: no need to wait for connections to finish
