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
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import httpx


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


async def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: end offset}`` of ``topic`` now (what a reader started here would skip)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [described] = await admin.describe_topics([topic])
    finally:
        await admin.close()
    parts = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    if not parts:
        raise AssertionError(f"{topic} has no partitions: {described}")
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(parts)
    finally:
        await consumer.stop()
    return {tp.partition: offset for tp, offset in ends.items()}


async def commit_group_at_end(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """Commit ``group``'s offsets at ``topic``'s end, so a service started in that group reads
    only what is published from now on: not the shared topic's history of other tests'
    messages, and with no ``latest`` race (a committed offset needs no reset)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    ends = await end_offsets(bootstrap, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        parts = {TopicPartition(topic, p): offset for p, offset in ends.items()}
        consumer.assign(list(parts))
        await consumer.commit(parts)
    finally:
        await consumer.stop()
    return ends


async def read_from(bootstrap: str, topic: str, offsets: dict[int, int],
                    keep: Callable[[bytes], bool], expected: int, timeout_s: float = 30.0,
                    settle_s: float = 0.0) -> list[bytes]:
    """Values of ``topic`` from ``offsets`` on for which ``keep`` is true: returns as soon as
    ``expected`` were found (then reads ``settle_s`` longer, to catch an extra one), or at
    ``timeout_s`` with what was found."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[bytes] = []
    try:
        parts = {TopicPartition(topic, p): offset for p, offset in offsets.items()}
        consumer.assign(list(parts))
        for tp, offset in parts.items():
            consumer.seek(tp, offset)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        settle_until: float | None = None
        while loop.time() < (settle_until if settle_until is not None else deadline):
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                found.extend(r.value for r in records if r.value is not None and keep(r.value))
            if settle_until is None and len(found) >= expected:
                settle_until = loop.time() + settle_s
    finally:
        await consumer.stop()
    return found


def alias_topic(base: str, prefix: str) -> str:
    """Register ``<prefix>.<base>``: a private copy of topic ``base`` (same contract, event type
    and version) so a test or benchmark runs beside the real system on a shared broker."""
    import dataclasses

    from attesta_contracts import all_topics, topic

    name = f"{prefix}.{base}"
    all_topics()[name] = dataclasses.replace(topic(base), name=name)
    return name


def metric_sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` with these labels (any others) in a Prometheus text page;
    0 when no such series exists yet."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


class MetricsScrape:
    """Deltas of a process's ``GET /metrics`` samples between two scrapes (``mark`` first):
    tests read the value before and after instead of assuming a fresh registry."""

    def __init__(self, client: httpx.AsyncClient, path: str = "/metrics") -> None:
        self.client, self.path, self.before = client, path, ""

    async def text(self) -> str:
        # Sent with an empty internal token: the page is open, like /healthz.
        resp = await self.client.get(self.path, headers={"X-Attesta-Internal-Token": ""})
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"].startswith("text/plain")
        return resp.text

    async def mark(self) -> None:
        self.before = await self.text()

    def delta(self, after: str, name: str, **labels: str) -> float:
        return metric_sample(after, name, **labels) - metric_sample(self.before, name, **labels)
