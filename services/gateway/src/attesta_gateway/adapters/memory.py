"""In-memory repositories with the same behaviour as the PostgreSQL ones (the fakes of the
service layer's unit tests; ``tests/test_gateway_stores.py`` runs one suite against both)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from attesta_gateway.domain.idempotency import IdempotencyRecord, StoredResponse
from attesta_gateway.domain.keys import StoredKey


class InMemoryKeyRepository:
    def __init__(self) -> None:
        self._keys: dict[str, StoredKey] = {}

    async def get(self, key_id: str) -> StoredKey | None:
        return self._keys.get(key_id)

    async def add(self, key: StoredKey) -> None:
        if key.key_id in self._keys:
            raise ValueError(f"key {key.key_id} exists")
        self._keys[key.key_id] = replace(key, created_at=datetime.now(UTC), revoked_at=None)

    async def revoke(self, key_id: str) -> bool:
        key = self._keys.get(key_id)
        if key is None or key.revoked_at is not None:
            return False
        self._keys[key_id] = replace(key, revoked_at=datetime.now(UTC))
        return True

    async def list(self, workspace_id: str | None = None) -> list[StoredKey]:
        return [k for k in self._keys.values()
                if workspace_id is None or k.workspace_id == workspace_id]


@dataclass
class _Row:
    fingerprint: str
    locked_until: float | None
    expires_at: float
    response: StoredResponse | None = None


class InMemoryIdempotencyRepository:
    def __init__(self, ttl_s: float, lock_s: float) -> None:
        self._ttl, self._lock = ttl_s, lock_s
        self._rows: dict[tuple[str, str], _Row] = {}

    async def claim(self, workspace_id: str, key: str,
                    fingerprint: str) -> IdempotencyRecord | None:
        now = time.monotonic()
        row = self._rows.get((workspace_id, key))
        stale_lock = (row is not None and row.response is None and row.locked_until is not None
                      and row.locked_until < now and row.fingerprint == fingerprint)
        if row is None or row.expires_at < now or stale_lock:
            self._rows[(workspace_id, key)] = _Row(fingerprint, now + self._lock, now + self._ttl)
            return None
        return IdempotencyRecord(fingerprint=row.fingerprint, in_flight=row.response is None,
                                 response=row.response)

    async def complete(self, workspace_id: str, key: str, response: StoredResponse) -> None:
        row = self._rows.get((workspace_id, key))
        if row is not None:
            row.response, row.locked_until = response, None

    async def release(self, workspace_id: str, key: str) -> None:
        row = self._rows.get((workspace_id, key))
        if row is not None and row.response is None:
            del self._rows[(workspace_id, key)]

    async def purge_expired(self) -> int:
        now = time.monotonic()
        gone = [k for k, r in self._rows.items() if r.expires_at < now]
        for k in gone:
            del self._rows[k]
        return len(gone)


class InMemoryUnitOfWork:
    def __init__(self, *, idempotency_ttl_s: float = 86_400, idempotency_lock_s: float = 35) -> None:
        self.keys = InMemoryKeyRepository()
        self.idempotency = InMemoryIdempotencyRepository(idempotency_ttl_s, idempotency_lock_s)

    async def close(self) -> None:
        pass
