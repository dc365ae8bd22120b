"""The shared HTTP error shape, the internal-token check and the health app, over ASGI."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, Request
from pydantic import BaseModel, Field

from attesta_platform.http import (
    INTERNAL_TOKEN_HEADER,
    WORKSPACE_HEADER,
    ApiError,
    check_internal_token,
    install_error_handlers,
)
from attesta_platform.service import health_app

pytestmark = pytest.mark.unit
TOKEN = "s3cret-internal-token-for-tests-only"


class Body(BaseModel):
    name: str = Field(min_length=1)
    count: int = 1


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/things")
    async def create(body: Body) -> dict:
        return {"name": body.name}

    @app.get("/teapot")
    async def teapot() -> dict:
        raise ApiError(418, "teapot", "short and stout", headers={"Retry-After": "7"})

    @app.get("/internal/whoami")
    async def whoami(request: Request) -> dict:
        return {"workspace": check_internal_token(request, TOKEN)}

    @app.get("/misconfigured")
    async def misconfigured(request: Request) -> dict:
        return {"workspace": check_internal_token(request, "")}

    return app


@pytest.fixture
async def client():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_app()),
                                 base_url="http://test") as c:
        yield c


def _error(resp: httpx.Response) -> dict:
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "reason"}, body
    return body["error"]


async def test_api_error_uses_the_shape_status_and_headers(client):
    resp = await client.get("/teapot")
    assert resp.status_code == 418
    assert _error(resp) == {"code": "teapot", "reason": "short and stout"}
    assert resp.headers["retry-after"] == "7"


@pytest.mark.parametrize(("body", "where"), [
    ({"name": ""}, "body.name"),
    ({"name": "x", "count": "many"}, "body.count"),
    ({}, "body.name"),
])
async def test_invalid_body_is_422_naming_the_field(client, body, where):
    resp = await client.post("/things", json=body)
    assert resp.status_code == 422
    err = _error(resp)
    assert err["code"] == "invalid_request"
    assert err["reason"].startswith(where + ":")


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe{", b'{"name": "x",}'])
async def test_malformed_json_is_422_not_valid_json(client, raw):
    resp = await client.post("/things", content=raw, headers={"content-type": "application/json"})
    assert resp.status_code == 422
    err = _error(resp)
    assert err["code"] == "invalid_request" and "not valid JSON" in err["reason"]


async def test_http_errors_keep_the_shape(client):
    resp = await client.get("/nowhere")
    assert resp.status_code == 404 and _error(resp)["code"] == "not_found"
    resp = await client.delete("/teapot")
    assert resp.status_code == 405 and _error(resp)["code"] == "method_not_allowed"
    assert "GET" in resp.headers["allow"]


async def test_internal_token_accepts_the_right_token_and_returns_the_workspace(client):
    resp = await client.get("/internal/whoami",
                            headers={INTERNAL_TOKEN_HEADER: TOKEN, WORKSPACE_HEADER: " ws-1 "})
    assert resp.status_code == 200 and resp.json() == {"workspace": "ws-1"}


@pytest.mark.parametrize("headers", [
    {},
    {INTERNAL_TOKEN_HEADER: ""},
    {INTERNAL_TOKEN_HEADER: TOKEN[:-1]},
    {INTERNAL_TOKEN_HEADER: TOKEN + "x"},
    {INTERNAL_TOKEN_HEADER: TOKEN.upper()},
])
async def test_internal_token_refuses_missing_or_wrong_tokens(client, headers):
    resp = await client.get("/internal/whoami", headers={**headers, WORKSPACE_HEADER: "ws-1"})
    assert resp.status_code == 401
    assert _error(resp)["code"] == "unauthorized"


async def test_internal_token_needs_a_workspace(client):
    for ws in (None, "", "   "):
        headers = {INTERNAL_TOKEN_HEADER: TOKEN} | ({WORKSPACE_HEADER: ws} if ws is not None else {})
        resp = await client.get("/internal/whoami", headers=headers)
        assert resp.status_code == 400
        assert _error(resp)["code"] == "missing_workspace"


async def test_unset_expected_token_refuses_everything(client):
    """An internal API started without ATTESTA_INTERNAL_TOKEN must not accept an empty token."""
    for given in ("", "anything"):
        resp = await client.get("/misconfigured",
                                headers={INTERNAL_TOKEN_HEADER: given, WORKSPACE_HEADER: "ws"})
        assert resp.status_code == 401


async def test_health_app_readiness_follows_the_check():
    reason: list[str | None] = ["warming up"]
    app = health_app("svc", lambda: reason[0])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/healthz")).json() == {"status": "ok", "service": "svc"}
        resp = await c.get("/readyz")
        assert resp.status_code == 503
        assert resp.json() == {"error": {"code": "not_ready", "reason": "warming up"}}
        reason[0] = None
        resp = await c.get("/readyz")
        assert resp.status_code == 200 and resp.json() == {"status": "ready", "service": "svc"}
        resp = await c.get("/metrics")
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/plain")
        assert "# HELP" in resp.text and "# TYPE" in resp.text
        assert (await c.get("/docs")).status_code == 404  # no API docs on the side door
