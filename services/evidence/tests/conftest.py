"""Fixtures of the evidence tests (helpers in ``attesta_testing.evidence``)."""

from __future__ import annotations

import asyncpg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_testing.evidence import LiveApi, migrated_database
from attesta_testing.infra import postgres_admin_url


@pytest.fixture
async def evidence_db():
    async with migrated_database(postgres_admin_url()) as db:
        yield db


@pytest.fixture
async def app_pool(evidence_db):
    pool = await asyncpg.create_pool(evidence_db.app_url, min_size=1, max_size=10)
    yield pool
    await pool.close()


@pytest.fixture
def log_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture
def live_api(evidence_db, log_key):
    api = LiveApi(evidence_db.app_url, log_key).start()
    yield api
    api.stop()
