"""The gateway's HTTP app factory: the one public edge of Attesta.

- ``/v1/chat``: request/reply over Kafka (open to the SPA, per-client rate limit; an API key is
  optional, or required with ``ATTESTA_CHAT_REQUIRE_KEY=true``).
- ``/v1/public/*``: the evidence service's public routes, no account, per-client rate limit.
- everything else under ``/v1``: an API key (``Authorization: Bearer <key>`` or
  ``X-API-Key: <key>``), per-key rate limit, forwarded to the classifier or the evidence
  service with the key's workspace.
- ``/healthz``, ``/readyz`` and ``/openapi.json``: open. Prometheus metrics on an operator
  port (``ATTESTA_METRICS_PORT``), on the public port only with ``ATTESTA_PUBLIC_METRICS=true``;
  ``/docs`` only with ``ATTESTA_API_DOCS=true``.

The routes: health and chat in ``entrypoints/routers``, every forwarded route a row of
``entrypoints/route_table.py`` (with its request and response models, so the OpenAPI document
is the whole contract); what they share is in ``entrypoints/api.py``, the one translation of
domain errors to HTTP in ``entrypoints/responses.py``. This module wires them: lifespan, error
handlers, middleware, the SPA.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from wsgiref.simple_server import WSGIServer
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.encoders import jsonable_encoder
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from prometheus_client import start_http_server

from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, DEAD_LETTERED
from attesta_gateway.entrypoints.api import IDEMPOTENCY_KEY_PATTERN, KEY_SCHEMES, require_key
from attesta_gateway.entrypoints.deps import Gateway
from attesta_gateway.entrypoints.guards import EdgeGuard, security_headers
from attesta_gateway.entrypoints.responses import REPLAYED_HEADER, install_domain_error_handler
from attesta_gateway.entrypoints.routers import all_routers
from attesta_gateway.entrypoints.routers.static import SpaFiles
from attesta_platform.http import (BodyLimit, add_metrics_route, error_response,
                                   install_error_handlers)
from attesta_gateway.settings import GatewaySettings
from attesta_platform.logs import get_logger

__all__ = ["API_VERSION", "IDEMPOTENCY_KEY_PATTERN", "create_app"]

log = get_logger("attesta.gateway")
API_VERSION = "1.0.0"


def create_app(gw: Gateway) -> FastAPI:
    settings = gw.settings

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        messaging = gw.messaging
        try:
            await messaging.ensure_topics([CHAT_REQUESTED, CHAT_ANSWERED, DEAD_LETTERED],
                                          settings.kafka_partitions)
            # Own group per instance, from latest: every instance sees every reply (replies.py).
            sub = messaging.consume(CHAT_ANSWERED, group_id=f"gateway-{settings.instance_id}",
                                    handler=gw.replies.on_reply,
                                    auto_offset_reset="latest")
            await messaging.start()
            await messaging.wait_assigned(sub)
        except Exception as exc:
            log.error("cannot start the chat reply consumer: Kafka unreachable?",
                      bootstrap=settings.kafka_bootstrap_servers, error=repr(exc))
            await gw.close()
            raise
        metrics_server = _start_metrics_server(settings)
        purge = asyncio.create_task(_purge_idempotency(gw))
        gw.ready = True
        log.info("gateway ready", instance=settings.instance_id, env=settings.env)
        try:
            yield
        finally:
            gw.ready = False
            purge.cancel()
            if metrics_server is not None:
                metrics_server.shutdown()
            await messaging.stop()
            await gw.close()

    docs = settings.api_docs
    app = FastAPI(
        title="Attesta API", version=API_VERSION, lifespan=lifespan,
        docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None,
        description=(
            "The public HTTP edge of Attesta. Authenticate with an API key, either "
            "`Authorization: Bearer <key>` or `X-API-Key: <key>` (keys are created with "
            "`attesta gateway keys create` or, by an admin key, `POST /v1/keys`). Each key has "
            "a role in its workspace: viewer (reads, exports), editor (also writes), admin "
            "(also keys and alert channels); each operation names the least role it needs in "
            "`x-attesta-role`, and a key below it gets 403. `/v1/public/*`, `/v1/chat` (unless the deployment "
            "requires a key for it) and the health routes need no key. Every error answers "
            "`{\"error\": {\"code\", \"reason\"}}`. Creating POSTs accept an `Idempotency-Key` "
            "header (IETF httpapi draft); it is required on `POST /v1/runs`."),
    )
    app.state.gateway = gw  # read by entrypoints.deps.gateway, and nowhere else
    install_error_handlers(app)
    install_domain_error_handler(app)
    routers = all_routers(
        lambda: None if gw.ready else "Kafka reply consumer not assigned yet",
        settings.instance_id)
    # The routers' routes go straight into the app's own list: include_router would keep each
    # router nested (FastAPI 0.165) and every request would walk the routers to find its route.
    # A route is whole without its router: FastAPI merges the router's tags, dependencies and
    # responses into each route when it is declared.
    for router in routers:
        app.router.routes.extend(router.routes)
    if settings.public_metrics:
        add_metrics_route(app)
    api_routes = [r for r in app.routes if isinstance(r, APIRoute)]
    headers = security_headers(settings.content_security_policy)

    def routes_of(path: str) -> list[APIRoute]:
        # A literal path (/v1/prompts/import) answers for itself, not for the templates it
        # also matches (/v1/prompts/{prompt_id}).
        return [r for r in api_routes if r.path == path] or \
            [r for r in api_routes if r.path_regex.match(path)]

    @app.exception_handler(405)
    async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        # Each (path, method) is its own route, so the router's Allow names only the first
        # route that matched the path; list every method the path really has.
        # Routes left out of the document only refuse methods (routers/keys.py): not listed.
        allowed = sorted({m for r in routes_of(request.url.path) if r.include_in_schema
                          for m in (r.methods or ())})
        if not allowed and settings.static_dir:
            allowed = ["GET", "HEAD"]  # the SPA's files
        return error_response(405, "method_not_allowed",
                              f"{request.method} is not allowed here; allowed: "
                              f"{', '.join(allowed)}", {"Allow": ", ".join(allowed)})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", path=request.url.path, error=repr(exc))
        # Answered outside the middleware stack: the security headers are added here.
        return error_response(500, "internal_error", "unexpected error in the gateway",
                              dict(headers))

    _document_openapi(app, api_routes, required_idempotency={("/v1/runs", "post")},
                      optional_key={("/v1/chat", "post")})
    if settings.static_dir:
        app.mount("/", SpaFiles(directory=settings.static_dir, html=True,
                                is_api_path=lambda path: bool(routes_of(path))), name="spa")
    origins = settings.cors_origin_list()
    if origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Idempotency-Key"],
            expose_headers=["Retry-After", REPLAYED_HEADER], max_age=600)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    # Outermost: its headers reach every answer, the 413s and CORS preflights included.
    app.add_middleware(EdgeGuard, headers=headers, body_timeout_s=settings.http_body_timeout_s)
    return app


def _start_metrics_server(settings: GatewaySettings) -> WSGIServer | None:
    """Prometheus metrics on the operator port (a thread of prometheus_client), or None."""
    if not settings.metrics_port:
        return None
    try:
        server, _ = start_http_server(settings.metrics_port, addr=settings.metrics_host)
    except OSError as exc:  # several workers: the first one serves the port
        log.warning("metrics port not served by this process", port=settings.metrics_port,
                    error=repr(exc))
        return None
    return server


def _document_openapi(app: FastAPI, api_routes: list[APIRoute], *,
                      required_idempotency: set[tuple[str, str]],
                      optional_key: set[tuple[str, str]]) -> None:
    """What the route declarations leave out of the OpenAPI document:

    - the API-key security schemes (``api.KEY_SCHEMES``) on every route that depends on
      ``require_key``, and as optional (an extra empty requirement) on ``optional_key``
      operations, where anonymous calls are allowed; declared here rather than as ``Security``
      parameters, which FastAPI would run on every request;
    - Idempotency-Key as required where the route requires it (the route itself checks
      presence, so a missing key is the documented 400, not a generic 422)."""
    original = app.openapi
    schemes = {scheme.scheme_name: jsonable_encoder(scheme.model, by_alias=True, exclude_none=True)
               for scheme in KEY_SCHEMES}
    key_required: list[dict[str, list[str]]] = [{name: []} for name in schemes]
    secured: dict[tuple[str, str], list[dict[str, list[str]]]] = {}
    for route in api_routes:
        if _depends_on(route.dependant, require_key):
            secured.update({(route.path, m.lower()): key_required for m in route.methods or ()})
    secured.update({op: [*key_required, {}] for op in optional_key})

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            paths = schema["paths"]
            for (path, method), security in secured.items():
                paths[path][method] = _with_security(paths[path][method], security)
            schema.setdefault("components", {})["securitySchemes"] = schemes
            for path, method in required_idempotency:
                for param in paths[path][method].get("parameters", []):
                    if param["name"] == "Idempotency-Key" and param["in"] == "header":
                        param["required"] = True
                        param["schema"] = {"type": "string", "title": "Idempotency-Key",
                                           "pattern": IDEMPOTENCY_KEY_PATTERN}
            app.openapi_schema = schema
        return app.openapi_schema

    # FastAPI's documented way to change the generated document: replace app.openapi.
    app.openapi = openapi  # type: ignore[method-assign]


def _depends_on(dependant: Dependant, call: Any) -> bool:
    return any(dep.call is call or _depends_on(dep, call) for dep in dependant.dependencies)


def _with_security(operation: dict[str, Any],
                   security: list[dict[str, list[str]]]) -> dict[str, Any]:
    """``operation`` with ``security`` where FastAPI itself puts it: after the metadata
    (tags, summary, description, operationId, deprecated), before the parameters."""
    metadata = ("tags", "summary", "description", "operationId", "deprecated")
    head = {k: v for k, v in operation.items() if k in metadata}
    rest = {k: v for k, v in operation.items() if k not in metadata}
    return {**head, "security": copy.deepcopy(security), **rest}


async def _purge_idempotency(gw: Gateway, every_s: float = 600.0) -> None:
    """Delete expired idempotency records now and then (expired ones are ignored anyway)."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await gw.uow.idempotency.purge_expired()
        except Exception as exc:  # noqa: BLE001 - housekeeping must never stop the gateway
            log.warning("idempotency purge failed", error=repr(exc))
