"""Pytest helpers for tests that need the real infrastructure.

Infrastructure comes from environment variables (``scripts/infra up`` writes them to
``.state/env``) or, where a Docker engine answers, from testcontainers. With neither, the test
fails loudly: a skipped infrastructure test checks nothing.
"""

from __future__ import annotations

import os
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
