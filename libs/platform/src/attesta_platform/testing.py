"""Pytest helpers for tests that need the real infrastructure.

Infrastructure comes from environment variables (``scripts/infra up`` writes them to
``.state/env``) or, where a Docker engine answers, from testcontainers. With neither, the test
fails loudly: a skipped infrastructure test checks nothing.
"""

from __future__ import annotations

import os

import pytest


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env().ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False


def kafka_bootstrap() -> str:
    value = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if value:
        return value
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer

        container = KafkaContainer().with_kraft()
        container.start()
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = container.get_bootstrap_server()
        return os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    pytest.fail(
        "no Kafka: set KAFKA_BOOTSTRAP_SERVERS (run `scripts/infra up` and source .state/env) "
        "or provide a Docker engine for testcontainers",
        pytrace=False,
    )


def postgres_admin_url() -> str:
    value = os.environ.get("ATTESTA_PG_ADMIN_URL")
    if value:
        return value
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("postgres:15", driver=None)
        container.start()
        os.environ["ATTESTA_PG_ADMIN_URL"] = container.get_connection_url()
        return os.environ["ATTESTA_PG_ADMIN_URL"]
    pytest.fail(
        "no PostgreSQL: set ATTESTA_PG_ADMIN_URL (run `scripts/infra up` and source .state/env) "
        "or provide a Docker engine for testcontainers",
        pytrace=False,
    )
