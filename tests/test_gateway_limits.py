"""Rate limits against a real Redis that the test owns (a private redis-server), including
Redis going away for real: public routes and anonymous chat fail closed (503), authenticated
routes keep working within the documented in-process limit, and everything recovers when
Redis is back. The services behind this gateway are down on purpose: a down service is a fast
503 with a reason, never a hang."""

from __future__ import annotations

import secrets
import time
import uuid

import httpx
import pytest
import pytest_asyncio

from tests.gateway_fakes import GatewayProcess, RedisServer, free_port, make_key, migrated_database
from attesta_testing.infra import kafka_bootstrap

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def limited(tmp_path_factory):
    kafka_bootstrap()
    logs = tmp_path_factory.mktemp("gateway-limits")
    secret = secrets.token_urlsafe(48)
    redis = RedisServer().start()
    dead = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    async with migrated_database() as db_url:
        keys = [await make_key(db_url, secret, "ws-limits") for _ in range(4)]
        gw = GatewayProcess({
            "ATTESTA_GATEWAY_DB_URL": db_url, "ATTESTA_GATEWAY_SECRET": secret,
            "ATTESTA_INTERNAL_TOKEN": "t" * 40, "REDIS_URL": redis.url,
            "ATTESTA_CLASSIFIER_URL": dead, "ATTESTA_EVIDENCE_URL": dead,
            "ATTESTA_RATE_LIMIT_WINDOW_S": "60", "ATTESTA_RATE_LIMIT_PER_KEY": "5",
            "ATTESTA_RATE_LIMIT_LOCAL_PER_KEY": "3", "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "4",
            "ATTESTA_RATE_LIMIT_CHAT_PER_CLIENT": "2", "ATTESTA_CHAT_TIMEOUT_S": "1",
            "ATTESTA_RATE_LIMIT_AUTH_FAILURES_PER_CLIENT": "3",
            "ATTESTA_RATE_LIMIT_PREFIX": f"t-gwl-{uuid.uuid4().hex[:8]}:",
        }, logs, "limits").start()
        # A second gateway whose PostgreSQL is a port nobody listens on.
        no_db = GatewayProcess({**gw.env, "ATTESTA_HTTP_PORT": str(free_port()),
                                "ATTESTA_RATE_LIMIT_PREFIX": f"t-gwn-{uuid.uuid4().hex[:8]}:",
                                "ATTESTA_GATEWAY_DB_URL":
                                    f"postgresql://x:y@127.0.0.1:{free_port()}/nothing"},
                               logs, "no-db")
        try:
            no_db.start()
            yield {"url": gw.url, "redis": redis, "keys": [k for _, k in keys],
                   "no_db": no_db.url}
        finally:
            no_db.stop()
            gw.stop()
            redis.cleanup()


def _code(resp: httpx.Response) -> str:
    return resp.json()["error"]["code"]


def test_down_service_is_a_fast_503_and_public_limit_gives_429(limited):
    url = limited["url"] + "/v1/public/log/tree-head"
    for _ in range(4):
        started = time.monotonic()
        resp = httpx.get(url, timeout=10)
        assert resp.status_code == 503 and _code(resp) == "upstream_unavailable", resp.text
        assert "evidence service" in resp.json()["error"]["reason"]
        assert time.monotonic() - started < 2
    resp = httpx.get(url, timeout=10)
    assert resp.status_code == 429 and _code(resp) == "rate_limited"
    assert 1 <= int(resp.headers["retry-after"]) <= 60


def test_per_key_limit_gives_429_with_retry_after(limited):
    key = limited["keys"][0]
    for _ in range(5):
        resp = httpx.get(limited["url"] + "/v1/brands", headers={"X-API-Key": key}, timeout=10)
        assert resp.status_code == 503, resp.text  # allowed through, the classifier is down
    resp = httpx.get(limited["url"] + "/v1/brands", headers={"X-API-Key": key}, timeout=10)
    assert resp.status_code == 429 and _code(resp) == "rate_limited"
    assert int(resp.headers["retry-after"]) >= 1
    # Another key of the same workspace has its own budget.
    other = httpx.get(limited["url"] + "/v1/brands",
                      headers={"X-API-Key": limited["keys"][1]}, timeout=10)
    assert other.status_code == 503


def test_a_flood_of_bad_keys_cannot_lock_out_a_valid_key_from_the_same_address(limited):
    """Failures are counted per address after the key was checked: past the limit, failures get
    429 with the time left in the window, and a valid key that this gateway has never seen
    (nothing cached) still gets through from the flooded address."""
    import secrets as s

    def bad(key=None):
        return httpx.get(limited["url"] + "/v1/runs", timeout=10, headers={
            "X-API-Key": key or f"atk_{s.token_hex(8)}_{s.token_urlsafe(32)}"})

    assert [bad().status_code for _ in range(2)] + [bad("not-a-key").status_code] == [401] * 3
    resp = bad()
    assert resp.status_code == 429 and _code(resp) == "too_many_failed_authentications"
    first_wait = int(resp.headers["retry-after"])
    assert 1 <= first_wait <= 60
    for _ in range(30):  # the rest of the flood
        assert bad().status_code == 429
    time.sleep(2.1)
    later = bad()
    assert later.status_code == 429
    assert int(later.headers["retry-after"]) <= first_wait - 2  # the time left, not the window
    fresh = limited["keys"][3]  # never used: not in the verified-key cache
    ok = httpx.get(limited["url"] + "/v1/runs", headers={"X-API-Key": fresh}, timeout=10)
    assert ok.status_code == 503 and _code(ok) == "upstream_unavailable", ok.text


def test_key_store_down_is_a_fast_503_and_public_routes_still_answer(limited):
    started = time.monotonic()
    resp = httpx.get(limited["no_db"] + "/v1/brands", headers={"X-API-Key": limited["keys"][0]},
                     timeout=10)
    assert resp.status_code == 503 and _code(resp) == "key_store_unavailable", resp.text
    assert time.monotonic() - started < 5
    resp = httpx.get(limited["no_db"] + "/v1/public/log/tree-head", timeout=10)
    assert _code(resp) in ("upstream_unavailable", "rate_limited")  # not the key store


def test_chat_is_limited_per_client(limited):
    statuses = [httpx.post(limited["url"] + "/v1/chat", json={"question": "dose of Velnorex?"},
                           timeout=10).status_code for _ in range(3)]
    assert all(s in (200, 504) for s in statuses[:2]), statuses
    assert statuses[2] == 429


def test_redis_down_public_fails_closed_keys_use_the_local_limit_then_recover(limited):
    redis, url = limited["redis"], limited["url"]
    redis.stop()
    try:
        resp = httpx.get(url + "/v1/public/log/public-key", timeout=10)
        assert resp.status_code == 503 and _code(resp) == "rate_limiter_unavailable"
        assert resp.headers["retry-after"]
        resp = httpx.post(url + "/v1/chat", json={"question": "hello?"}, timeout=10)
        assert resp.status_code == 503 and _code(resp) == "rate_limiter_unavailable"
        key = {"X-API-Key": limited["keys"][2]}
        for _ in range(3):  # the in-process limit: 3 per window per instance
            resp = httpx.get(url + "/v1/brands", headers=key, timeout=10)
            assert resp.status_code == 503 and _code(resp) == "upstream_unavailable", resp.text
        resp = httpx.get(url + "/v1/brands", headers=key, timeout=10)
        assert resp.status_code == 429 and _code(resp) == "rate_limited"
    finally:
        redis.start()  # same port: the gateway reconnects on its own
    deadline = time.monotonic() + 10
    while True:
        resp = httpx.get(url + "/v1/public/log/consistency?first=1&second=2", timeout=10)
        if _code(resp) != "rate_limiter_unavailable" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert resp.status_code == 503 and _code(resp) == "upstream_unavailable", resp.text


async def test_leased_counting_never_admits_more_than_the_limit_across_instances():
    """Two limiters (two gateway instances) share one bucket of 100 per window; each takes
    leases of 5 from Redis. Together they admit at most 100, at least 100 - 2 x 4 (the unused
    rest of each lease), and ask Redis about once per lease instead of once per request."""
    from redis.asyncio import Redis

    from attesta_gateway.adapters.ratelimit import RedisRateLimiter
    from attesta_gateway.domain.ratelimit import Limit, lease_size
    from attesta_testing.infra import redis_url

    limit, prefix = Limit(100, 60), f"t-lease-{uuid.uuid4().hex[:8]}:"
    assert lease_size(limit) == 5 and lease_size(Limit(39, 60)) == 1
    one, two = (RedisRateLimiter(redis_url(), prefix=prefix) for _ in range(2))
    watcher = Redis.from_url(redis_url())
    try:
        admitted = 0
        for i in range(150):
            v = await (one if i % 3 else two).hit("bucket", limit)
            admitted += v.allowed
            assert v.allowed or 1 <= v.retry_after <= 60
        assert 92 <= admitted <= 100, admitted
        taken = int(await watcher.get(prefix + "bucket"))
        assert taken <= 150 // 5 * 5 + 10  # requests were counted in leases of 5, not one by one
    finally:
        for r in (one, two):
            await r.close()
        await watcher.aclose()
