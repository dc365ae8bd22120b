"""Which limit applies to a request, and what happens when Redis is down.

- Authenticated routes: ``per_key`` requests per window, per API key, counted in Redis (shared
  by every gateway instance). Redis down: counted in-process with ``local_per_key`` per
  instance (documented fallback), so paying callers keep working.
- Public routes (``/v1/public/*``) and anonymous chat: per client address, in Redis. Redis down:
  503 (fail closed): an anonymous endpoint without a shared limit is an open door.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter

from attesta_gateway.adapters.ratelimit import LocalRateLimiter, RedisRateLimiter, RedisUnavailable
from attesta_gateway.domain.ratelimit import Limit, Verdict
from attesta_platform.http import ApiError

RATE_LIMITED = Counter("attesta_gateway_rate_limited_total",
                       "Requests refused with 429", ["scope"])
RATE_LIMIT_DEGRADED = Counter("attesta_gateway_rate_limit_degraded_total",
                              "Rate-limit checks made while Redis was unavailable",
                              ["scope", "outcome"])


@dataclass(frozen=True)
class LimitsConfig:
    per_key: Limit
    local_per_key: Limit
    public_per_client: Limit
    chat_per_client: Limit
    auth_failures_per_client: Limit


class RateLimits:
    def __init__(self, config: LimitsConfig, shared: RedisRateLimiter,
                 local: LocalRateLimiter | None = None) -> None:
        self.config, self._shared, self._local = config, shared, local or LocalRateLimiter()

    async def for_key(self, key_id: str) -> Verdict:
        bucket = f"key:{key_id}"
        try:
            v = await self._shared.hit(bucket, self.config.per_key)
        except RedisUnavailable:
            RATE_LIMIT_DEGRADED.labels("key", "local").inc()
            v = self._local.hit(bucket, self.config.local_per_key)
        return _enforce(v, "key")

    async def for_public(self, client: str) -> Verdict:
        return await self._anonymous(f"public:{client}", self.config.public_per_client, "public")

    async def for_chat(self, client: str) -> Verdict:
        return await self._anonymous(f"chat:{client}", self.config.chat_per_client, "chat")

    async def failed_authentication(self, client: str, failure: ApiError) -> ApiError:
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
        return ApiError(429, "too_many_failed_authentications",
                        f"more than {limit.requests} failed authentications from this address "
                        f"in this window; retry after {v.retry_after} s",
                        {"Retry-After": str(v.retry_after), **(failure.headers or {})})

    async def _anonymous(self, bucket: str, limit: Limit, scope: str) -> Verdict:
        try:
            v = await self._shared.hit(bucket, limit)
        except RedisUnavailable as exc:
            RATE_LIMIT_DEGRADED.labels(scope, "refused").inc()
            raise ApiError(503, "rate_limiter_unavailable",
                           f"public endpoints are closed while the rate limiter is down ({exc})",
                           {"Retry-After": "5"}) from exc
        return _enforce(v, scope)


def _enforce(v: Verdict, scope: str) -> Verdict:
    if not v.allowed:
        RATE_LIMITED.labels(scope).inc()
        raise ApiError(429, "rate_limited",
                       f"rate limit of {v.limit} requests per window exceeded ({scope}); "
                       f"retry after {v.retry_after} s",
                       {"Retry-After": str(v.retry_after), "RateLimit-Limit": str(v.limit),
                        "RateLimit-Remaining": "0"})
    return v
