"""The reviewer is the API key's name (issue #28): the gateway's principal carries it, every way
of forwarding on a caller's behalf (a GET, a creating POST with or without an Idempotency-Key,
an export stream) sends it next to the key id to a real HTTP server on 127.0.0.1, and the
service reads back exactly the name, whatever its characters. The review routes are in the
committed OpenAPI document with their errors and the Idempotency-Key header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from starlette.requests import Request

from tests.gateway_fakes import InMemoryUnitOfWork, gateway_on
from attesta_gateway.adapters.upstream import Upstream
from attesta_gateway.domain.keys import StoredKey, key_digest, new_key
from attesta_gateway.entrypoints.api import Caller
from attesta_gateway.service_layer.auth import Authenticator
from attesta_platform.http import ACTOR_HEADER, ACTOR_NAME_HEADER, actor_name_of

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
SECRET = b"s" * 40
NAME = "Ana Lúcia / QA ✓ %41"  # not ASCII, with a slash and a literal percent sign


@pytest.fixture
async def service():
    """A stand-in internal service on 127.0.0.1 that keeps the headers of every call."""
    seen: list[dict[str, str]] = []

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        if request.path.startswith("/v1/exports"):
            return web.Response(body=b"a,b\r\n", content_type="text/csv")
        return web.json_response({"ok": True}, status=201 if request.method == "POST" else 200)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    up = Upstream("classifier", f"http://127.0.0.1:{port}", "token", timeout_s=5.0)
    yield up, seen
    await up.close()
    await runner.cleanup()


def _post(path: str, body: bytes) -> Request:
    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
             "query_string": b"", "headers": [], "scheme": "http", "server": ("gw", 80),
             "root_path": ""}

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(scope, receive)


def _read_back(headers: dict[str, str]) -> str | None:
    """What the service makes of the forwarded headers (``actor_name_of``)."""
    raw = [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    return actor_name_of(Request({"type": "http", "headers": raw}))


async def test_the_key_name_travels_with_every_forwarded_call(service):
    up, seen = service
    uow = InMemoryUnitOfWork()
    key_id, plaintext = new_key()
    await uow.keys.add(StoredKey(key_id, "ws-a", NAME, key_digest(SECRET, plaintext)))
    principal = await Authenticator(uow.keys, SECRET, cache_ttl_s=0).authenticate(plaintext)
    assert (principal.key_id, principal.workspace_id, principal.name) == (key_id, "ws-a", NAME)
    caller = Caller(gateway_on(up, uow), principal)  # type: ignore[arg-type]

    await caller.forward("classifier", "GET", "/v1/review/queue")
    body = b'{"citation_class": "ECHO"}'
    path = "/v1/review/queue/r1/acme/decision"
    assert (await caller.create(_post(path, body), None, "classifier", path)).status_code == 201
    assert (await caller.create(_post(path, body), "idem-1", "classifier", path)).status_code == 201
    await caller.stream("classifier", "/v1/exports/runs", params=None, media_types=("text/csv",))
    assert len(seen) == 4
    for headers in seen:
        assert headers[ACTOR_HEADER] == key_id
        assert headers[ACTOR_NAME_HEADER].isascii()  # percent-encoded UTF-8
        assert _read_back(headers) == NAME


async def test_a_key_without_a_name_sends_none(service):
    up, seen = service
    uow = InMemoryUnitOfWork()
    key_id, plaintext = new_key()
    await uow.keys.add(StoredKey(key_id, "ws-a", "", key_digest(SECRET, plaintext)))
    principal = await Authenticator(uow.keys, SECRET, cache_ttl_s=0).authenticate(plaintext)
    caller = Caller(gateway_on(up, uow), principal)  # type: ignore[arg-type]
    await caller.forward("classifier", "GET", "/v1/review/queue")
    [headers] = seen
    assert ACTOR_NAME_HEADER not in headers and _read_back(headers) is None
    assert headers[ACTOR_HEADER] == key_id  # the service falls back to the key id


def test_the_review_routes_are_in_the_committed_openapi_document():
    doc = json.loads((ROOT / "docs" / "openapi.json").read_text())
    paths = doc["paths"]
    assert {"/v1/review/queue", "/v1/review/queue/{run_id}/{brand_id}",
            "/v1/review/queue/{run_id}/{brand_id}/decision", "/v1/review/agreement"} <= set(paths)
    decide = paths["/v1/review/queue/{run_id}/{brand_id}/decision"]["post"]
    assert {"201", "401", "404", "409", "422"} <= set(decide["responses"])
    assert "Idempotency-Key" in {p["name"] for p in decide.get("parameters", [])}
    assert decide["security"]  # a key is required
