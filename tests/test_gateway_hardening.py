"""Issue #19 at the gateway, against the real gateway process (real Kafka/PostgreSQL/Redis) in
front of a real stand-in HTTP server on 127.0.0.1: slow clients (header and body deadlines),
security headers on every response, test files and operator routes off the public port, and
the small protocol findings (405 Allow, duplicate header lines, a hash with a trailing newline,
two different keys, NUL in the URL). The findings that need the real classifier are in
test_gateway_services_e2e.py; failed-authentication limiting is in test_gateway_limits.py."""

from __future__ import annotations

import secrets
import socket
import time
import uuid

import httpx
import pytest
import pytest_asyncio

from tests.gateway_fakes import GatewayProcess, StandInApi, free_port, make_key, migrated_database
from attesta_testing.infra import kafka_bootstrap, redis_url

pytestmark = pytest.mark.integration
TOKEN = "test-internal-token-" + "y" * 24
HEADER_TIMEOUT_S, BODY_TIMEOUT_S = 1.0, 1.5


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(tmp_path_factory):
    kafka_bootstrap()
    logs = tmp_path_factory.mktemp("gateway-hardening")
    secret = secrets.token_urlsafe(48)
    api = StandInApi(TOKEN).start()
    spa = logs / "spa"
    (spa / "tests").mkdir(parents=True)
    (spa / "index.html").write_text("<!doctype html><title>attesta spa</title>")
    (spa / "app.js").write_text("console.log('attesta')")
    (spa / "citations.test.mjs").write_text("import test from 'node:test'")
    (spa / "tests" / "run.mjs").write_text("// a test runner")
    (spa / ".env").write_text("SECRET=1")
    metrics_port = free_port()
    async with migrated_database() as db_url:
        _, key = await make_key(db_url, secret, "ws-h")
        _, other = await make_key(db_url, secret, "ws-h")
        proc = GatewayProcess({
            "ATTESTA_GATEWAY_DB_URL": db_url, "ATTESTA_GATEWAY_SECRET": secret,
            "ATTESTA_INTERNAL_TOKEN": TOKEN, "REDIS_URL": redis_url(),
            "ATTESTA_CLASSIFIER_URL": api.url, "ATTESTA_EVIDENCE_URL": api.url,
            "ATTESTA_RATE_LIMIT_PREFIX": f"t-gwh-{uuid.uuid4().hex[:8]}:",
            "ATTESTA_RATE_LIMIT_PER_KEY": "10000", "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "10000",
            "ATTESTA_RATE_LIMIT_AUTH_FAILURES_PER_CLIENT": "10000",
            "ATTESTA_REDIS_TIMEOUT_S": "3", "ATTESTA_STATIC_DIR": str(spa),
            "ATTESTA_MAX_BODY_BYTES": "65536", "ATTESTA_METRICS_PORT": str(metrics_port),
            "ATTESTA_HTTP_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
            "ATTESTA_HTTP_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
        }, logs, "hardening").start()
        try:
            yield {"url": proc.url, "port": proc.port, "key": key, "other": other,
                   "metrics": f"http://127.0.0.1:{metrics_port}/metrics", "api": api}
        finally:
            proc.stop()
            api.stop()


def _code(resp: httpx.Response) -> str:
    return resp.json()["error"]["code"]


# -- slow clients -------------------------------------------------------------------------------
def _raw(port: int, data: bytes, wait_s: float) -> tuple[bytes, float]:
    """Send ``data`` and read until the server closes the connection (or ``wait_s``)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        if data:
            sock.sendall(data)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except TimeoutError:
            return got + b"<still open>", time.monotonic() - started
    return got, time.monotonic() - started


def test_unfinished_headers_get_408_and_the_connection_is_closed(gw):
    got, took = _raw(gw["port"], b"GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Slow: 1", wait_s=10)
    assert got.startswith(b"HTTP/1.1 408 "), got
    assert b"request_timeout" in got and b"frame-ancestors 'none'" in got
    assert HEADER_TIMEOUT_S - 0.2 <= took < HEADER_TIMEOUT_S + 3, took
    got, took = _raw(gw["port"], b"", wait_s=10)  # a connection that sends nothing at all
    assert got == b"" and took < HEADER_TIMEOUT_S + 3, (got, took)


def test_after_a_response_the_next_request_has_the_same_header_deadline(gw):
    request = b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"
    got, took = _raw(gw["port"], request + b"GET /healthz HTTP/1.1\r\nHost: g", wait_s=10)
    assert got.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 408 " in got, got
    assert took < HEADER_TIMEOUT_S + 3


def test_a_body_that_never_arrives_gets_408(gw):
    head = (b"POST /v1/chat HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200\r\n\r\n")
    got, took = _raw(gw["port"], head + b'{"question": "hel', wait_s=10)
    assert got.startswith(b"HTTP/1.1 408 "), got
    assert b"request_timeout" in got and b"nosniff" in got
    assert BODY_TIMEOUT_S - 0.2 <= took < BODY_TIMEOUT_S + 3, took


def test_many_stalled_connections_are_all_closed(gw):
    socks = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", gw["port"]), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\n")
        socks.append(s)
    time.sleep(HEADER_TIMEOUT_S + 2)
    try:
        closed = 0
        for s in socks:
            s.settimeout(2)
            data = s.recv(65536)
            while data and (more := s.recv(65536)):
                data += more
            closed += data.startswith(b"HTTP/1.1 408 ")
        assert closed == 50
    finally:
        for s in socks:
            s.close()
    assert httpx.get(gw["url"] + "/healthz", timeout=5).status_code == 200


# -- response headers and what the public port serves ---------------------------------------------
SECURITY = {"x-content-type-options": "nosniff", "x-frame-options": "DENY",
            "referrer-policy": "no-referrer"}


def _secured(resp: httpx.Response) -> None:
    for name, value in SECURITY.items():
        assert resp.headers.get(name) == value, (resp.request.url, name, resp.headers)
    csp = resp.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp


def test_every_response_carries_the_security_headers(gw):
    url, key = gw["url"], gw["key"]
    responses = [
        httpx.get(url + "/"), httpx.get(url + "/app.js"), httpx.get(url + "/verify"),
        httpx.get(url + "/healthz"), httpx.get(url + "/openapi.json"),
        httpx.get(url + "/v1/brands", headers={"X-API-Key": key}),  # 200 forwarded
        httpx.get(url + "/v1/brands"),  # 401
        httpx.delete(url + "/v1/brands"),  # 405
        httpx.post(url + "/v1/chat", content=b"x" * 70_000,
                   headers={"content-type": "application/json"}),  # 413
        httpx.get(url + "/v1/nope"),  # 404
        httpx.get(url + "/v1/runs?engine=a%00b", headers={"X-API-Key": key}),  # 400
    ]
    assert [r.status_code for r in responses] == [200, 200, 200, 200, 200, 200, 401, 405, 413,
                                                  404, 400]
    for resp in responses:
        _secured(resp)


def test_test_files_and_dotfiles_are_not_served(gw):
    for path in ("/citations.test.mjs", "/tests/run.mjs", "/.env"):
        resp = httpx.get(gw["url"] + path)
        assert resp.status_code == 404 and _code(resp) == "not_found", (path, resp.text)
    assert httpx.get(gw["url"] + "/app.js").status_code == 200


def test_docs_and_metrics_are_off_the_public_port_and_metrics_on_the_operator_port(gw):
    docs = httpx.get(gw["url"] + "/docs")
    assert "swagger" not in docs.text.lower()  # the SPA's client-side route, not Swagger UI
    assert httpx.get(gw["url"] + "/redoc").status_code in (200, 404)
    assert "redoc" not in httpx.get(gw["url"] + "/redoc").text.lower()
    public = httpx.get(gw["url"] + "/metrics")
    assert public.status_code == 404 and "attesta_gateway" not in public.text
    operator = httpx.get(gw["metrics"], timeout=5)
    assert operator.status_code == 200 and "attesta_gateway_rate_limited_total" in operator.text


# -- smaller findings -----------------------------------------------------------------------------
def test_405_names_the_methods_the_path_really_has(gw):
    for path, allowed in (("/v1/brands", "GET, POST"), ("/v1/runs", "GET, POST"),
                          ("/v1/brands/acme", "GET, PATCH"), ("/v1/chat", "POST")):
        resp = httpx.put(gw["url"] + path)
        assert resp.status_code == 405 and resp.headers["allow"] == allowed, (path, resp.headers)


def test_two_idempotency_key_lines_are_refused_and_nothing_is_forwarded(gw):
    api, before = gw["api"], len(gw["api"].calls_to("POST", "/v1/runs"))
    body = {"engine": "e", "model": "m", "prompt": "p", "answer": f"a {uuid.uuid4()}"}
    resp = httpx.post(gw["url"] + "/v1/runs", json=body, headers=[
        ("X-API-Key", gw["key"]), ("Idempotency-Key", '"one"'), ("Idempotency-Key", '"two"')])
    assert resp.status_code == 400 and _code(resp) == "duplicate_header", resp.text
    assert len(api.calls_to("POST", "/v1/runs")) == before
    resp = httpx.get(gw["url"] + "/v1/brands",
                     headers=[("X-API-Key", gw["key"]), ("X-API-Key", gw["other"])])
    assert resp.status_code == 400 and _code(resp) == "duplicate_header"


def test_a_hash_with_a_trailing_newline_is_refused(gw):
    sha = "ab" * 32
    resp = httpx.get(gw["url"] + f"/v1/public/evidence/{sha}%0A")
    assert resp.status_code == 400 and _code(resp) == "invalid_sha256", resp.text
    assert httpx.get(gw["url"] + f"/v1/public/evidence/{sha}").status_code == 404


def test_two_different_keys_are_refused_whichever_is_valid(gw):
    bad = f"atk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}"
    for headers in ({"X-API-Key": bad, "Authorization": f"Bearer {gw['key']}"},
                    {"X-API-Key": gw["key"], "Authorization": f"Bearer {bad}"}):
        resp = httpx.get(gw["url"] + "/v1/brands", headers=headers)
        assert resp.status_code == 401 and "two different API keys" in resp.json()["error"]["reason"]
    same = {"X-API-Key": gw["key"], "Authorization": f"Bearer {gw['key']}"}
    assert httpx.get(gw["url"] + "/v1/brands", headers=same).status_code == 200


def test_a_nul_in_the_url_is_refused_before_any_route(gw):
    api, before = gw["api"], len(gw["api"].calls)
    for path in ("/v1/runs?engine=a%00b", "/v1/brands/a%00b", "/v1/public/log/leaves?start=0%00"):
        resp = httpx.get(gw["url"] + path, headers={"X-API-Key": gw["key"]})
        assert resp.status_code == 400 and _code(resp) == "nul_character", (path, resp.text)
    assert len(api.calls) == before
