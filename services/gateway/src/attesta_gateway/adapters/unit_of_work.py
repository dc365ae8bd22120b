"""The gateway's unit of work on PostgreSQL: both repositories on one asyncpg pool (created on
first use). Why no transaction around a request: ``service_layer/unit_of_work.py``."""

from __future__ import annotations

from attesta_gateway.adapters.database import Database
from attesta_gateway.adapters.idempotency_store import PostgresIdempotencyStore
from attesta_gateway.adapters.keystore import PostgresKeyStore


class PostgresUnitOfWork:
    """Both repositories on one asyncpg pool (created on first use)."""

    def __init__(self, url: str, *, idempotency_ttl_s: float, idempotency_lock_s: float) -> None:
        self.database = Database(url)
        self.keys = PostgresKeyStore(self.database)
        self.idempotency = PostgresIdempotencyStore(
            self.database, idempotency_ttl_s, idempotency_lock_s)

    async def close(self) -> None:
        await self.database.close()
