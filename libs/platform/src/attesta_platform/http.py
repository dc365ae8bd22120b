"""HTTP conventions shared by the gateway and the services' internal APIs.

- One error shape everywhere: ``{"error": {"code": "<machine_code>", "reason": "<human text>"}}``.
- Internal APIs (classifier, evidence) listen on 127.0.0.1 and are called only by the gateway.
  The gateway authenticates the caller, then forwards the caller's workspace in
  ``X-Attesta-Workspace`` together with the shared ``X-Attesta-Internal-Token``; an internal API
  refuses any request without the right token (401), so the workspace header cannot be forged
  by a client that reaches the port directly. Public routes (``/v1/public/*``) need no token.
- ``GET /metrics`` (Prometheus text format) is served the same way by every app that has one
  (``add_metrics_route``): open like ``/healthz``, and not part of the OpenAPI document.
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import quote, unquote

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from starlette.exceptions import HTTPException

WORKSPACE_HEADER = "X-Attesta-Workspace"
INTERNAL_TOKEN_HEADER = "X-Attesta-Internal-Token"
ACTOR_HEADER = "X-Attesta-Actor"  # the API key id (or operator) behind a request, for audit
# The API key's name (who a person's review is recorded under), percent-encoded UTF-8: a name is
# free text and a header value must be ASCII. ``actor_name_header`` / ``actor_name_of`` below.
ACTOR_NAME_HEADER = "X-Attesta-Actor-Name"


class ErrorBody(BaseModel):
    code: str
    reason: str


class ErrorResponse(BaseModel):
    """The one error shape (documented in every OpenAPI error response)."""

    error: ErrorBody


class ApiError(Exception):
    """Raise from a route to answer with the shared error shape."""

    def __init__(self, status: int, code: str, reason: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status, self.code, self.reason, self.headers = status, code, reason, headers


def error_response(status: int, code: str, reason: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, headers=headers,
                        content={"error": {"code": code, "reason": reason}})


def install_error_handlers(app: FastAPI) -> None:
    """Map validation errors, HTTP errors and ``ApiError`` onto the shared shape."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.reason, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        if first.get("type") == "json_invalid":
            return error_response(422, "invalid_request", f"body is not valid JSON: {first['msg']}")
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(422, "invalid_request", f"{where}: {first['msg']}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400:  # Starlette's "body is not JSON": still a malformed body
            return error_response(422, "invalid_request", f"body is not valid JSON: {exc.detail}")
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found",
                405: "method_not_allowed", 413: "payload_too_large"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail),
                              getattr(exc, "headers", None))


def add_metrics_route(router: FastAPI | APIRouter, path: str = "/metrics") -> None:
    """Serve this process's Prometheus registry (every ``prometheus_client`` metric it created,
    the shared messaging ones included) at ``GET path``, in the text exposition format. No
    credentials, like ``/healthz``: the services' ports listen on 127.0.0.1 and the gateway's
    metrics carry no workspace data. Left out of the OpenAPI document."""
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    router.add_api_route(path, metrics, methods=["GET"], include_in_schema=False,
                         name="prometheus_metrics")


def check_internal_token(request: Request, expected: str) -> str:
    """The forwarded workspace of an internal call; ``ApiError`` 401/400 otherwise."""
    given = request.headers.get(INTERNAL_TOKEN_HEADER, "")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(401, "unauthorized", "internal API: missing or wrong internal token")
    workspace = request.headers.get(WORKSPACE_HEADER, "").strip()
    if not workspace:
        raise ApiError(400, "missing_workspace", f"internal API: {WORKSPACE_HEADER} is required")
    return workspace


def actor_name_header(name: str) -> str:
    """The header value carrying an API key's name (percent-encoded UTF-8)."""
    return quote(name, safe="")


def actor_name_of(request: Request) -> str | None:
    """The forwarded API key's name, or None when the key has none (or none was forwarded)."""
    raw = request.headers.get(ACTOR_NAME_HEADER)
    name = unquote(raw).replace("\x00", "").strip() if raw else ""
    return name[:200] or None


class BodyLimit:
    """Pure ASGI middleware (no per-request Starlette middleware overhead): refuse request
    bodies over ``max_bytes`` with 413 in the shared error shape, by the declared
    Content-Length or while streaming, so a chunked body cannot slip past."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
                if too_big:
                    resp = error_response(413, "payload_too_large",
                                          f"request body over {self.max_bytes} bytes")
                    await resp(scope, receive, send)
                    return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # An HTTPException passes through FastAPI's body parsing unchanged and is
                    # answered in the shared error shape by install_error_handlers.
                    raise HTTPException(413, f"request body over {self.max_bytes} bytes")
            return message

        await self.app(scope, counted, send)
