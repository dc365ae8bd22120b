"""The gateway's bounds on chats in flight (issue #23), on a real Redis the test owns: a key's
slots are shared by every instance, refused at once with Retry-After (429; 503 for an
instance's own bound), given back however the chat ends, lapse when their instance dies, and
are counted per instance while Redis is down. The chat path through real processes is in
test_chat_bounds_e2e.py."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from attesta_gateway.adapters.ratelimit import RedisRateLimiter
from attesta_gateway.domain.ratelimit import Limit
from attesta_gateway.service_layer.limits import LimitsConfig, RateLimits
from attesta_platform.http import ApiError
from tests.gateway_fakes import RedisServer, http_errors

pytestmark = pytest.mark.integration
WIDE = Limit(100_000, 60)


@pytest.fixture(scope="module")
def redis():
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.cleanup()


def _limits(redis_url: str, prefix: str, **config: object) -> RateLimits:
    return RateLimits(LimitsConfig(per_key=WIDE, local_per_key=WIDE, public_per_client=WIDE,
                                   chat_per_client=WIDE, auth_failures_per_client=WIDE,
                                   **config),  # type: ignore[arg-type]
                      RedisRateLimiter(redis_url, prefix=prefix, retry_s=0.2))


class Held:
    """Chats that stay in flight until released (each a task inside ``limits.chat``)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def hold(self, limits: RateLimits, key: str | None, n: int = 1) -> None:
        for _ in range(n):
            entered = asyncio.Event()

            async def chat() -> None:
                async with limits.chat(key, "10.0.0.1"):
                    entered.set()
                    await self.release.wait()

            self.tasks.append(asyncio.create_task(chat()))
            await asyncio.wait_for(entered.wait(), 5)

    async def end(self) -> None:
        self.release.set()
        await asyncio.gather(*self.tasks)


async def _refused(limits: RateLimits, key: str | None) -> ApiError:
    with pytest.raises(ApiError) as refused, http_errors():
        async with limits.chat(key, "10.0.0.1"):
            pass
    return refused.value


async def test_a_keys_chats_in_flight_are_bounded_across_instances_with_retry_after(redis):
    prefix = f"t-cl-{uuid.uuid4().hex[:8]}:"
    one, two = (_limits(redis.url, prefix, chat_in_flight_per_key=3) for _ in range(2))
    held = Held()
    await held.hold(one, "key-a", 2)
    await held.hold(two, "key-a", 1)  # the third slot, taken through the other instance
    for instance in (one, two):
        error = await _refused(instance, "key-a")
        assert (error.status, error.code) == (429, "too_many_chats_in_flight")
        assert error.headers == {"Retry-After": "1"}
    await held.hold(two, "key-b")  # another key is not held back by key-a's burst
    await held.end()
    later = Held()  # every slot was given back when its chat ended
    await later.hold(one, "key-a", 3)
    await later.end()


async def test_an_instance_bounds_its_chats_and_a_failing_chat_gives_its_slots_back(redis):
    limits = _limits(redis.url, f"t-cl-{uuid.uuid4().hex[:8]}:", chat_in_flight=2,
                     chat_in_flight_per_key=1)
    held = Held()
    await held.hold(limits, None)  # anonymous chats count against the instance's bound
    await held.hold(limits, "key-a")
    error = await _refused(limits, "key-b")
    assert (error.status, error.code, error.headers) == (503, "chat_busy", {"Retry-After": "1"})
    await held.end()
    with pytest.raises(RuntimeError):
        async with limits.chat("key-a", "10.0.0.1"):
            raise RuntimeError("the chat failed")
    async with limits.chat("key-a", "10.0.0.1"):  # its instance and key slots came back
        pass


async def test_the_chat_rate_per_key_is_its_own_lower_limit(redis):
    limits = _limits(redis.url, f"t-cl-{uuid.uuid4().hex[:8]}:", chat_per_key=Limit(3, 60))
    for _ in range(3):
        async with limits.chat("key-a", "10.0.0.1"):
            pass
    error = await _refused(limits, "key-a")
    assert (error.status, error.code) == (429, "rate_limited")
    assert int(error.headers["Retry-After"]) >= 1
    await limits.for_key("key-a")  # the key's other requests are not refused
    async with limits.chat("key-b", "10.0.0.1"):
        pass


async def test_a_slot_held_by_an_instance_that_died_lapses_by_itself(redis):
    prefix = f"t-cl-{uuid.uuid4().hex[:8]}:"
    dead = RedisRateLimiter(redis.url, prefix=prefix)
    assert await dead.take_slot("chatkey:key-a", 1, 0.5, "never-given-back")
    limits = _limits(redis.url, prefix, chat_in_flight_per_key=1)
    assert (await _refused(limits, "key-a")).status == 429
    await asyncio.sleep(0.7)
    async with limits.chat("key-a", "10.0.0.1"):
        pass
    await dead.close()


async def test_with_redis_down_a_keys_slots_are_counted_per_instance(redis):
    limits = _limits(redis.url, f"t-cl-{uuid.uuid4().hex[:8]}:", chat_in_flight_per_key=2)
    redis.stop()
    try:
        held = Held()
        await held.hold(limits, "key-a", 2)
        assert (await _refused(limits, "key-a")).status == 429
        await held.end()
        async with limits.chat("key-a", "10.0.0.1"):
            pass
    finally:
        redis.start()
