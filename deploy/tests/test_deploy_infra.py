"""Contract tests for the local infrastructure (`scripts/infra up`): the addresses in the
environment reach a real Kafka, PostgreSQL and Redis that behave as the services expect.

They need KAFKA_BOOTSTRAP_SERVERS, ATTESTA_PG_ADMIN_URL and REDIS_URL (scripts/test.sh sources
.state/env). Without them they fail, on purpose: a skipped infrastructure test checks nothing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run scripts/test.sh, or `scripts/infra up && . .state/env`")
    return value


def test_kafka_produce_consume_and_compacted_topic() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    bootstrap = _env("KAFKA_BOOTSTRAP_SERVERS")
    topic = f"attesta-deploy-test-{uuid.uuid4().hex[:12]}"
    compacted = f"{topic}-compacted"

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            resp = await admin.create_topics([
                NewTopic(topic, num_partitions=1, replication_factor=1),
                NewTopic(compacted, num_partitions=1, replication_factor=1,
                         topic_configs={"cleanup.policy": "compact"}),
            ])
            assert {t[0]: t[1] for t in resp.topic_errors} == {topic: 0, compacted: 0}
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
            await producer.start()
            try:
                md = await producer.send_and_wait(topic, b"hello", key=b"k1")
                assert md.offset == 0
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=f"{topic}-g",
                auto_offset_reset="earliest", enable_auto_commit=False,
            )
            await consumer.start()
            try:
                msg = await asyncio.wait_for(consumer.getone(), 30)
                assert (msg.key, msg.value) == (b"k1", b"hello")
                await consumer.commit()  # the offsets topic (RF 1) works
            finally:
                await consumer.stop()
        finally:
            await admin.delete_topics([topic, compacted])
            await admin.close()

    asyncio.run(asyncio.wait_for(scenario(), 90))


def test_postgres_admin_role_is_superuser() -> None:
    import asyncpg

    url = _env("ATTESTA_PG_ADMIN_URL")

    async def scenario() -> None:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            assert await conn.fetchval("SELECT 1") == 1
            assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is True
            assert int(await conn.fetchval("SHOW server_version_num")) >= 150000
            if url.endswith("@127.0.0.1:15432/postgres"):  # our own server: its settings are ours
                assert await conn.fetchval("SHOW max_connections") == "200"
        finally:
            await conn.close()

    asyncio.run(scenario())


def test_redis_ping_and_roundtrip() -> None:
    import redis.asyncio as aioredis

    url = _env("REDIS_URL")

    async def scenario() -> None:
        client = aioredis.from_url(url)
        try:
            assert await client.ping() is True
            key = f"attesta-deploy-test:{uuid.uuid4().hex}"
            await client.set(key, "v", ex=30)
            assert await client.get(key) == b"v"
            await client.delete(key)
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_infra_status_reports_ready() -> None:
    res = subprocess.run(["bash", str(REPO / "scripts" / "infra"), "status"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    for component in ("kafka", "postgres", "redis"):
        assert any(line.startswith(f"[infra] {component}:") and "ready" in line and "NOT READY" not in line
                   for line in res.stdout.splitlines()), res.stdout
