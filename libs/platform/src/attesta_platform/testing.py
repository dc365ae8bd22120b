"""Pytest helpers for tests that need the real infrastructure.

Infrastructure comes from environment variables (``scripts/infra up`` writes them to
``.state/env``) or, where a Docker engine answers, from testcontainers. With neither, the test
fails loudly: a skipped infrastructure test checks nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable

import pytest


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env().ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False


def _env_or_container(var: str, what: str, start: Callable[[], str]) -> str:
    value = os.environ.get(var)
    if value:
        return value
    if _docker_answers():
        os.environ[var] = start()
        return os.environ[var]
    pytest.fail(
        f"no {what}: set {var} (run `scripts/infra up` and source .state/env) "
        "or provide a Docker engine for testcontainers",
        pytrace=False,
    )


def _kafka_container() -> str:
    from testcontainers.kafka import KafkaContainer

    container = KafkaContainer().with_kraft()
    container.start()
    return container.get_bootstrap_server()


def _postgres_container() -> str:
    from testcontainers.postgres import PostgresContainer

    container = PostgresContainer("postgres:15", driver=None)
    container.start()
    return container.get_connection_url()


def kafka_bootstrap() -> str:
    return _env_or_container("KAFKA_BOOTSTRAP_SERVERS", "Kafka", _kafka_container)


def postgres_admin_url() -> str:
    return _env_or_container("ATTESTA_PG_ADMIN_URL", "PostgreSQL", _postgres_container)


def redis_url() -> str:
    def _redis_container() -> str:
        from testcontainers.redis import RedisContainer

        container = RedisContainer()
        container.start()
        return f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"

    return _env_or_container("REDIS_URL", "Redis", _redis_container)


def database_url(admin_url: str, database: str) -> str:
    """``admin_url`` pointed at another database (same server and credentials)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{database}"))


@contextlib.asynccontextmanager
async def temp_database(prefix: str = "t"):
    """A fresh, uniquely named PostgreSQL database on the test server; yields its admin URL and
    drops it afterwards. Tests running side by side never share state."""
    import asyncpg

    admin = postgres_admin_url()
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield database_url(admin, name)
    finally:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
