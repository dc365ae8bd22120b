"""Rate-limit counters: shared in Redis, or in-process when Redis is unreachable.

Redis: one fixed-window counter per (bucket, window), incremented atomically by a Lua script
(INCR, then PEXPIRE on the first hit), one round trip per request. After a Redis failure the
limiter stops trying for ``retry_s`` so a dead Redis costs no connect timeout per request.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from attesta_gateway.domain.ratelimit import Limit, Verdict, verdict

_FIXED_WINDOW = """
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {c, t}
"""


class RedisUnavailable(Exception):
    pass


class RedisRateLimiter:
    def __init__(self, url: str, *, timeout_s: float = 0.25, retry_s: float = 1.0,
                 prefix: str = "attesta:gateway:rl:") -> None:
        # A blocking pool waits (up to the timeout) for a free connection under load instead of
        # failing with "too many connections".
        pool = aioredis.BlockingConnectionPool.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
            max_connections=128, timeout=timeout_s)
        self._redis = aioredis.Redis(connection_pool=pool)
        self._script = self._redis.register_script(_FIXED_WINDOW)
        self._prefix, self._retry_s = prefix, retry_s
        self._down_until = 0.0
        self.last_error = ""

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def hit(self, bucket: str, limit: Limit) -> Verdict:
        if not self.available:
            raise RedisUnavailable(self.last_error or "Redis unavailable")
        try:
            count, pttl = await self._script(keys=[self._prefix + bucket],
                                             args=[limit.window_s * 1000])
        except (RedisError, OSError, TimeoutError) as exc:
            reason = f"Redis unavailable: {type(exc).__name__}: {exc}"
            if not _is_timeout(exc):
                # Refused/reset: Redis is gone; stop trying for a moment. A timeout under load
                # fails only this request, it does not close the door for everyone.
                self._down_until = time.monotonic() + self._retry_s
                self.last_error = reason
            raise RedisUnavailable(reason) from exc
        self._down_until = 0.0
        return verdict(int(count), limit, int(pttl) / 1000)

    async def peek(self, bucket: str) -> int:
        """The current window's count of ``bucket`` (0 when none), without counting."""
        if not self.available:
            raise RedisUnavailable(self.last_error or "Redis unavailable")
        try:
            value = await self._redis.get(self._prefix + bucket)
        except (RedisError, OSError, TimeoutError) as exc:
            raise RedisUnavailable(f"Redis unavailable: {type(exc).__name__}: {exc}") from exc
        return int(value or 0)

    async def close(self) -> None:
        await self._redis.aclose()


def _is_timeout(exc: BaseException) -> bool:
    from redis.exceptions import TimeoutError as RedisTimeout

    return isinstance(exc, (TimeoutError, RedisTimeout))


class LocalRateLimiter:
    """In-process fixed windows: the fallback for authenticated callers while Redis is down.
    Each gateway instance counts on its own, so N instances allow up to N times the limit."""

    MAX_BUCKETS = 100_000

    def __init__(self) -> None:
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, bucket: str, limit: Limit) -> Verdict:
        now = time.monotonic()
        start, count = self._windows.get(bucket, (now, 0))
        if now - start >= limit.window_s:
            start, count = now, 0
        count += 1
        if len(self._windows) >= self.MAX_BUCKETS and bucket not in self._windows:
            self._windows.clear()  # bounded memory; forgetting counts only ever loosens limits
        self._windows[bucket] = (start, count)
        return verdict(count, limit, limit.window_s - (now - start))
