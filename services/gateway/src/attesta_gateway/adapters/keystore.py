"""API keys in PostgreSQL (table ``api_keys``, see migrations)."""

from __future__ import annotations

import asyncpg

from attesta_gateway.adapters.database import Database
from attesta_gateway.domain.keys import StoredKey

_COLUMNS = "key_id, workspace_id, name, digest, created_at, revoked_at"


def _row(r: asyncpg.Record) -> StoredKey:
    return StoredKey(key_id=r["key_id"], workspace_id=r["workspace_id"], name=r["name"],
                     digest=r["digest"], created_at=r["created_at"], revoked_at=r["revoked_at"])


class PostgresKeyStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key_id: str) -> StoredKey | None:
        r = await self._db.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = $1", key_id)
        return _row(r) if r else None

    async def add(self, key: StoredKey) -> None:
        await self._db.execute(
            "INSERT INTO api_keys (key_id, workspace_id, name, digest) VALUES ($1, $2, $3, $4)",
            key.key_id, key.workspace_id, key.name, key.digest)

    async def revoke(self, key_id: str) -> bool:
        status = await self._db.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_id = $1 AND revoked_at IS NULL",
            key_id)
        return status.endswith(" 1")

    async def list(self, workspace_id: str | None = None) -> list[StoredKey]:
        if workspace_id is None:
            rows = await self._db.fetch(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at")
        else:
            rows = await self._db.fetch(
                f"SELECT {_COLUMNS} FROM api_keys WHERE workspace_id = $1 ORDER BY created_at",
                workspace_id)
        return [_row(r) for r in rows]
