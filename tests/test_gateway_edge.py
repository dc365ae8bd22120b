"""The gateway as a real process (real Kafka, PostgreSQL, Redis) in front of a real HTTP server
that keeps the internal API contract: credentials, workspace isolation, idempotency keys,
upstream failures, body limits, CORS, production start-up rules and the keys CLI."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest
import pytest_asyncio

from tests.gateway_fakes import (
    ROOT,
    GatewayProcess,
    StandInApi,
    free_port,
    make_key,
    migrated_database,
)
from attesta_testing.infra import kafka_bootstrap, redis_url

pytestmark = pytest.mark.integration
TOKEN = "test-internal-token-" + "x" * 24


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def edge(tmp_path_factory):
    kafka_bootstrap()
    logs = tmp_path_factory.mktemp("gateway-edge")
    secret = secrets.token_urlsafe(48)
    api = StandInApi(TOKEN, slow_s=3.0).start()
    spa = logs / "spa"
    (spa / "assets").mkdir(parents=True)
    (spa / "index.html").write_text("<!doctype html><title>attesta spa</title>")
    (spa / "assets" / "app.js").write_text("console.log('attesta')")
    async with migrated_database() as db_url:
        keys = {name: await make_key(db_url, secret, ws, name) for name, ws in
                [("a1", "ws-a"), ("a2", "ws-a"), ("b1", "ws-b"), ("revoked", "ws-a")]}
        common = {
            "ATTESTA_GATEWAY_DB_URL": db_url, "ATTESTA_GATEWAY_SECRET": secret,
            "ATTESTA_INTERNAL_TOKEN": TOKEN, "REDIS_URL": redis_url(),
            "ATTESTA_CLASSIFIER_URL": api.url, "ATTESTA_EVIDENCE_URL": api.url,
            "ATTESTA_RATE_LIMIT_PREFIX": f"t-gw-{uuid.uuid4().hex[:8]}:",
            "ATTESTA_RATE_LIMIT_PER_KEY": "10000", "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "10000",
            "ATTESTA_UPSTREAM_TIMEOUT_S": "1", "ATTESTA_UPSTREAM_ATTEMPTS": "2",
            "ATTESTA_UPSTREAM_DEADLINE_S": "3", "ATTESTA_CHAT_TIMEOUT_S": "2",
            "ATTESTA_KEY_CACHE_TTL_S": "0.5", "ATTESTA_MAX_BODY_BYTES": "65536",
            "ATTESTA_CORS_ORIGINS": "http://app.test", "ATTESTA_STATIC_DIR": str(spa),
            "ATTESTA_REDIS_TIMEOUT_S": "3", "ATTESTA_RATE_LIMIT_AUTH_FAILURES_PER_CLIENT": "1000",
            "ATTESTA_PUBLIC_METRICS": "true",  # off by default (test_gateway_hardening.py)
        }
        dev = GatewayProcess(common, logs, "dev").start(wait=False)
        prod = GatewayProcess({**common, "ATTESTA_ENV": "production",
                               "ATTESTA_CHAT_REQUIRE_KEY": "true"}, logs, "prod").start(wait=False)
        try:
            for gw in (dev, prod):
                from tests.gateway_fakes import wait_http

                wait_http(f"{gw.url}/readyz", gw.proc, log=gw.log)
            yield {"url": dev.url, "prod": prod.url, "api": api, "db": db_url,
                   "secret": secret, "keys": keys}
        finally:
            dev.stop()
            prod.stop()
            api.stop()


def _get(edge, path, key=None, header="bearer", **kw):
    headers = kw.pop("headers", {})
    if key is not None:
        headers = {**headers, **({"Authorization": f"Bearer {key}"} if header == "bearer"
                                 else {"X-API-Key": key})}
    return httpx.get(edge["url"] + path, headers=headers, timeout=15, **kw)


def _post(base, path, key=None, json_body=None, idem=None, **kw):
    headers = kw.pop("headers", {})
    if key is not None:
        headers["X-API-Key"] = key
    if idem is not None:
        headers["Idempotency-Key"] = idem
    return httpx.post(base + path, headers=headers, json=json_body, timeout=15, **kw)


def _error(resp, status, code):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"]["code"] == code, body
    assert body["error"]["reason"]
    return body["error"]["reason"]


RUN = {"engine": "chatgpt", "model": "gpt-4o", "prompt": "who makes Velnorex?",
       "answer": "Lumora makes it."}


# -- credentials --------------------------------------------------------------------------------
def test_routes_other_than_public_need_a_key(edge):
    for path in ("/v1/brands", "/v1/runs", "/v1/metrics", "/v1/brands/acme/ground-truth",
                 "/v1/evidence/" + "a" * 64):
        resp = _get(edge, path)
        _error(resp, 401, "unauthorized")
        assert resp.headers["www-authenticate"].startswith("Bearer")
    _error(_get(edge, "/v1/brands", headers={"Authorization": "Basic dXNlcjpwYXNz"}),
           401, "unauthorized")
    assert "malformed" in _error(_get(edge, "/v1/brands", key="not-a-key"), 401, "unauthorized")
    key_id = edge["keys"]["a1"][0]
    forged = f"atk_{key_id}_{secrets.token_urlsafe(32)}"  # right id, wrong secret
    _error(_get(edge, "/v1/brands", key=forged), 401, "unauthorized")
    unknown = f"atk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}"
    _error(_get(edge, "/v1/brands", key=unknown, header="x-api-key"), 401, "unauthorized")


def test_both_key_headers_are_accepted_and_open_routes_stay_open(edge):
    key = edge["keys"]["a1"][1]
    assert _get(edge, "/v1/brands", key=key).status_code == 200
    assert _get(edge, "/v1/brands", key=key, header="x-api-key").status_code == 200
    assert _get(edge, "/healthz").status_code == 200
    assert _get(edge, "/readyz").json()["status"] == "ready"
    assert _get(edge, "/v1/public/log/tree-head").status_code == 200
    assert _get(edge, "/openapi.json").json()["info"]["title"] == "Attesta API"
    assert "attesta_gateway_chat_total" in _get(edge, "/metrics").text


def test_revoked_key_stops_working(edge):
    key_id, key = edge["keys"]["revoked"]
    assert _get(edge, "/v1/brands", key=key).status_code == 200
    env = {**os.environ, "ATTESTA_GATEWAY_DB_URL": edge["db"],
           "ATTESTA_GATEWAY_SECRET": edge["secret"]}
    out = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "gateway", "keys",
                          "revoke", key_id], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    time.sleep(0.7)  # the key cache TTL of this gateway (0.5 s)
    assert "revoked" in _error(_get(edge, "/v1/brands", key=key), 401, "unauthorized")


# -- workspace isolation ------------------------------------------------------------------------
def test_a_key_sees_only_its_workspace(edge):
    a1, a2, b1 = (edge["keys"][k][1] for k in ("a1", "a2", "b1"))
    brand = f"acme-{uuid.uuid4().hex[:6]}"
    resp = _post(edge["url"], "/v1/brands", a1, {"brand_id": brand, "name": "Acme"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["workspace_id"] == "ws-a"
    assert _get(edge, f"/v1/brands/{brand}", key=a2).status_code == 200  # same workspace
    _error(_get(edge, f"/v1/brands/{brand}", key=b1), 404, "not_found")
    # A client cannot pick a workspace by sending the internal headers itself.
    forged = {"X-Attesta-Workspace": "ws-a", "X-Attesta-Internal-Token": "guess"}
    _error(_get(edge, f"/v1/brands/{brand}", key=b1, headers=forged), 404, "not_found")
    listed = _get(edge, "/v1/brands", key=b1).json()["items"]
    assert brand not in {b["brand_id"] for b in listed}
    seen = edge["api"].calls_to("GET", f"/v1/brands/{brand}")
    assert [c["headers"]["x-attesta-workspace"] for c in seen] == ["ws-a", "ws-b", "ws-b"]
    assert all(c["headers"]["x-attesta-internal-token"] == TOKEN for c in seen)
    assert seen[1]["headers"]["x-attesta-actor"] == edge["keys"]["b1"][0]


def test_public_routes_carry_no_workspace_or_token(edge):
    sha = "AB" * 32
    _error(_get(edge, f"/v1/public/evidence/{sha}"), 404, "not_found")
    call = edge["api"].calls_to("GET", f"/v1/public/evidence/{sha.lower()}")[-1]
    assert "x-attesta-workspace" not in call["headers"]
    assert "x-attesta-internal-token" not in call["headers"]
    _error(_get(edge, "/v1/public/evidence/not-a-hash"), 400, "invalid_sha256")


# -- idempotency keys ---------------------------------------------------------------------------
def test_post_runs_requires_a_well_formed_idempotency_key(edge):
    key = edge["keys"]["a1"][1]
    _error(_post(edge["url"], "/v1/runs", key, RUN), 400, "idempotency_key_required")
    _error(_post(edge["url"], "/v1/runs", key, RUN, idem='"unterminated'), 400,
           "invalid_idempotency_key")
    _error(_post(edge["url"], "/v1/runs", key, RUN, idem="x" * 300), 400,
           "invalid_idempotency_key")


def test_replay_returns_the_stored_response_and_forwards_once(edge):
    key, api = edge["keys"]["a1"][1], edge["api"]
    idem = f'"{uuid.uuid4()}"'
    body = {**RUN, "answer": f"unique answer {uuid.uuid4()}"}
    before = len(api.calls_to("POST", "/v1/runs"))
    first = _post(edge["url"], "/v1/runs", key, body, idem=idem)
    assert first.status_code == 202, first.text
    assert "idempotent-replayed" not in first.headers
    again = _post(edge["url"], "/v1/runs", key, body, idem=idem)
    assert again.status_code == 202
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert len(api.calls_to("POST", "/v1/runs")) == before + 1
    # Same key, other payload: 422. Same key in another workspace: its own, independent key.
    other = {**body, "answer": "something else"}
    _error(_post(edge["url"], "/v1/runs", key, other, idem=idem), 422, "idempotency_key_reused")
    b_key = edge["keys"]["b1"][1]
    assert _post(edge["url"], "/v1/runs", b_key, other, idem=idem).status_code == 202
    assert len(api.calls_to("POST", "/v1/runs")) == before + 2


def test_retry_while_in_flight_is_409_and_a_failed_attempt_frees_the_key(edge):
    key = edge["keys"]["a2"][1]
    idem = str(uuid.uuid4())
    slow = {**RUN, "prompt": "slow"}  # the stand-in answers after 3 s; gateway timeout is 1 s
    results: dict[str, httpx.Response] = {}
    first = threading.Thread(target=lambda: results.__setitem__(
        "first", _post(edge["url"], "/v1/runs", key, slow, idem=idem)))
    first.start()
    time.sleep(0.4)
    reason = _error(_post(edge["url"], "/v1/runs", key, slow, idem=idem), 409,
                    "idempotency_key_in_flight")
    assert "still being processed" in reason
    first.join(timeout=20)
    _error(results["first"], 504, "upstream_timeout")
    # The 504 was not stored: the key is free again, and a retry is forwarded (not 409/replay).
    edge["api"].slow_s = 0.0
    try:
        retry = _post(edge["url"], "/v1/runs", key, slow, idem=idem)
    finally:
        edge["api"].slow_s = 3.0
    assert retry.status_code == 202, retry.text
    assert "idempotent-replayed" not in retry.headers


def test_concurrent_first_requests_with_one_key_forward_exactly_once(edge):
    from concurrent.futures import ThreadPoolExecutor

    key, api = edge["keys"]["b1"][1], edge["api"]
    idem = str(uuid.uuid4())
    body = {**RUN, "answer": f"raced {idem}"}
    before = len(api.calls_to("POST", "/v1/runs"))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: _post(edge["url"], "/v1/runs", key, body, idem=idem),
                            range(8)))
    statuses = sorted(r.status_code for r in got)
    assert set(statuses) <= {202, 409}, statuses
    assert len(api.calls_to("POST", "/v1/runs")) == before + 1  # one claim won the race
    winners = [r for r in got if r.status_code == 202 and "idempotent-replayed" not in r.headers]
    assert len(winners) == 1
    assert all(r.json() == winners[0].json() for r in got if r.status_code == 202)


def test_the_actor_is_the_key_id(edge):
    key_id, key = edge["keys"]["a2"]
    resp = _post(edge["url"], "/v1/runs", key, {**RUN, "answer": "actor?"},
                 idem=str(uuid.uuid4()))
    assert resp.status_code == 202
    run = edge["api"].runs[("ws-a", resp.json()["run_id"])]
    assert run["actor"] == key_id


# -- failures behind the gateway ----------------------------------------------------------------
def test_slow_service_gives_504_and_broken_service_502_never_a_hang(edge):
    key = edge["keys"]["a1"][1]
    started = time.monotonic()
    _error(_get(edge, "/v1/runs/slow", key=key), 504, "upstream_timeout")
    assert time.monotonic() - started < 4.5  # 2 attempts x 1 s + backoff, capped by 3 s deadline
    _error(_get(edge, "/v1/runs/broken", key=key), 502, "upstream_error")
    _error(_get(edge, "/v1/runs/nope", key=key), 404, "not_found")


def test_bad_bodies_get_the_shared_error_shape(edge):
    key = edge["keys"]["a1"][1]
    assert "name" in _error(_post(edge["url"], "/v1/brands", key, {"brand_id": "x"}), 422,
                            "invalid_request")
    resp = httpx.post(edge["url"] + "/v1/brands", content=b"{nope",
                      headers={"X-API-Key": key, "content-type": "application/json"})
    assert "not valid JSON" in _error(resp, 422, "invalid_request")
    huge = {**RUN, "answer": "x" * 70_000}
    _error(_post(edge["url"], "/v1/runs", key, huge, idem="big"), 413, "payload_too_large")
    _error(_get(edge, "/v1/brands/Not_A_Slug", key=key), 422, "invalid_request")
    _error(httpx.delete(edge["url"] + "/v1/brands"), 405, "method_not_allowed")
    _error(_get(edge, "/v1/nope"), 404, "not_found")


def test_times_must_be_rfc3339_text_not_unix_numbers(edge):
    """The gateway validates with the contract's own RunCreate: a number in a time field is a
    422 naming the field, nothing is forwarded, and the Idempotency-Key stays unused."""
    key, api = edge["keys"]["a1"][1], edge["api"]
    idem = f'"{uuid.uuid4()}"'
    before = len(api.calls_to("POST", "/v1/runs"))
    for field in ("requested_at", "answered_at"):
        reason = _error(_post(edge["url"], "/v1/runs", key, {**RUN, field: 1764547200}, idem=idem),
                        422, "invalid_request")
        assert reason.startswith(f"body.{field}: ") and "not a number" in reason, reason
    assert "date-time" in _error(_post(edge["url"], "/v1/runs", key,
                                       {**RUN, "answered_at": "2026-12-01"}, idem=idem),
                                 422, "invalid_request")
    assert len(api.calls_to("POST", "/v1/runs")) == before
    ok = {**RUN, "answer": f"timed {uuid.uuid4()}", "answered_at": "2026-12-01T00:00:00Z"}
    assert _post(edge["url"], "/v1/runs", key, ok, idem=idem).status_code == 202
    for query in ({"from": "1764547200"}, {"to": "2026-12-01 00:00:00Z"}):
        assert "date-time" in _error(_get(edge, "/v1/runs", key=key, params=query),
                                     422, "invalid_request")


def test_cors_allows_only_the_configured_origin(edge):
    pre = {"Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "content-type,idempotency-key"}
    ok = httpx.options(edge["url"] + "/v1/chat", headers={"Origin": "http://app.test", **pre})
    assert ok.headers["access-control-allow-origin"] == "http://app.test"
    bad = httpx.options(edge["url"] + "/v1/chat", headers={"Origin": "http://evil.test", **pre})
    assert "access-control-allow-origin" not in bad.headers


def test_spa_files_are_served_with_client_side_routes(edge):
    assert "attesta spa" in _get(edge, "/").text
    assert "attesta spa" in _get(edge, "/verify").text  # a client-side route gets index.html
    js = _get(edge, "/assets/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    _error(_get(edge, "/v1/public/nope"), 404, "not_found")  # API paths keep their JSON 404


# -- chat ---------------------------------------------------------------------------------------
def test_chat_validates_and_production_can_require_a_key(edge):
    _error(_post(edge["url"], "/v1/chat", json_body={"question": ""}), 422, "invalid_request")
    _error(_post(edge["prod"], "/v1/chat", json_body={"question": "dose of Velnorex?"}), 401,
           "unauthorized")
    resp = _post(edge["prod"], "/v1/chat", edge["keys"]["a1"][1], {"question": "dose of Velnorex?"})
    # Answered when retrieval/answer run on this Kafka, else the chat timeout: never a 401.
    assert resp.status_code in (200, 504), resp.text
    if resp.status_code == 504:
        _error(resp, 504, "answer_timeout")
    else:
        assert resp.json()["question"] == "dose of Velnorex?"


# -- production start-up and the CLI ------------------------------------------------------------
def test_production_refuses_missing_or_weak_secrets():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTESTA_GATEWAY")}
    env.update({"ATTESTA_ENV": "production", "ATTESTA_INTERNAL_TOKEN": "short",
                "ATTESTA_HTTP_PORT": str(free_port())})
    out = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "run", "gateway"],
                         env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 2
    assert "ATTESTA_GATEWAY_SECRET" in out.stderr
    assert "ATTESTA_INTERNAL_TOKEN" in out.stderr
    assert "database password" in out.stderr


def test_keys_cli_creates_lists_and_revokes(edge):
    env = {**os.environ, "ATTESTA_GATEWAY_DB_URL": edge["db"],
           "ATTESTA_GATEWAY_SECRET": edge["secret"]}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "attesta_platform.cli", "gateway", *args],
                              env=env, capture_output=True, text=True, timeout=60)

    made = cli("keys", "create", "--workspace", "ws-cli", "--name", "ci")
    assert made.returncode == 0, made.stderr
    plaintext = made.stdout.strip()
    assert plaintext.startswith("atk_") and len(plaintext.splitlines()) == 1
    assert _get(edge, "/v1/brands", key=plaintext).status_code == 200
    listed = json.loads(cli("keys", "list", "--workspace", "ws-cli", "--json").stdout)
    assert [k["name"] for k in listed] == ["ci"] and listed[0]["revoked_at"] is None
    assert plaintext not in json.dumps(listed)  # the secret is never stored or shown again
    key_id = listed[0]["key_id"]
    assert cli("keys", "revoke", key_id).returncode == 0
    assert cli("keys", "revoke", key_id).returncode == 1  # already revoked
    assert cli("keys", "create", "--workspace", "bad workspace!").returncode == 2
