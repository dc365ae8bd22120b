"""Authenticating a caller: API key -> principal (key id, workspace, name, role).

Verified keys are cached in-process for ``cache_ttl_s`` (default 5 s) so a request costs no
database round trip; a key revoked elsewhere (the CLI, another instance) therefore stops
working within that time on every instance, and at once on the instance that revoked it
(``forget``). Unknown key ids are cached too (negative cache), so random keys cannot make every
request a database query.

``LastUsed`` records when each key was last used without a write per request: at most one
``UPDATE`` per key per ``interval_s`` (60 s) per instance, batched and off the request's path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Protocol

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.domain.keys import Principal, StoredKey, parse_key_id, verify
from attesta_gateway.service_layer.errors import Unauthenticated, Unavailable
from attesta_platform.logs import get_logger

BEARER_HINT = "send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"


log = get_logger("attesta.gateway.auth")


class KeyStore(Protocol):
    async def get(self, key_id: str) -> StoredKey | None: ...


class KeyToucher(Protocol):
    async def touch(self, key_ids: Sequence[str], min_interval_s: float) -> None: ...


def unauthorized(reason: str) -> Unauthenticated:
    return Unauthenticated("unauthorized", reason)


class Authenticator:
    MAX_CACHED = 50_000

    def __init__(self, store: KeyStore, server_secret: bytes, cache_ttl_s: float = 5.0) -> None:
        self._store, self._secret, self._ttl = store, server_secret, cache_ttl_s
        self._cache: dict[str, tuple[float, StoredKey | None]] = {}

    async def authenticate(self, plaintext: str | None) -> Principal:
        if not plaintext:
            raise unauthorized(f"an API key is required: {BEARER_HINT}")
        key_id = parse_key_id(plaintext)
        if key_id is None:
            raise unauthorized("malformed API key (expected atk_<16 hex>_<43 base64url chars>)")
        stored = await self._lookup(key_id)
        if stored is None or not verify(self._secret, plaintext, stored):
            raise unauthorized("unknown or revoked API key")
        return Principal(key_id=stored.key_id, workspace_id=stored.workspace_id, name=stored.name,
                         role=stored.role)

    def forget(self, key_id: str) -> None:
        """Drop a cached key (this instance revoked it: refuse it from the next request on)."""
        self._cache.pop(key_id, None)

    async def _lookup(self, key_id: str) -> StoredKey | None:
        now = time.monotonic()
        hit = self._cache.get(key_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            stored = await self._store.get(key_id)
        except DatabaseUnavailable as exc:
            raise Unavailable("key_store_unavailable", f"cannot check the API key right now: {exc}",
                              retry_after=1) from exc
        if len(self._cache) >= self.MAX_CACHED:
            self._cache.clear()
        self._cache[key_id] = (now + self._ttl, stored)
        return stored


def credentials_from(authorization: str | None, x_api_key: str | None) -> str | None:
    """The presented key: ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. Both may be
    sent only with the same key: a request carrying two different keys is refused (401), so a
    bad key is never silently ignored in favour of a good one."""
    presented: list[str] = []
    if x_api_key is not None:
        presented.append(x_api_key.strip())
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise unauthorized(f"unsupported Authorization scheme: {BEARER_HINT}")
        presented.append(value.strip())
    if len(set(presented)) > 1:
        raise unauthorized("two different API keys were sent (Authorization and X-API-Key): "
                           "send one")
    return presented[0] if presented else None


class LastUsed:
    """When each key was last used, written at most once per ``interval_s`` per key and
    instance: ``seen`` is a dictionary lookup on the request's path; the write is one batched
    ``UPDATE`` in a background task, which a slow or absent database never turns into a slow
    request. The figure is therefore "used within this minute", never more precise."""

    def __init__(self, store: KeyToucher, interval_s: float = 60.0) -> None:
        self._store, self._interval = store, interval_s
        self._stamped: dict[str, float] = {}
        self._pending: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def seen(self, key_id: str) -> None:
        now = time.monotonic()
        last = self._stamped.get(key_id)
        if last is not None and now - last < self._interval:
            return
        if len(self._stamped) >= Authenticator.MAX_CACHED:
            self._stamped.clear()
        self._stamped[key_id] = now
        self._pending.add(key_id)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def flush(self) -> None:
        """Write what is pending now (tests; shutdown)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self._flush()

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = sorted(self._pending), set()
            try:
                await self._store.touch(batch, self._interval)
            except Exception as exc:  # noqa: BLE001 - bookkeeping must never fail a request
                for key_id in batch:  # stamp them again on their next use
                    self._stamped.pop(key_id, None)
                log.warning("could not record when keys were last used", keys=len(batch),
                            error=repr(exc))
                return
