"""The gateway's PostgreSQL state behind one unit of work: API keys and idempotency records.

The service layer (auth, forwarding) sees only these two repositories, so it runs against the
in-memory ones (``tests/gateway_fakes.py``) in unit tests and against PostgreSQL
(``adapters/unit_of_work.py``) in production.

Why no transaction around a request: every repository operation is a single atomic statement
(claiming an idempotency key is one ``INSERT .. ON CONFLICT``), and the work between claiming and
completing a key is a call to another service that may take the whole upstream deadline; a
transaction across it would pin a pooled connection per in-flight request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from attesta_gateway.domain.idempotency import IdempotencyRecord, StoredResponse
from attesta_gateway.domain.keys import Revocation, StoredKey


class KeyRepository(Protocol):
    async def get(self, key_id: str) -> StoredKey | None: ...

    async def add(self, key: StoredKey) -> None: ...

    async def revoke(self, key_id: str) -> bool: ...

    async def revoke_in_workspace(self, workspace_id: str, key_id: str,
                                  by: str | None = None) -> Revocation: ...

    async def touch(self, key_ids: Sequence[str], min_interval_s: float) -> None: ...

    async def list(self, workspace_id: str | None = None) -> list[StoredKey]: ...


class IdempotencyRepository(Protocol):
    async def claim(self, workspace_id: str, key: str,
                    fingerprint: str) -> IdempotencyRecord | None: ...

    async def complete(self, workspace_id: str, key: str, response: StoredResponse) -> None: ...

    async def release(self, workspace_id: str, key: str) -> None: ...

    async def purge_expired(self) -> int: ...


class UnitOfWork(Protocol):
    # Read-only members: an implementation may hold its own repository types.
    @property
    def keys(self) -> KeyRepository: ...

    @property
    def idempotency(self) -> IdempotencyRepository: ...

    async def close(self) -> None: ...
