"""The outbox relay against real PostgreSQL and Kafka: staged events reach the topic, a rolled
back transaction publishes nothing, and re-running the relay publishes nothing twice."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED
from attesta_platform.messaging import Messaging
from attesta_platform.outbox import OUTBOX_DDL, enqueue, relay_batch
from attesta_testing.infra import kafka_bootstrap, temp_database

pytestmark = pytest.mark.integration


async def test_outbox_relay_publishes_committed_events_once():
    bootstrap = kafka_bootstrap()
    async with temp_database("t_outbox") as url:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
        try:
            await _relay_publishes_committed_events_once(pool, bootstrap)
        finally:
            await pool.close()


async def _relay_publishes_committed_events_once(pool: asyncpg.Pool, bootstrap: str) -> None:
    m = Messaging(bootstrap, producer="test-outbox")
    marker = uuid.uuid4().hex
    try:
        await pool.execute(OUTBOX_DDL)
        await m.ensure_topics([CHAT_REQUESTED])
        await m.start()
        committed = [
            m.envelope(CHAT_REQUESTED, ChatRequested(request_id=f"{marker}-{i}", question="q"),
                       correlation_id=marker)
            for i in range(3)
        ]
        async with pool.acquire() as c, c.transaction():
            for env in committed:
                await enqueue(c, CHAT_REQUESTED, env.payload.request_id, env)
            await enqueue(c, CHAT_REQUESTED, "dup", committed[0])  # same event id: ignored
        with pytest.raises(RuntimeError):
            async with pool.acquire() as c, c.transaction():
                rolled_back = m.envelope(
                    CHAT_REQUESTED, ChatRequested(request_id=f"{marker}-rb", question="q"),
                    correlation_id=marker)
                await enqueue(c, CHAT_REQUESTED, "rb", rolled_back)
                raise RuntimeError("business rule failed: transaction rolls back")

        assert await relay_batch(pool, m) == 3
        assert await relay_batch(pool, m) == 0  # nothing published twice

        reader = AIOKafkaConsumer(CHAT_REQUESTED, bootstrap_servers=bootstrap,
                                  auto_offset_reset="earliest", enable_auto_commit=False)
        await reader.start()
        got: list[str] = []
        try:
            deadline = asyncio.get_running_loop().time() + 30
            while len(got) < 3 and asyncio.get_running_loop().time() < deadline:
                for records in (await reader.getmany(timeout_ms=500)).values():
                    for r in records:
                        try:
                            env = Envelope[ChatRequested].model_validate_json(r.value)
                        except Exception:  # noqa: BLE001 - other tests' poison messages
                            continue
                        if env.correlation_id == marker:
                            got.append(env.payload.request_id)
            await asyncio.sleep(0.5)  # give a (wrong) extra message time to show up
            for records in (await reader.getmany(timeout_ms=500)).values():
                for r in records:
                    if marker.encode() in (r.value or b""):
                        got.append("extra")
        finally:
            await reader.stop()
        assert sorted(got) == sorted(e.payload.request_id for e in committed)
    finally:
        await m.stop()
