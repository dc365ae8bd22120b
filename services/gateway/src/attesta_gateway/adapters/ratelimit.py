"""Rate-limit counters: shared in Redis, or in-process when Redis is unreachable.

Redis: one fixed-window counter per (bucket, window). An instance takes a *lease* of requests
at once (``domain.ratelimit.lease_size``: 1/20 of the limit, 1 for small limits) with one Lua
call (INCRBY, PEXPIRE on the first take, granted = what is left under the limit), then spends
it locally until the window ends; a bucket found full is refused locally until the window ends
(limits under 40 per window take leases of 1: exact, one round trip per request).
So most requests cost no Redis round trip (it was the largest part of the gateway's hop), and
no more than the limit is ever admitted per window. After a Redis failure the limiter stops
trying for ``retry_s`` so a dead Redis costs no connect timeout per request.

Slots (work in flight, e.g. a key's chats waiting for their answer): a sorted set per bucket in
Redis, one member per held slot scored by when it lapses (Redis's own clock); taking one drops
the lapsed members and refuses when ``limit`` remain, all in one Lua call. A slot is given back
when its work ends; one held by an instance that died lapses by itself after ``hold_s``.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeout

from attesta_gateway.domain.ratelimit import Limit, Verdict, lease_size, verdict

# ARGV: window ms, requests wanted, limit. Returns {granted, count before, ms left in window}.
_LEASE = """
local want = tonumber(ARGV[2])
local c = redis.call('INCRBY', KEYS[1], want)
if c == want then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
local before = c - want
local granted = math.max(0, math.min(want, tonumber(ARGV[3]) - before))
return {granted, before, t}
"""


# ARGV: limit, hold ms, token. Returns 1 (taken) or 0 (``limit`` slots held).
_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""


class RedisUnavailable(Exception):
    pass


class RedisRateLimiter:
    MAX_LEASES = 100_000

    def __init__(self, url: str, *, timeout_s: float = 0.25, retry_s: float = 1.0,
                 prefix: str = "attesta:gateway:rl:", max_lease: int = 50) -> None:
        # A blocking pool waits (up to the timeout) for a free connection under load instead of
        # failing with "too many connections".
        pool = aioredis.BlockingConnectionPool.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
            max_connections=128, timeout=timeout_s)
        self._redis = aioredis.Redis(connection_pool=pool)
        self._script = self._redis.register_script(_LEASE)
        self._slot_script = self._redis.register_script(_SLOT)
        self._prefix, self._retry_s, self._max_lease = prefix, retry_s, max_lease
        self._down_until = 0.0
        self.last_error = ""
        # bucket -> (window end, monotonic; requests left of this instance's lease, -1: full)
        self._leases: dict[str, tuple[float, int]] = {}

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def hit(self, bucket: str, limit: Limit) -> Verdict:
        now = time.monotonic()
        held = self._leases.get(bucket)
        if held is not None and held[0] > now:
            ends, left = held
            if left > 0:
                self._leases[bucket] = (ends, left - 1)
                return verdict(limit.requests - left + 1, limit, ends - now)
            if left < 0:  # the bucket was full: refused until the window ends
                return verdict(limit.requests + 1, limit, ends - now)
        if not self.available:
            raise RedisUnavailable(self.last_error or "Redis unavailable")
        want = lease_size(limit, self._max_lease)
        try:
            granted, before, pttl = await self._script(
                keys=[self._prefix + bucket], args=[limit.window_s * 1000, want, limit.requests])
        except (RedisError, OSError, TimeoutError) as exc:
            raise self._unavailable(exc) from exc
        self._down_until = 0.0
        ends = now + int(pttl) / 1000
        if want > 1:  # small limits stay exact: every request asks Redis
            if len(self._leases) >= self.MAX_LEASES and bucket not in self._leases:
                self._leases.clear()  # bounded memory; forgetting a lease only wastes its rest
            # -1 marks a full bucket; 0 a spent lease (the next request takes another)
            self._leases[bucket] = (ends, int(granted) - 1 if int(granted) else -1)
        if int(granted) == 0:
            return verdict(limit.requests + 1, limit, ends - now)
        return verdict(int(before) + 1, limit, ends - now)

    async def take_slot(self, bucket: str, limit: int, hold_s: float, token: str) -> bool:
        """Take one of ``limit`` slots of ``bucket`` for ``token`` (False: all are held). It
        lapses after ``hold_s`` unless given back first."""
        if not self.available:
            raise RedisUnavailable(self.last_error or "Redis unavailable")
        try:
            taken = await self._slot_script(keys=[f"{self._prefix}slots:{bucket}"],
                                            args=[limit, max(1, int(hold_s * 1000)), token])
        except (RedisError, OSError, TimeoutError) as exc:
            raise self._unavailable(exc) from exc
        self._down_until = 0.0
        return int(taken) == 1

    async def give_back_slot(self, bucket: str, token: str) -> None:
        try:
            await self._redis.zrem(f"{self._prefix}slots:{bucket}", token)
        except (RedisError, OSError, TimeoutError):
            pass  # the slot lapses by itself after its hold time

    def _unavailable(self, exc: BaseException) -> RedisUnavailable:
        reason = f"Redis unavailable: {type(exc).__name__}: {exc}"
        if not _is_timeout(exc):
            # Refused/reset: Redis is gone; stop trying for a moment. A timeout under load
            # fails only this request, it does not close the door for everyone.
            self._down_until = time.monotonic() + self._retry_s
            self.last_error = reason
        return RedisUnavailable(reason)

    async def close(self) -> None:
        await self._redis.aclose()


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, (TimeoutError, RedisTimeout))


class LocalRateLimiter:
    """In-process fixed windows and slots: the instance's own bounds, and the fallback for
    authenticated callers while Redis is down. Each gateway instance counts on its own, so N
    instances allow up to N times the limit."""

    MAX_BUCKETS = 100_000

    def __init__(self) -> None:
        self._windows: dict[str, tuple[float, int]] = {}
        self._slots: dict[str, int] = {}  # bucket -> slots held (absent: none)

    def take_slot(self, bucket: str, limit: int) -> bool:
        held = self._slots.get(bucket, 0)
        if held >= limit:
            return False
        self._slots[bucket] = held + 1
        return True

    def give_back_slot(self, bucket: str) -> None:
        held = self._slots.get(bucket, 0) - 1
        if held > 0:
            self._slots[bucket] = held
        else:
            self._slots.pop(bucket, None)

    def slots_held(self, bucket: str) -> int:
        return self._slots.get(bucket, 0)

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
