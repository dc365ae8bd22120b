"""The gateway's HTTP API: the one public edge of Attesta.

- ``/v1/chat``: request/reply over Kafka (open to the SPA, per-client rate limit; an API key is
  optional, or required with ``ATTESTA_CHAT_REQUIRE_KEY=true``).
- ``/v1/public/*``: the evidence service's public routes, no account, per-client rate limit.
- everything else under ``/v1``: an API key (``Authorization: Bearer <key>`` or
  ``X-API-Key: <key>``), per-key rate limit, forwarded to the classifier or the evidence
  service with the key's workspace.
- ``/healthz``, ``/readyz``, ``/metrics`` (Prometheus) and ``/openapi.json``: open.

Every route is declared with its request and response models so the OpenAPI document is the
whole contract; forwarded answers pass through byte for byte (see service_layer/forwarding).
"""

# No `from __future__ import annotations`: FastAPI resolves the local Annotated aliases.

import asyncio
import re
import uuid
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request, Security
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from attesta_contracts.api import classifier as cls
from attesta_contracts.api import evidence as ev
from attesta_contracts.chat import QUESTION_MAX_CHARS, ChatAnswered, ChatRequested
from attesta_contracts.classification import CitationClass
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, DEAD_LETTERED
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_gateway.domain.idempotency import (
    InvalidIdempotencyKey,
    fingerprint,
    parse_idempotency_key,
)
from attesta_gateway.domain.keys import Principal
from attesta_gateway.service_layer.auth import credentials_from, unauthorized
from attesta_gateway.service_layer.forwarding import REPLAYED_HEADER, forward, forward_idempotently
from attesta_platform.http import (ApiError, BodyLimit, ErrorResponse, add_metrics_route,
                                   error_response, install_error_handlers)
from attesta_platform.logs import get_logger

log = get_logger("attesta.gateway")
API_VERSION = "1.0.0"
SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
BRAND_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
OPAQUE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
# A bare token, or a Structured Fields string (quoted, with \" and \\ escapes).
IDEMPOTENCY_KEY_PATTERN = r'^(?:[!#-~]{1,255}|"(?:[ !#-\[\]-~]|\\["\\]){1,255}")$'

CHAT_OUTCOMES = Counter("attesta_gateway_chat_total", "Chat requests by outcome", ["outcome"])


# -- documented errors ------------------------------------------------------------------------
_ERROR_TEXT = {
    400: "Bad request (e.g. malformed Idempotency-Key or hash): see error.code / error.reason",
    401: "Missing, malformed, unknown or revoked API key",
    404: "Not found (or not in the caller's workspace)",
    409: "Conflict (e.g. a request with this Idempotency-Key is still in flight)",
    413: "Request body too large",
    422: "The request does not validate (or an Idempotency-Key was reused with another payload)",
    429: "Rate limit exceeded: retry after Retry-After seconds",
    502: "The service behind the gateway answered something unusable",
    503: "A service behind the gateway (or the rate limiter / key store) is unavailable",
    504: "A service behind the gateway did not answer in time",
}
_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before retrying",
                                "schema": {"type": "integer", "minimum": 1}}}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        entry: dict[str, Any] = {"model": ErrorResponse, "description": _ERROR_TEXT[code]}
        if code in (429, 503):
            entry["headers"] = _RETRY_AFTER
        out[code] = entry
    return out


PUBLIC_ERRORS = (400, 422, 429, 502, 503, 504)
AUTH_ERRORS = (401, 422, 429, 502, 503, 504)


# -- gateway-owned models ---------------------------------------------------------------------
class ChatBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)
    top_k: int = Field(default=5, ge=1, le=20)


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    instance: str


class SpaFiles(StaticFiles):
    """The SPA's files; a GET for a path that is no file and not an API path gets index.html
    (client-side routing). API paths keep their JSON 404."""

    async def get_response(self, path: str, scope: Any) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as exc:
            api = path == "v1" or path.startswith("v1/") or path in ("healthz", "readyz",
                                                                       "metrics")
            if exc.status_code != 404 or api or scope["method"] not in ("GET", "HEAD"):
                raise
            return await super().get_response("index.html", scope)


# -- the app ----------------------------------------------------------------------------------
def create_app(gw: Any) -> FastAPI:
    """``gw`` is an ``attesta_gateway.bootstrap.Gateway``."""
    settings = gw.settings
    replies = ReplyRouter()
    state = {"ready": False}
    instance_id = settings.instance_id

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        messaging = gw.messaging
        try:
            await messaging.ensure_topics([CHAT_REQUESTED, CHAT_ANSWERED, DEAD_LETTERED],
                                          settings.kafka_partitions)
            # Own group per instance, from latest: every instance sees every reply (replies.py).
            sub = messaging.consume(CHAT_ANSWERED, group_id=f"gateway-{instance_id}",
                                    handler=replies.on_reply, auto_offset_reset="latest")
            await messaging.start()
            await messaging.wait_assigned(sub)
        except Exception as exc:
            log.error("cannot start the chat reply consumer: Kafka unreachable?",
                      bootstrap=settings.kafka_bootstrap_servers, error=repr(exc))
            await gw.close()
            raise
        purge = asyncio.create_task(_purge_idempotency(gw))
        state["ready"] = True
        log.info("gateway ready", instance=instance_id, env=settings.env)
        try:
            yield
        finally:
            state["ready"] = False
            purge.cancel()
            await messaging.stop()
            await gw.close()

    app = FastAPI(
        title="Attesta API", version=API_VERSION, lifespan=lifespan,
        description=(
            "The public HTTP edge of Attesta. Authenticate with an API key, either "
            "`Authorization: Bearer <key>` or `X-API-Key: <key>` (keys are created with "
            "`attesta gateway keys create`). `/v1/public/*`, `/v1/chat` (unless the deployment "
            "requires a key for it) and the health routes need no key. Every error answers "
            "`{\"error\": {\"code\", \"reason\"}}`. Creating POSTs accept an `Idempotency-Key` "
            "header (IETF httpapi draft); it is required on `POST /v1/runs`."),
    )
    install_error_handlers(app)

    @app.exception_handler(405)
    async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        # Each (path, method) is its own route, so the router's Allow names only the first
        # route that matched the path; list every method the path really has.
        allowed = sorted({m for r in app.routes if isinstance(r, APIRoute)
                          for m in (r.methods or ()) if r.path_regex.match(request.url.path)})
        if not allowed and settings.static_dir:
            allowed = ["GET", "HEAD"]  # the SPA's files
        return error_response(405, "method_not_allowed",
                              f"{request.method} is not allowed here; allowed: "
                              f"{', '.join(allowed)}", {"Allow": ", ".join(allowed)})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", path=request.url.path, error=repr(exc))
        return error_response(500, "internal_error", "unexpected error in the gateway")

    # -- dependencies ---------------------------------------------------------------------------
    bearer = HTTPBearer(auto_error=False, scheme_name="bearerKey",
                        description="Authorization: Bearer <API key>")
    api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKeyHeader",
                                  description="X-API-Key: <API key>")

    def client_of(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    async def _principal(request: Request) -> Principal | None:
        """The caller's principal, or None when no key was sent. (The ``Security`` parameters
        of the routes only document the two schemes in OpenAPI.)"""
        # Read the raw headers: the security helpers report an empty header as "no header",
        # and a present-but-empty key must be a 401, not an anonymous call.
        x_api_key = request.headers.get("x-api-key")
        authorization = request.headers.get("authorization")
        if x_api_key is None and authorization is None:
            return None
        client = client_of(request)
        try:
            presented = credentials_from(authorization if x_api_key is None else None, x_api_key)
            if presented and not gw.authenticator.cached(presented):
                await gw.limits.refuse_if_failing_auth(client)
            return await gw.authenticator.authenticate(presented or "")
        except ApiError as exc:
            if exc.status == 401:
                await gw.limits.count_auth_failure(client)
            raise

    async def require_key(
        request: Request,
        creds: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)] = None,
        x_api_key: Annotated[str | None, Security(api_key_header)] = None,
    ) -> Principal:
        principal = await _principal(request)
        if principal is None:
            raise unauthorized("an API key is required: send 'Authorization: Bearer <key>' or "
                               "'X-API-Key: <key>'")
        await gw.limits.for_key(principal.key_id)
        return principal

    async def public_limit(request: Request) -> None:
        await gw.limits.for_public(client_of(request))

    Authed = Annotated[Principal, Depends(require_key)]

    def idempotency_key(required: bool):
        desc = ("Idempotency-Key (IETF httpapi draft): a unique string per logical request, "
                "e.g. a UUID. A retry with the same key and payload replays the stored answer "
                f"(header {REPLAYED_HEADER}: true); same key + other payload: 422; while the "
                "first is in flight: 409. Kept 24 h, per workspace."
                + (" Required." if required else " Optional."))

        async def dep(idem: Annotated[str | None, Header(
                alias="Idempotency-Key", description=desc,
                json_schema_extra={"pattern": IDEMPOTENCY_KEY_PATTERN})] = None) -> str | None:
            if idem is None:
                if required:
                    raise ApiError(400, "idempotency_key_required",
                                   "this request needs an Idempotency-Key header "
                                   '(e.g. Idempotency-Key: "<a new UUID>")')
                return None
            try:
                return parse_idempotency_key(idem)
            except InvalidIdempotencyKey as exc:
                raise ApiError(400, "invalid_idempotency_key", str(exc)) from exc

        return Depends(dep)

    async def creating_post(request: Request, principal: Principal, key: str | None,
                            upstream_path: str, body: bytes | None = None) -> Response:
        raw = await request.body() if body is None else body
        return await forward_idempotently(
            gw.idempotency, gw.classifier, key=key,
            fingerprint=fingerprint("POST", request.url.path, request.url.query, raw),
            method="POST", path=upstream_path, workspace=principal.workspace_id,
            actor=principal.key_id, body=raw or None)

    # -- health, metrics ------------------------------------------------------------------------
    ops = APIRouter(tags=["operations"])

    @ops.get("/healthz", response_model=Health)
    async def healthz() -> dict:
        return {"status": "ok"}

    @ops.get("/readyz", response_model=Readiness, responses=errors(503))
    async def readyz() -> Any:
        if not state["ready"]:
            return error_response(503, "not_ready", "Kafka reply consumer not assigned yet",
                                  {"Retry-After": "1"})
        return {"status": "ready", "instance": instance_id}

    add_metrics_route(ops)

    # -- chat -----------------------------------------------------------------------------------
    chat = APIRouter(tags=["chat"])

    @chat.post("/v1/chat", response_model=ChatAnswered,
               responses=errors(401, 413, 422, 429, 503, 504),
               summary="Ask the grounded assistant (request/reply over Kafka)",
               description="Open to the frontend with a per-client rate limit; an API key, "
                           "when sent, is checked and its workspace used (required when the "
                           "deployment sets ATTESTA_CHAT_REQUIRE_KEY=true). 504 when no answer "
                           "arrives within the chat timeout.")
    async def chat_route(
        body: ChatBody, request: Request,
        creds: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)] = None,
        x_api_key: Annotated[str | None, Security(api_key_header)] = None,
    ) -> Any:
        principal = await _principal(request)
        if principal is None and settings.chat_require_key:
            raise unauthorized("this deployment requires an API key for chat")
        if principal is not None:
            await gw.limits.for_key(principal.key_id)
        else:
            await gw.limits.for_chat(client_of(request))
        request_id = str(uuid.uuid4())
        fut = replies.expect(request_id)
        try:
            await gw.messaging.publish(
                CHAT_REQUESTED,
                ChatRequested(request_id=request_id, question=body.question, top_k=body.top_k,
                              reply_to=instance_id,
                              workspace_id=principal.workspace_id if principal else None),
                key=request_id, correlation_id=request_id)
            reply = await asyncio.wait_for(fut, timeout=settings.chat_timeout_s)
        except TimeoutError:
            CHAT_OUTCOMES.labels("timeout").inc()
            return error_response(504, "answer_timeout",
                                  f"no answer within {settings.chat_timeout_s:g} s "
                                  f"(request {request_id})")
        except Exception as exc:  # noqa: BLE001 - Kafka refused the request: say so, no hang
            CHAT_OUTCOMES.labels("unavailable").inc()
            return error_response(503, "chat_unavailable",
                                  f"could not queue the question: {type(exc).__name__}",
                                  {"Retry-After": "1"})
        finally:
            replies.forget(request_id)
        CHAT_OUTCOMES.labels("answered").inc()
        return JSONResponse(reply.model_dump(mode="json"))

    # -- public evidence ------------------------------------------------------------------------
    public = APIRouter(tags=["public evidence"], dependencies=[Depends(public_limit)])
    # The pattern is documented, not enforced by FastAPI: a bad hash is the evidence API's own
    # 400 invalid_sha256, not a generic 422.
    Sha = Annotated[str, Path(description="SHA-256 of the evidence: 64 hex digits "
                                          "(upper case accepted)",
                              json_schema_extra={"pattern": SHA256_RE.pattern})]

    def sha_path(sha256: str) -> str:
        if not SHA256_RE.match(sha256):
            raise ApiError(400, "invalid_sha256", "a SHA-256 is 64 hexadecimal digits")
        return sha256.lower()

    @public.get("/v1/public/evidence/{sha256}", response_model=ev.EvidenceView,
                responses=errors(404, *PUBLIC_ERRORS),
                summary="Does this evidence exist? Its metadata and inclusion proof")
    async def evidence_get(sha256: Sha) -> Response:
        return await forward(gw.evidence, "GET", f"/v1/public/evidence/{sha_path(sha256)}",
                             workspace=None)

    @public.post("/v1/public/evidence/{sha256}/check", response_model=ev.EvidenceCheckResult,
                 responses=errors(404, 413, *PUBLIC_ERRORS),
                 summary="Byte-for-byte check of content against stored evidence")
    async def evidence_check(sha256: Sha, body: ev.EvidenceCheckRequest,
                             request: Request) -> Response:
        return await forward(gw.evidence, "POST",
                             f"/v1/public/evidence/{sha_path(sha256)}/check",
                             workspace=None, body=await request.body())

    @public.get("/v1/public/log/tree-head", response_model=ev.SignedTreeHead,
                responses=errors(*PUBLIC_ERRORS), summary="Latest signed tree head of the log")
    async def log_tree_head() -> Response:
        return await forward(gw.evidence, "GET", "/v1/public/log/tree-head", workspace=None)

    @public.get("/v1/public/log/consistency", response_model=ev.ConsistencyProof,
                responses=errors(*PUBLIC_ERRORS),
                summary="RFC 9162 consistency proof between two tree sizes")
    async def log_consistency(first: Annotated[int, Query(ge=1)],
                              second: Annotated[int, Query(ge=1)]) -> Response:
        return await forward(gw.evidence, "GET", "/v1/public/log/consistency", workspace=None,
                             params={"first": first, "second": second})

    @public.get("/v1/public/log/inclusion", response_model=ev.InclusionProof,
                responses=errors(*PUBLIC_ERRORS),
                summary="RFC 9162 inclusion proof of a leaf in an older tree")
    async def log_inclusion(leaf_index: Annotated[int, Query(ge=0)],
                            tree_size: Annotated[int, Query(ge=1)]) -> Response:
        return await forward(gw.evidence, "GET", "/v1/public/log/inclusion", workspace=None,
                             params={"leaf_index": leaf_index, "tree_size": tree_size})

    @public.get("/v1/public/log/leaves", response_model=ev.LogLeaves,
                responses=errors(*PUBLIC_ERRORS), summary="Log entries [start, end) for audit")
    async def log_leaves(start: Annotated[int, Query(ge=0)],
                         end: Annotated[int, Query(ge=0)]) -> Response:
        return await forward(gw.evidence, "GET", "/v1/public/log/leaves", workspace=None,
                             params={"start": start, "end": end})

    @public.get("/v1/public/log/public-key", response_model=ev.LogPublicKey,
                responses=errors(*PUBLIC_ERRORS), summary="The log's Ed25519 public key")
    async def log_public_key() -> Response:
        return await forward(gw.evidence, "GET", "/v1/public/log/public-key", workspace=None)

    # -- authenticated: evidence of my workspace --------------------------------------------------
    private = APIRouter()

    @private.get("/v1/evidence/{sha256}", response_model=ev.EvidenceInternalView,
                 responses=errors(400, 404, *AUTH_ERRORS), tags=["evidence"],
                 summary="Evidence with the references your workspace holds")
    async def evidence_internal(sha256: Sha, principal: Authed) -> Response:
        return await forward(gw.evidence, "GET", f"/v1/evidence/{sha_path(sha256)}",
                             workspace=principal.workspace_id, actor=principal.key_id)

    # -- authenticated: brands and ground truth ---------------------------------------------------
    BrandIdP = Annotated[str, Path(pattern=BRAND_ID_PATTERN, description="brand id (slug)")]

    @private.post("/v1/brands", response_model=cls.Brand, status_code=201,
                  responses=errors(400, 409, 413, 404, *AUTH_ERRORS), tags=["brands"],
                  summary="Track a brand")
    async def brand_create(body: cls.BrandCreate, request: Request, principal: Authed,
                           idem: Annotated[str | None, idempotency_key(False)]) -> Response:
        return await creating_post(request, principal, idem, "/v1/brands")

    @private.get("/v1/brands", response_model=cls.BrandList, responses=errors(*AUTH_ERRORS),
                 tags=["brands"], summary="Brands of your workspace")
    async def brand_list(principal: Authed) -> Response:
        return await forward(gw.classifier, "GET", "/v1/brands",
                             workspace=principal.workspace_id, actor=principal.key_id)

    @private.get("/v1/brands/{brand_id}", response_model=cls.Brand,
                 responses=errors(404, *AUTH_ERRORS), tags=["brands"])
    async def brand_get(brand_id: BrandIdP, principal: Authed) -> Response:
        return await forward(gw.classifier, "GET", f"/v1/brands/{brand_id}",
                             workspace=principal.workspace_id, actor=principal.key_id)

    @private.patch("/v1/brands/{brand_id}", response_model=cls.Brand,
                   responses=errors(404, 409, 413, *AUTH_ERRORS), tags=["brands"],
                   summary="Change a brand (only the fields present)")
    async def brand_update(brand_id: BrandIdP, body: cls.BrandUpdate, request: Request,
                           principal: Authed) -> Response:
        return await forward(gw.classifier, "PATCH", f"/v1/brands/{brand_id}",
                             workspace=principal.workspace_id, actor=principal.key_id,
                             body=await request.body())

    @private.post("/v1/brands/{brand_id}/ground-truth/refresh", response_model=cls.RefreshResult,
                  responses=errors(400, 404, 409, *AUTH_ERRORS), tags=["ground truth"],
                  summary="Fetch the brand's sources and refresh its ground truth")
    async def ground_truth_refresh(brand_id: BrandIdP, request: Request, principal: Authed,
                                   idem: Annotated[str | None, idempotency_key(False)]
                                   ) -> Response:
        return await creating_post(request, principal, idem,
                                   f"/v1/brands/{brand_id}/ground-truth/refresh", body=b"")

    @private.get("/v1/brands/{brand_id}/ground-truth", response_model=cls.GroundTruth,
                 responses=errors(404, *AUTH_ERRORS), tags=["ground truth"],
                 summary="The brand's active ground-truth facts and their hash")
    async def ground_truth_get(brand_id: BrandIdP, principal: Authed) -> Response:
        return await forward(gw.classifier, "GET", f"/v1/brands/{brand_id}/ground-truth",
                             workspace=principal.workspace_id, actor=principal.key_id)

    @private.post("/v1/brands/{brand_id}/ground-truth/facts",
                  response_model=cls.GroundTruthFactView, status_code=201,
                  responses={200: {"model": cls.GroundTruthFactView,
                                   "description": "the same fact is already active"},
                             **errors(400, 404, 409, 413, *AUTH_ERRORS)},
                  tags=["ground truth"], summary="Add a manual ground-truth fact")
    async def ground_truth_fact_add(brand_id: BrandIdP, body: cls.ManualFactCreate,
                                    request: Request, principal: Authed,
                                    idem: Annotated[str | None, idempotency_key(False)]
                                    ) -> Response:
        return await creating_post(request, principal, idem,
                                   f"/v1/brands/{brand_id}/ground-truth/facts")

    @private.post("/v1/brands/{brand_id}/reverify", response_model=cls.ReverifyResult,
                  responses=errors(400, 404, 409, *AUTH_ERRORS), tags=["ground truth"],
                  summary="Reclassify the brand's runs against its current ground truth")
    async def brand_reverify(brand_id: BrandIdP, request: Request, principal: Authed,
                             idem: Annotated[str | None, idempotency_key(False)]) -> Response:
        return await creating_post(request, principal, idem, f"/v1/brands/{brand_id}/reverify",
                                   body=b"")

    # -- authenticated: runs and their classification history --------------------------------------
    RunIdP = Annotated[str, Path(pattern=OPAQUE_ID_PATTERN, description="run id")]

    @private.post("/v1/runs", response_model=cls.RunAccepted, status_code=202,
                  responses=errors(400, 404, 409, 413, *AUTH_ERRORS), tags=["runs"],
                  summary="Submit a run (prompt + AI answer) for classification")
    async def run_create(body: cls.RunCreate, request: Request, principal: Authed,
                         idem: Annotated[str | None, idempotency_key(True)]) -> Response:
        return await creating_post(request, principal, idem, "/v1/runs")

    @private.get("/v1/runs", response_model=cls.RunList, responses=errors(400, *AUTH_ERRORS),
                 tags=["runs"], summary="Runs of your workspace, newest first")
    async def run_list(
        principal: Authed,
        engine: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
        brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
        status: Annotated[cls.RunStatus | None, Query()] = None,
        citation_class: Annotated[CitationClass | None, Query()] = None,
        source: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
        from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
        to: Annotated[cls.IsoTime | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
    ) -> Response:
        return await forward(gw.classifier, "GET", "/v1/runs", workspace=principal.workspace_id,
                             actor=principal.key_id,
                             params={"engine": engine, "brand_id": brand_id,
                                     "status": status.value if status else None,
                                     "citation_class": citation_class.value
                                     if citation_class else None,
                                     "source": source, "from": from_, "to": to, "limit": limit,
                                     "cursor": cursor})

    @private.get("/v1/runs/{run_id}", response_model=cls.RunView,
                 responses=errors(404, *AUTH_ERRORS), tags=["runs"])
    async def run_get(run_id: RunIdP, principal: Authed) -> Response:
        return await forward(gw.classifier, "GET", f"/v1/runs/{run_id}",
                             workspace=principal.workspace_id, actor=principal.key_id)

    @private.get("/v1/runs/{run_id}/classifications", response_model=cls.ClassificationHistory,
                 responses=errors(404, *AUTH_ERRORS), tags=["runs"],
                 summary="Append-only classification history of a run (as of a time)")
    async def run_history(run_id: RunIdP, principal: Authed,
                          as_of: Annotated[cls.IsoTime | None, Query()] = None) -> Response:
        return await forward(gw.classifier, "GET", f"/v1/runs/{run_id}/classifications",
                             workspace=principal.workspace_id, actor=principal.key_id,
                             params={"as_of": as_of})

    @private.post("/v1/runs/{run_id}/reclassify", response_model=cls.ReclassifyResult,
                  responses=errors(400, 404, 409, 413, *AUTH_ERRORS), tags=["runs"],
                  summary="Manual reclassification (appends history; audited with your key id)")
    async def run_reclassify(run_id: RunIdP, body: cls.ReclassifyRequest, request: Request,
                             principal: Authed,
                             idem: Annotated[str | None, idempotency_key(False)]) -> Response:
        return await creating_post(request, principal, idem, f"/v1/runs/{run_id}/reclassify")

    # -- authenticated: metrics --------------------------------------------------------------------
    @private.get("/v1/metrics", response_model=cls.MetricsResponse, response_model_by_alias=True,
                 responses=errors(400, *AUTH_ERRORS), tags=["metrics"],
                 summary="Citation rate, share of voice, confabulation rate, score")
    async def metrics_get(
        principal: Authed,
        period: Annotated[cls.Period, Query()] = cls.Period.WEEK,
        from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
        to: Annotated[cls.IsoTime | None, Query()] = None,
        brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
        engine: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    ) -> Response:
        return await forward(gw.classifier, "GET", "/v1/metrics",
                             workspace=principal.workspace_id, actor=principal.key_id,
                             params={"period": period.value, "from": from_, "to": to,
                                     "brand_id": brand_id, "engine": engine})

    for router in (ops, chat, public, private):
        app.include_router(router)
    _document_required_idempotency(app, {("/v1/runs", "post")}, optional_auth={("/v1/chat", "post")})
    if settings.static_dir:
        app.mount("/", SpaFiles(directory=settings.static_dir, html=True), name="spa")
    origins = settings.cors_origin_list()
    if origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "PATCH"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Idempotency-Key"],
            expose_headers=["Retry-After", REPLAYED_HEADER], max_age=600)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app


def _document_required_idempotency(app: FastAPI, operations: set[tuple[str, str]],
                                   optional_auth: set[tuple[str, str]]) -> None:
    """Mark Idempotency-Key as required in OpenAPI where the route requires it (the route itself
    checks presence, so a missing key is the documented 400, not a generic 422), and mark the
    API key as optional (an empty security requirement) where anonymous calls are allowed."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            for path, method in operations:
                for param in schema["paths"][path][method].get("parameters", []):
                    if param["name"] == "Idempotency-Key" and param["in"] == "header":
                        param["required"] = True
                        param["schema"] = {"type": "string", "title": "Idempotency-Key",
                                           "pattern": IDEMPOTENCY_KEY_PATTERN}
            for path, method in optional_auth:
                schema["paths"][path][method]["security"].append({})
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


async def _purge_idempotency(gw: Any, every_s: float = 600.0) -> None:
    """Delete expired idempotency records now and then (expired ones are ignored anyway)."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await gw.idempotency.purge_expired()
        except Exception as exc:  # noqa: BLE001 - housekeeping must never stop the gateway
            log.warning("idempotency purge failed", error=repr(exc))
