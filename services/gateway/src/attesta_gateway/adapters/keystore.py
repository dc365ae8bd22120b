"""API keys in PostgreSQL (table ``api_keys``, see migrations)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from attesta_gateway.adapters.database import Database
from attesta_gateway.domain.keys import Revocation, StoredKey
from attesta_gateway.domain.roles import Role

_COLUMNS = ("key_id, workspace_id, name, digest, created_at, revoked_at, role, last_used_at, "
            "created_by, revoked_by")


def _row(r: asyncpg.Record) -> StoredKey:
    return StoredKey(key_id=r["key_id"], workspace_id=r["workspace_id"], name=r["name"],
                     digest=r["digest"], created_at=r["created_at"], revoked_at=r["revoked_at"],
                     role=Role(r["role"]), last_used_at=r["last_used_at"],
                     created_by=r["created_by"], revoked_by=r["revoked_by"])


class PostgresKeyStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key_id: str) -> StoredKey | None:
        r = await self._db.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = $1", key_id)
        return _row(r) if r else None

    async def add(self, key: StoredKey) -> None:
        await self._db.execute(
            "INSERT INTO api_keys (key_id, workspace_id, name, digest, role, created_by) "
            "VALUES ($1, $2, $3, $4, $5, $6)",
            key.key_id, key.workspace_id, key.name, key.digest, str(key.role), key.created_by)

    async def revoke(self, key_id: str) -> bool:
        """The operator's revocation (CLI): any key, the last admin included."""
        status = await self._db.execute(
            "UPDATE api_keys SET revoked_at = now(), revoked_by = 'cli' "
            "WHERE key_id = $1 AND revoked_at IS NULL", key_id)
        return status.endswith(" 1")

    async def revoke_in_workspace(self, workspace_id: str, key_id: str,
                                  by: str | None = None) -> Revocation:
        """Revoke a key of ``workspace_id`` unless it is the workspace's last active admin.

        Why a lock: two admins revoking each other at the same moment would each count two
        admins and leave none. A transaction-scoped advisory lock per workspace serialises
        revocations within a workspace (and nothing else: it needs no table privilege)."""
        async with self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 25))",
                               f"gateway.api_keys:{workspace_id}")
            row = await conn.fetchrow(
                "SELECT role, revoked_at FROM api_keys WHERE key_id = $1 AND workspace_id = $2",
                key_id, workspace_id)
            if row is None:
                return Revocation.NOT_FOUND
            if row["revoked_at"] is not None:
                return Revocation.ALREADY_REVOKED
            if row["role"] == Role.ADMIN:
                admins = await conn.fetchval(
                    "SELECT count(*) FROM api_keys WHERE workspace_id = $1 AND role = 'admin' "
                    "AND revoked_at IS NULL", workspace_id)
                if admins <= 1:
                    return Revocation.LAST_ADMIN
            await conn.execute(
                "UPDATE api_keys SET revoked_at = now(), revoked_by = $2 WHERE key_id = $1",
                key_id, by)
            return Revocation.REVOKED

    async def touch(self, key_ids: Sequence[str], min_interval_s: float) -> None:
        """Record that these keys were used now; a key stamped less than ``min_interval_s``
        ago (by this or another gateway) is left as it is."""
        await self._db.execute(
            "UPDATE api_keys SET last_used_at = now() WHERE key_id = ANY($1::text[]) "
            "AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))",
            list(key_ids), float(min_interval_s))

    async def list(self, workspace_id: str | None = None) -> list[StoredKey]:
        if workspace_id is None:
            rows = await self._db.fetch(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at")
        else:
            rows = await self._db.fetch(
                f"SELECT {_COLUMNS} FROM api_keys WHERE workspace_id = $1 ORDER BY created_at",
                workspace_id)
        return [_row(r) for r in rows]
