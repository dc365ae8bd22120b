"""Which limit applies to a request, and what happens when Redis is down.

- Authenticated routes: ``per_key`` requests per window, per API key, counted in Redis (shared
  by every gateway instance). Redis down: counted in-process with ``local_per_key`` per
  instance (documented fallback), so paying callers keep working.
- Public routes (``/v1/public/*``) and anonymous chat: per client address, in Redis. Redis down:
  503 (fail closed): an anonymous endpoint without a shared limit is an open door.
- Chat (``chat``), which costs the whole pipeline and holds a caller for up to the chat timeout:
  at most ``chat_in_flight`` chats waiting per instance (else 503 at once) and, with a key,
  ``chat_in_flight_per_key`` per key over every instance (slots in Redis; else 429 at once),
  both with Retry-After, so a burst is told to come back instead of queueing into 504s while
  other workspaces' chats wait behind it; then, with a key, the key's general limit and
  ``chat_per_key`` (a much lower rate), or without one the client address's chat limit. Redis
  down: a key's slots and chat rate are counted per instance.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from prometheus_client import Counter, Gauge

from attesta_gateway.adapters.ratelimit import LocalRateLimiter, RedisRateLimiter, RedisUnavailable
from attesta_gateway.domain.ratelimit import Limit, Verdict
from attesta_gateway.service_layer.errors import (
    AuthenticationThrottled,
    RateLimited,
    Unauthenticated,
    Unavailable,
)

RATE_LIMITED = Counter("attesta_gateway_rate_limited_total",
                       "Requests refused with 429", ["scope"])
RATE_LIMIT_DEGRADED = Counter("attesta_gateway_rate_limit_degraded_total",
                              "Rate-limit checks made while Redis was unavailable",
                              ["scope", "outcome"])
CHATS_REFUSED_BUSY = Counter("attesta_gateway_chat_busy_total",
                             "Chats refused at once because too many were waiting for their answer "
                             "(scope=key: 429, scope=instance: 503)", ["scope"])
CHATS_IN_FLIGHT = Gauge("attesta_gateway_chats_in_flight",
                        "Chats of this instance waiting for their answer")
INSTANCE_CHATS = "instance-chats"  # the local slot bucket of this instance's chats
# A chat that was told to wait asks again after this (an admitted chat takes about a second).
BUSY_RETRY_AFTER_S = 1


@dataclass(frozen=True)
class LimitsConfig:
    per_key: Limit
    local_per_key: Limit
    public_per_client: Limit
    chat_per_client: Limit
    auth_failures_per_client: Limit
    chat_per_key: Limit = Limit(60, 60)
    chat_in_flight: int = 32
    chat_in_flight_per_key: int = 2
    # How long a key's chat slot outlives an instance that died holding it (> the chat timeout).
    chat_slot_hold_s: float = 20.0


class RateLimits:
    def __init__(self, config: LimitsConfig, shared: RedisRateLimiter,
                 local: LocalRateLimiter | None = None) -> None:
        self.config, self._shared, self._local = config, shared, local or LocalRateLimiter()

    async def for_key(self, key_id: str) -> Verdict:
        return await self._keyed(f"key:{key_id}", self.config.per_key,
                                 self.config.local_per_key, "key")

    async def for_chat_key(self, key_id: str) -> Verdict:
        """The key's chat rate (on top of its general limit: ``chat``). Redis down: per
        instance, never more than the key's local limit."""
        limit, local = self.config.chat_per_key, self.config.local_per_key
        return await self._keyed(f"chatkey:{key_id}", limit,
                                 Limit(min(limit.requests, local.requests), local.window_s),
                                 "chat_key")

    @asynccontextmanager
    async def chat(self, key_id: str | None, client: str) -> AsyncIterator[None]:
        """Admit one chat for the body of the ``async with`` (its wait for the answer), or
        refuse it at once: 503 ``chat_busy`` (this instance's bound), 429
        ``too_many_chats_in_flight`` (the key's), both with Retry-After; then the rate limits
        (429 ``rate_limited``). Slots are given back when the body ends, however it ends."""
        if not self._local.take_slot(INSTANCE_CHATS, self.config.chat_in_flight):
            CHATS_REFUSED_BUSY.labels("instance").inc()
            raise Unavailable("chat_busy",
                              f"this gateway already has {self.config.chat_in_flight} chats "
                              f"waiting for their answer; retry after {BUSY_RETRY_AFTER_S} s",
                              retry_after=BUSY_RETRY_AFTER_S)
        try:
            give_back = await self._take_key_chat_slot(key_id) if key_id is not None else None
            try:
                if key_id is not None:
                    await self.for_key(key_id)
                    await self.for_chat_key(key_id)
                else:
                    await self.for_chat(client)
                CHATS_IN_FLIGHT.inc()
                try:
                    yield
                finally:
                    CHATS_IN_FLIGHT.dec()
            finally:
                if give_back is not None:
                    await give_back()
        finally:
            self._local.give_back_slot(INSTANCE_CHATS)

    async def _take_key_chat_slot(self, key_id: str) -> Callable[[], Awaitable[None]]:
        """One of the key's chat slots (shared in Redis; per instance while Redis is down), and
        how to give it back; 429 when all are held."""
        bucket, limit = f"chatkey:{key_id}", self.config.chat_in_flight_per_key
        token = uuid.uuid4().hex
        shared = True
        try:
            taken = await self._shared.take_slot(bucket, limit, self.config.chat_slot_hold_s, token)
        except RedisUnavailable:
            RATE_LIMIT_DEGRADED.labels("chat_in_flight", "local").inc()
            shared, taken = False, self._local.take_slot(bucket, limit)

        async def give_back() -> None:
            if shared:
                await self._shared.give_back_slot(bucket, token)
            else:
                self._local.give_back_slot(bucket)

        if not taken:
            CHATS_REFUSED_BUSY.labels("key").inc()
            raise RateLimited("too_many_chats_in_flight",
                              f"this API key already has {limit} chats waiting for their answer; "
                              f"retry after {BUSY_RETRY_AFTER_S} s", retry_after=BUSY_RETRY_AFTER_S)
        return give_back

    async def for_public(self, client: str) -> Verdict:
        return await self._anonymous(f"public:{client}", self.config.public_per_client, "public")

    async def for_chat(self, client: str) -> Verdict:
        return await self._anonymous(f"chat:{client}", self.config.chat_per_client, "chat")

    async def failed_authentication(self, client: str,
                                    failure: Unauthenticated) -> Unauthenticated | RateLimited:
        """Count a failed authentication from ``client`` and return what to answer: the 401
        ``failure``, or, past the limit of this window, 429 with the time left in the window.

        Only failures are counted and only after the key was checked, so a valid key is never
        refused because others failed from the same address (a shared NAT or proxy). Redis
        down: not counted (the 401 stands)."""
        limit = self.config.auth_failures_per_client
        try:
            v = await self._shared.hit(f"authfail:{client}", limit)
        except RedisUnavailable:
            return failure
        if v.allowed:
            return failure
        RATE_LIMITED.labels("auth_failures").inc()
        return AuthenticationThrottled(
            "too_many_failed_authentications",
            f"more than {limit.requests} failed authentications from this address in this "
            f"window; retry after {v.retry_after} s", retry_after=v.retry_after)

    async def _keyed(self, bucket: str, limit: Limit, local: Limit, scope: str) -> Verdict:
        try:
            v = await self._shared.hit(bucket, limit)
        except RedisUnavailable:
            RATE_LIMIT_DEGRADED.labels(scope, "local").inc()
            v = self._local.hit(bucket, local)
        return _enforce(v, scope)

    async def _anonymous(self, bucket: str, limit: Limit, scope: str) -> Verdict:
        try:
            v = await self._shared.hit(bucket, limit)
        except RedisUnavailable as exc:
            RATE_LIMIT_DEGRADED.labels(scope, "refused").inc()
            raise Unavailable("rate_limiter_unavailable",
                              f"public endpoints are closed while the rate limiter is down ({exc})",
                              retry_after=5) from exc
        return _enforce(v, scope)


def _enforce(v: Verdict, scope: str) -> Verdict:
    if not v.allowed:
        RATE_LIMITED.labels(scope).inc()
        raise RateLimited("rate_limited",
                          f"rate limit of {v.limit} requests per window exceeded ({scope}); "
                          f"retry after {v.retry_after} s", retry_after=v.retry_after,
                          limit=v.limit)
    return v
