"""Pytest helpers for tests that need the real infrastructure.

Infrastructure comes from environment variables (``scripts/infra up`` writes them to
``.state/env``) or, where a Docker engine answers, from testcontainers. With neither, the test
fails loudly: a skipped infrastructure test checks nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

if TYPE_CHECKING:
    import httpx
    from testcontainers.core.container import DockerContainer


def _docker_answers() -> bool:
    try:
        import docker

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


# testcontainers path: the project's own images (deploy/build-images.sh), never a registry's.
# Ryuk, testcontainers' reaper, is itself an image from a registry: it is off, and the
# containers started here are stopped when the test process exits.
CONTAINER_PG_PASSWORD = "attesta-testcontainers"


def _local_image(name: str) -> str:
    import docker

    tag = f"attesta/{name}:{os.environ.get('ATTESTA_IMAGE_TAG', 'dev')}"
    try:
        docker.from_env().images.get(tag)
    except docker.errors.ImageNotFound:
        pytest.fail(f"image {tag} not found: build it with `deploy/build-images.sh {name}`",
                    pytrace=False)
    return tag


def _start(container: DockerContainer, ready: Callable[[], bool], what: str,
           timeout_s: float = 120.0) -> DockerContainer:
    import atexit
    import time

    container.start()
    atexit.register(container.stop)
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            logs = b"".join(container.get_wrapped_container().logs(tail=30) or [b""])
            pytest.fail(f"{what} container not ready in {timeout_s:g} s:\n{logs.decode(errors='replace')}",
                        pytrace=False)
        time.sleep(0.5)
    return container


def _on_loopback(container: DockerContainer, port: int,
                 host_port: int | None = None) -> DockerContainer:
    """Publish ``port`` on 127.0.0.1 only (docker-py's (host, port) form; testcontainers'
    with_bind_ports takes no host address)."""
    # The tuple is what docker-py accepts; testcontainers' hint names only a port number.
    container.ports[str(port)] = (
        ("127.0.0.1", host_port) if host_port else ("127.0.0.1",))  # type: ignore[assignment]
    return container


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _kafka_container() -> str:
    import asyncio
    import logging
    from concurrent.futures import ThreadPoolExecutor

    from testcontainers.core.container import DockerContainer

    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    # The broker advertises the address clients use, so the host port is fixed beforehand.
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    container = _on_loopback(DockerContainer(_local_image("kafka"))
                             .with_env("KAFKA_CLUSTER_ID", "DwaOa1s9S668HMh26KpIWw")
                             .with_env("KAFKA_ADVERTISED_ADDRESS", bootstrap), 9092, port)

    def ready() -> bool:
        from aiokafka.admin import AIOKafkaAdminClient

        async def probe() -> bool:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
            try:
                await admin.start()
                return bool(await admin.describe_cluster())
            except Exception:  # noqa: BLE001 - not up yet
                return False
            finally:
                with contextlib.suppress(Exception):
                    await admin.close()

        # Its own thread and loop: fixtures may call this from inside a running event loop.
        quiet = logging.getLogger("aiokafka")
        level, quiet.level = quiet.level, logging.CRITICAL  # "not up yet" is expected here
        try:
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(asyncio.run, probe()).result()
        finally:
            quiet.setLevel(level)

    _start(container, ready, "Kafka")
    return bootstrap


def _postgres_container() -> str:
    from testcontainers.core.container import DockerContainer

    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    container = _on_loopback(DockerContainer(_local_image("postgres"))
                             .with_env("POSTGRES_PASSWORD", CONTAINER_PG_PASSWORD), 5432)
    url: list[str] = []

    def ready() -> bool:
        import psycopg

        if not url:
            with contextlib.suppress(Exception):
                url.append(f"postgresql://attesta_admin:{CONTAINER_PG_PASSWORD}@127.0.0.1:"
                           f"{container.get_exposed_port(5432)}/postgres")
        try:
            with psycopg.connect(url[0], connect_timeout=3) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)
        except Exception:  # noqa: BLE001 - not up yet
            return False

    _start(container, ready, "PostgreSQL")
    return url[0]


def _redis_container() -> str:
    import socket

    from testcontainers.core.container import DockerContainer

    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    container = _on_loopback(DockerContainer(_local_image("redis")), 6379)
    port: list[int] = []

    def ready() -> bool:
        try:
            port[:] = [int(container.get_exposed_port(6379))]
            with socket.create_connection(("127.0.0.1", port[0]), timeout=2) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except Exception:  # noqa: BLE001 - not up yet
            return False

    _start(container, ready, "Redis")
    return f"redis://127.0.0.1:{port[0]}/0"


def kafka_bootstrap() -> str:
    return _env_or_container("KAFKA_BOOTSTRAP_SERVERS", "Kafka", _kafka_container)


def postgres_admin_url() -> str:
    return _env_or_container("ATTESTA_PG_ADMIN_URL", "PostgreSQL", _postgres_container)


def redis_url() -> str:
    return _env_or_container("REDIS_URL", "Redis", _redis_container)


def database_url(admin_url: str, database: str) -> str:
    """``admin_url`` pointed at another database (same server and credentials)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{database}"))


@contextlib.asynccontextmanager
async def temp_database(prefix: str = "t") -> AsyncIterator[str]:
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


@dataclass(frozen=True)
class MigratedDb:
    admin_url: str  # superuser, on the new database
    app_url: str    # the service's least-privilege role
    role: str


def with_user(url: str, user: str, password: str) -> str:
    """``url`` with another user and password."""
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


Migrate = Callable[[str, str, str, str], Awaitable[object]]  # (admin url, database, role, password)


@contextlib.asynccontextmanager
async def migrated_database(migrate: Migrate, admin_url: str | None = None, prefix: str = "t",
                            role_prefix: str = "app") -> AsyncIterator[MigratedDb]:
    """A fresh database migrated by a service's own ``migrate`` (what ``attesta <service>
    migrate`` runs), with a unique app role; both are dropped afterwards."""
    import asyncpg

    admin_url = admin_url or postgres_admin_url()
    role = f"{role_prefix}_{uuid.uuid4().hex[:10]}"
    try:
        async with temp_database(prefix) as url:
            await migrate(admin_url, urlsplit(url).path.lstrip("/"), role, "test-pw")
            yield MigratedDb(url, with_user(url, role, "test-pw"), role)
    finally:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP ROLE IF EXISTS "{role}"')
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


@dataclass(frozen=True)
class AliasedPublisher:
    """A service's publisher whose every ``publish`` to topic ``t`` goes to the private copy
    ``<prefix>.t`` (:func:`alias_topic`): a test or benchmark runs the service's real handlers
    beside the real system on a shared broker, and the product API needs no topics parameter."""

    inner: Any  # ``attesta_platform.messaging.Messaging`` (or anything with its ``publish``)
    prefix: str

    async def publish(self, topic_name: str, payload: Any, **kwargs: Any) -> Any:
        return await self.inner.publish(alias_topic(topic_name, self.prefix), payload, **kwargs)


async def publish_raw(messaging: Any, topic: str, value: bytes | None,
                      key: bytes | None = None) -> None:
    """Bytes as they are, acknowledged (``None`` is a tombstone): the poison messages, wrong
    envelopes and hand-built records tests send. Not part of ``Messaging``: a service publishes
    envelopes of its contracts (``publish``) or tombstones (``publish_tombstone``)."""
    await (await messaging.send(topic, value, key=key))


async def drop_topics(bootstrap: str, names: list[str]) -> None:
    """Delete a test's or benchmark's private topics from the broker and forget their aliases
    (see :func:`alias_topic`), so the contract registry holds only the real topics again."""
    from aiokafka.admin import AIOKafkaAdminClient

    from attesta_contracts import all_topics

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics(names)
    finally:
        await admin.close()
        for name in names:
            all_topics().pop(name, None)


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
