"""Fixtures of the collector tests: a migrated database per test, the app pool and units of work
on it, a local fake OpenAI-compatible engine on 127.0.0.1."""

from __future__ import annotations

import pytest

from attesta_collector.adapters.postgres import create_pool
from attesta_collector.bootstrap import unit_of_work_factory
from attesta_collector.fake_engine import FakeEngine
from attesta_testing.collector import migrated_database
from attesta_testing.infra import postgres_admin_url


@pytest.fixture
async def collector_db():
    async with migrated_database(postgres_admin_url()) as db:
        yield db


@pytest.fixture
async def pool(collector_db):
    p = await create_pool(collector_db.app_url, max_size=10)
    yield p
    await p.close()


@pytest.fixture
def new_uow(pool):
    """A new PostgreSQL unit of work on the test's database at each call."""
    return unit_of_work_factory(pool)


@pytest.fixture(scope="module")
def fake_engine():
    engine = FakeEngine(key="sk-test-fake").start()
    yield engine
    engine.stop()
