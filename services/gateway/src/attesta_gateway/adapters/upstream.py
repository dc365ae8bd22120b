"""Calls to the internal HTTP APIs (classifier, evidence): one pooled aiohttp session each,
timeouts on every call, bounded retries with jitter, and a clear 503/504 when a service is
down or slow, never a hang.

Why aiohttp and not httpx: measured on this machine against the evidence service (same
process, same loop, 2000 GETs), httpx 0.29 managed 160-530 req/s at 1 connection and 90-180 at
64 concurrent, aiohttp 2000-2700 and 1200-3500: httpx alone would have cost more than the
2 ms hop budget (see docs/benchmarks/gateway.md).

Retries happen only for requests that are safe to repeat: idempotent methods (GET, HEAD, PUT,
DELETE, OPTIONS) and requests that carry an Idempotency-Key (the upstream may see it twice; the
gateway's own idempotency record guarantees a client's retry is not forwarded twice).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver

from attesta_gateway.service_layer.errors import TimedOut, Unavailable
from attesta_platform.http import (
    ACTOR_HEADER,
    ACTOR_NAME_HEADER,
    INTERNAL_TOKEN_HEADER,
    WORKSPACE_HEADER,
    actor_name_header,
)

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# Only "unavailable, try again": a 502/504 answered by a service is its final word about its own
# upstreams (e.g. a ground-truth refresh whose sources failed), and repeating it would redo work.
RETRY_STATUSES = frozenset({503})


@dataclass(frozen=True)
class UpstreamReply:
    status: int
    content: bytes
    content_type: str
    retry_after: str | None = None


@dataclass(frozen=True)
class UpstreamStream:
    """A 2xx answer whose body is still arriving: ``chunks`` yields it and then releases the
    connection (also when the consumer stops early)."""

    status: int
    content_type: str
    content_disposition: str | None
    chunks: AsyncGenerator[bytes, None]


class Upstream:
    def __init__(self, name: str, base_url: str, internal_token: str, *,
                 timeout_s: float = 5.0, connect_timeout_s: float = 1.0, attempts: int = 3,
                 deadline_s: float = 10.0, max_connections: int = 100,
                 resolver: AbstractResolver | None = None) -> None:
        self.name, self.base_url = name, base_url.rstrip("/")
        self._token = internal_token
        self._attempts, self._deadline = max(1, attempts), deadline_s
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s)
        self._max_connections = max_connections
        self._resolver = resolver  # None: aiohttp's; tests pass one whose answer moves
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # Created on first use, inside the server's event loop (aiohttp binds to the loop).
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections, ttl_dns_cache=300,
                                               resolver=self._resolver),
                timeout=self._timeout, trust_env=False, auto_decompress=True)
        return self._session

    def _forget_addresses_if_connect_failed(self, exc: BaseException) -> None:
        """A restarted container can come back on another address: after a failed connect
        the cached ones are forgotten, or the old address would be tried until the DNS cache
        expired (300 s of 503s although the service is up)."""
        connect_failed = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
        if isinstance(exc, connect_failed) and self._session is not None:
            connector = self._session.connector
            if isinstance(connector, aiohttp.TCPConnector):
                connector.clear_dns_cache()

    def _unreachable(self, exc: aiohttp.ClientError) -> str:
        self._forget_addresses_if_connect_failed(exc)
        return f"unreachable ({type(exc).__name__}: {exc or 'connection failed'})"

    def _headers(self, workspace: str | None, actor: str | None,
                 actor_name: str | None = None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if workspace is not None:  # internal routes: the token and the caller's workspace
            headers[INTERNAL_TOKEN_HEADER] = self._token
            headers[WORKSPACE_HEADER] = workspace
        if actor:
            headers[ACTOR_HEADER] = actor
        if actor_name:
            headers[ACTOR_NAME_HEADER] = actor_name_header(actor_name)
        return headers

    def _failed(self, failure: str, timed_out: bool, tries: str) -> TimedOut | Unavailable:
        if timed_out:
            return TimedOut("upstream_timeout",
                            f"{self.name} service at {self.base_url} {failure} {tries}")
        return Unavailable("upstream_unavailable",
                           f"{self.name} service at {self.base_url} {failure} {tries}",
                           retry_after=1)

    async def stream(self, path: str, *, workspace: str | None, actor: str | None = None,
                     params: dict[str, object] | None = None,
                     actor_name: str | None = None) -> UpstreamReply | UpstreamStream:
        """A GET whose 2xx body is passed on as it arrives (exports: however large the file,
        the gateway holds one chunk at a time). No total timeout: the answer may take long, but
        each wait for the headers or the next chunk is bounded by the per-call timeout. One
        attempt: once bytes have gone to the client the call cannot be repeated. An error
        answer is read whole and returned as an ``UpstreamReply``."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.sock_connect,
                                        sock_read=self._timeout.total)
        clean = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        try:
            resp = await self._client().get(self.base_url + path, params=clean,
                                            headers=self._headers(workspace, actor, actor_name),
                                            allow_redirects=False, timeout=timeout)
        except TimeoutError as exc:
            self._forget_addresses_if_connect_failed(exc)
            raise self._failed("timed out", True, "after 1 attempt") from None
        except aiohttp.ClientError as exc:
            raise self._failed(self._unreachable(exc), False, "after 1 attempt") from None
        content_type = resp.headers.get("content-type", "application/json")
        if resp.status >= 300:
            try:
                content = await resp.read()
            except (TimeoutError, aiohttp.ClientError):
                resp.close()
                raise self._failed("broke off its error answer", False, "after 1 attempt") from None
            resp.release()
            return UpstreamReply(resp.status, content, content_type,
                                 resp.headers.get("retry-after"))

        async def chunks() -> AsyncGenerator[bytes, None]:
            done = False
            try:
                async for chunk in resp.content.iter_chunked(64 * 1024):
                    yield chunk
                done = True
            finally:
                # A finished body returns the connection to the pool; a client gone (or an
                # upstream that broke off) closes it so nothing half-read is reused.
                if done:
                    resp.release()
                else:
                    resp.close()

        return UpstreamStream(resp.status, content_type,
                              resp.headers.get("content-disposition"), chunks())

    async def request(self, method: str, path: str, *, workspace: str | None = None,
                      actor: str | None = None, params: dict[str, object] | None = None,
                      body: bytes | None = None, idempotency_key: str | None = None,
                      actor_name: str | None = None) -> UpstreamReply:
        headers = self._headers(workspace, actor, actor_name)
        if body is not None:
            headers["content-type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        clean = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        retryable = method in IDEMPOTENT_METHODS or idempotency_key is not None
        attempts = self._attempts if retryable else 1
        started = time.monotonic()
        failure, timed_out = "", False
        url = self.base_url + path
        for attempt in range(1, attempts + 1):
            try:
                async with self._client().request(method, url, params=clean, data=body,
                                                  headers=headers,
                                                  allow_redirects=False) as resp:
                    content = await resp.read()
                    status = resp.status
                    content_type = resp.headers.get("content-type", "application/json")
                    retry_after = resp.headers.get("retry-after")
            except TimeoutError as exc:
                self._forget_addresses_if_connect_failed(exc)
                failure, timed_out = "timed out", True
            except aiohttp.ClientError as exc:
                failure, timed_out = self._unreachable(exc), False
            else:
                if status not in RETRY_STATUSES or attempt == attempts:
                    return UpstreamReply(status, content, content_type, retry_after)
                failure, timed_out = f"answered {status}", False
            delay = min(1.0, 0.05 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
            if attempt == attempts or time.monotonic() - started + delay > self._deadline:
                break
            await asyncio.sleep(delay)
        raise self._failed(failure, timed_out, f"after {attempt} attempt{'s' if attempt > 1 else ''}")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _param(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    return str(value)
