"""Idempotent consumption against a real PostgreSQL: a redelivered event changes nothing."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from attesta_platform.inbox import INBOX_DDL, claim, claim_many
from attesta_testing.infra import temp_database

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool():
    async with temp_database("t_inbox") as url:
        p = await asyncpg.create_pool(url, min_size=1, max_size=4)
        await p.execute(INBOX_DDL)
        await p.execute("CREATE TABLE effects (event_id uuid, note text)")
        yield p
        await p.close()


async def _once(pool, consumer: str, event_id: uuid.UUID, note: str = "done", fail: bool = False) -> bool:
    """A handler's transaction: the claim and the effect commit (or roll back) together."""
    async with pool.acquire() as conn, conn.transaction():
        if not await claim(conn, consumer, event_id):
            return False
        await conn.execute("INSERT INTO effects VALUES ($1, $2)", event_id, note)
        if fail:
            raise RuntimeError("crash mid-effect")
        return True


async def test_redelivery_changes_nothing(pool):
    event_id = uuid.uuid4()
    results = [await _once(pool, "svc", event_id) for _ in range(3)]
    # Concurrent redeliveries race on the primary key; exactly one wins.
    results += await asyncio.gather(*(_once(pool, "svc", event_id) for _ in range(5)))
    assert results == [True] + [False] * 7
    assert await pool.fetchval("SELECT count(*) FROM effects") == 1
    # Another consumer of the same event has its own inbox row.
    assert await _once(pool, "other", event_id) is True


async def test_failed_effect_leaves_no_claim(pool):
    event_id = uuid.uuid4()
    with pytest.raises(RuntimeError):
        await _once(pool, "svc", event_id, "partial", fail=True)
    assert await pool.fetchval("SELECT count(*) FROM messaging_inbox") == 0
    assert await pool.fetchval("SELECT count(*) FROM effects") == 0
    assert await _once(pool, "svc", event_id) is True
    assert await pool.fetchval("SELECT note FROM effects") == "done"


async def test_a_batch_claims_only_what_is_new(pool):
    seen, new = uuid.uuid4(), [uuid.uuid4(), uuid.uuid4()]
    async with pool.acquire() as conn:
        assert await claim_many(conn, "svc", [seen]) == {seen}
        assert await claim_many(conn, "svc", [seen, *new, new[0]]) == set(new)
        assert await claim_many(conn, "svc", []) == set()
