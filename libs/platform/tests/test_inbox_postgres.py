"""Idempotent consumption against a real PostgreSQL: a redelivered event changes nothing."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from attesta_platform.inbox import INBOX_DDL, process_once
from attesta_platform.testing import temp_database

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool():
    async with temp_database("t_inbox") as url:
        p = await asyncpg.create_pool(url, min_size=1, max_size=4)
        await p.execute(INBOX_DDL)
        await p.execute("CREATE TABLE effects (event_id uuid, note text)")
        yield p
        await p.close()


async def test_redelivery_changes_nothing(pool):
    event_id = uuid.uuid4()

    async def effect(conn):
        await conn.execute("INSERT INTO effects VALUES ($1, 'done')", event_id)

    results = [await process_once(pool, "svc", event_id, effect) for _ in range(3)]
    # Concurrent redeliveries race on the primary key; exactly one wins.
    results += await asyncio.gather(*(process_once(pool, "svc", event_id, effect) for _ in range(5)))
    assert results == [True] + [False] * 7
    assert await pool.fetchval("SELECT count(*) FROM effects") == 1
    # Another consumer of the same event has its own inbox row.
    assert await process_once(pool, "other", event_id, effect) is True


async def test_failed_effect_leaves_no_claim(pool):
    event_id = uuid.uuid4()

    async def failing(conn):
        await conn.execute("INSERT INTO effects VALUES ($1, 'partial')", event_id)
        raise RuntimeError("crash mid-effect")

    with pytest.raises(RuntimeError):
        await process_once(pool, "svc", event_id, failing)
    assert await pool.fetchval("SELECT count(*) FROM messaging_inbox") == 0
    assert await pool.fetchval("SELECT count(*) FROM effects") == 0

    async def ok(conn):
        await conn.execute("INSERT INTO effects VALUES ($1, 'done')", event_id)

    assert await process_once(pool, "svc", event_id, ok) is True
    assert await pool.fetchval("SELECT note FROM effects") == "done"
