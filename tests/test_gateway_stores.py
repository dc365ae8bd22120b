"""One contract for the gateway's repositories, run against the in-memory fakes and against
PostgreSQL (a fresh migrated database), so the fakes the service-layer tests use behave like
production."""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.gateway_fakes import InMemoryUnitOfWork
from attesta_gateway.domain.idempotency import StoredResponse
from attesta_gateway.domain.keys import StoredKey, new_key
from attesta_gateway.adapters.unit_of_work import PostgresUnitOfWork


@pytest_asyncio.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                                pytest.param("postgres", marks=pytest.mark.integration)],
                        loop_scope="session")
async def uow(request):
    if request.param == "memory":
        yield InMemoryUnitOfWork(idempotency_ttl_s=60, idempotency_lock_s=30)
        return
    from tests.gateway_fakes import migrated_database

    async with migrated_database() as url:
        pg = PostgresUnitOfWork(url, idempotency_ttl_s=60, idempotency_lock_s=30)
        try:
            yield pg
        finally:
            await pg.close()


async def test_keys_are_added_read_listed_and_revoked_once(uow):
    key_id, _ = new_key()
    other_id, _ = new_key()
    await uow.keys.add(StoredKey(key_id, "ws-a", "ci", "d" * 64))
    await uow.keys.add(StoredKey(other_id, "ws-b", "", "e" * 64))
    got = await uow.keys.get(key_id)
    assert (got.workspace_id, got.name, got.digest, got.active) == ("ws-a", "ci", "d" * 64, True)
    assert got.created_at is not None
    assert await uow.keys.get(new_key()[0]) is None
    assert [k.key_id for k in await uow.keys.list("ws-a")] == [key_id]
    assert {k.key_id for k in await uow.keys.list()} >= {key_id, other_id}
    assert await uow.keys.revoke(key_id) is True
    assert await uow.keys.revoke(key_id) is False
    assert (await uow.keys.get(key_id)).active is False


async def test_idempotency_claim_complete_replay_and_release(uow):
    repo = uow.idempotency
    assert await repo.claim("ws", "k", "fp") is None  # ours now
    held = await repo.claim("ws", "k", "fp")
    assert held.in_flight and held.response is None and held.fingerprint == "fp"
    assert await repo.claim("ws2", "k", "fp") is None  # another workspace's key
    await repo.complete("ws", "k", StoredResponse(201, "application/json", b'{"a":1}'))
    done = await repo.claim("ws", "k", "other")
    assert not done.in_flight and done.fingerprint == "fp"
    assert done.response == StoredResponse(201, "application/json", b'{"a":1}')
    await repo.release("ws", "k")  # a completed record is never released
    assert (await repo.claim("ws", "k", "fp")).response is not None
    await repo.release("ws2", "k")  # an in-flight one is
    assert await repo.claim("ws2", "k", "fp") is None
    assert await repo.purge_expired() == 0
