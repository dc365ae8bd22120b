"""The classifier's internal HTTP API (FastAPI on :8081, called by the gateway).

Every ``/v1`` route needs the internal token and a workspace (``deps.workspace``); a brand or
run of another workspace answers 404, never its data. A route is an adapter: contract model in,
a command or query to the bus, the contract's view out; the domain's errors become statuses in
one table (``HTTP_ERRORS``), in the shared error shape. ``/healthz``, ``/readyz`` and
``/metrics`` (Prometheus, ``adapters/telemetry.py``) are open and not in the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse

from attesta_classifier.domain import commands as c
from attesta_classifier.entrypoints import schemas, views
from attesta_classifier.entrypoints.deps import (
    Actor, Bus, IdempotencyKey, ReviewerOf, Ws, needs_actor)
from attesta_classifier.entrypoints.alerts_http import router as alerts_router
from attesta_classifier.entrypoints.exports import router as exports_router
from attesta_classifier.entrypoints.params import MetricsFilters, RunFilters, check_times
from attesta_classifier.service_layer.errors import (
    Conflict, IdempotencyKeyReused, Invalid, NotFound, RefreshInProgress, RefreshTimedOut,
    ServiceError, SourcesRefused, Unstorable, UpstreamFailed)
from attesta_contracts.api import classifier as api
from attesta_platform.bus import MessageBus
from attesta_platform.http import ACTOR_HEADER, ErrorResponse, error_response, install_error_handlers
from attesta_platform.logs import get_logger
from attesta_platform.service import add_health_routes

log = get_logger("attesta.classifier.http")

# The domain's errors at the HTTP edge: (status, the shared shape's code); the most specific
# class of an error that is listed wins.
HTTP_ERRORS: dict[type[ServiceError], tuple[int, str]] = {
    ServiceError: (400, "bad_request"), NotFound: (404, "not_found"),
    Conflict: (409, "conflict"), RefreshInProgress: (409, "refresh_in_progress"),
    Invalid: (422, "invalid_request"), IdempotencyKeyReused: (422, "idempotency_key_reused"),
    SourcesRefused: (422, "sources_refused"), UpstreamFailed: (502, "sources_unreachable"),
    RefreshTimedOut: (504, "refresh_deadline")}
# "Busy, try again": the gateway does not store such an answer as an Idempotency-Key's.
RETRY_AFTER: dict[type[ServiceError], str] = {RefreshInProgress: "2"}

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text} for code, text in (
        (400, "missing workspace or actor"), (401, "missing or wrong internal token"),
        (404, "not found in this workspace"), (422, "invalid request"))}


def _error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    kind = next(k for k in type(exc).__mro__ if k in HTTP_ERRORS)
    status, code = HTTP_ERRORS[kind]
    if isinstance(exc, Unstorable):  # the database's own message names internals: log only
        log.info("unstorable value refused", path=request.url.path, error=repr(exc.__cause__))
    retry = RETRY_AFTER.get(kind)
    return error_response(status, code, exc.reason, {"Retry-After": retry} if retry else None)


def create_app(bus: MessageBus, *, internal_token: str, database: Any = None,
               ready: Callable[[], str | None] | None = None) -> FastAPI:
    """``database``: the pool /readyz probes; ``ready``: None when the rest of the process is."""
    app = FastAPI(title="Attesta classifier (internal)", version="1.0.0", responses=ERRORS)
    app.state.bus, app.state.internal_token = bus, internal_token
    install_error_handlers(app)
    app.add_exception_handler(ServiceError, _error)
    add_health_routes(app, "classifier", ready, database=database)
    app.include_router(router)
    app.include_router(exports_router)
    app.include_router(alerts_router)
    return app


router = APIRouter()


# -- brands ------------------------------------------------------------------------------------
@router.post("/v1/brands", status_code=201, response_model=api.Brand,
             responses={409: {"model": ErrorResponse, "description": "brand id taken"}})
async def create_brand(body: api.BrandCreate, ws: Ws, bus: Bus) -> api.Brand:
    return views.brand(await bus.handle(c.CreateBrand(
        ws, body.name, body.brand_id, tuple(body.aliases), tuple(body.domains),
        tuple(body.competitors), tuple(body.sources))))


@router.get("/v1/brands", response_model=api.BrandList)
async def list_brands(ws: Ws, bus: Bus) -> api.BrandList:
    return api.BrandList(items=[views.brand(b) for b in await bus.handle(c.ListBrands(ws))])


@router.get("/v1/brands/{brand_id}", response_model=api.Brand)
async def get_brand(brand_id: str, ws: Ws, bus: Bus) -> api.Brand:
    return views.brand(await bus.handle(c.GetBrand(ws, brand_id)))


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@router.patch("/v1/brands/{brand_id}", response_model=api.Brand)
async def update_brand(brand_id: str, body: api.BrandUpdate, ws: Ws, bus: Bus) -> api.Brand:
    return views.brand(await bus.handle(c.UpdateBrand(
        ws, brand_id, body.name, _tuple(body.aliases), _tuple(body.domains),
        _tuple(body.competitors), _tuple(body.sources))))


# -- ground truth ------------------------------------------------------------------------------
@router.post("/v1/brands/{brand_id}/ground-truth/refresh", response_model=api.RefreshResult,
             responses={409: {"model": ErrorResponse,
                              "description": "brand has no sources, or a refresh of it is "
                                             "running (Retry-After)"},
                        422: {"model": ErrorResponse,
                              "description": "every source was refused (SSRF guard)"},
                        502: {"model": ErrorResponse, "description": "no source could be fetched"},
                        504: {"model": ErrorResponse,
                              "description": "the refresh deadline ran out"}})
async def refresh(brand_id: str, ws: Ws, bus: Bus) -> api.RefreshResult:
    return views.refresh_result(await bus.handle(c.RefreshGroundTruth(ws, brand_id)))


@router.get("/v1/brands/{brand_id}/ground-truth", response_model=api.GroundTruth)
async def ground_truth(brand_id: str, ws: Ws, bus: Bus,
                       include_superseded: bool = False) -> api.GroundTruth:
    return views.ground_truth(brand_id, await bus.handle(
        c.GetGroundTruth(ws, brand_id, include_superseded)))


@router.post("/v1/brands/{brand_id}/ground-truth/facts", status_code=201,
             response_model=api.GroundTruthFactView,
             responses={200: {"model": api.GroundTruthFactView, "description": "already active"}})
async def add_fact(brand_id: str, body: api.ManualFactCreate, ws: Ws, bus: Bus,
                   response: Response) -> api.GroundTruthFactView:
    created, row = await bus.handle(c.AddManualFact(ws, brand_id, body.type, body.text,
                                                    body.source_url, body.attribution))
    if not created:
        response.status_code = 200
    return views.fact(row)


@router.post("/v1/brands/{brand_id}/reverify", response_model=api.ReverifyResult)
async def reverify(brand_id: str, ws: Ws, bus: Bus, actor: Actor) -> api.ReverifyResult:
    counts = await bus.handle(c.Reverify(ws, brand_id, actor,
                                         "reverification after a ground-truth change"))
    return api.ReverifyResult(brand_id=brand_id, **counts)


# -- runs --------------------------------------------------------------------------------------
@router.post("/v1/runs", status_code=202, response_model=api.RunAccepted)
async def create_run(body: api.RunCreate, ws: Ws, bus: Bus,
                     key: IdempotencyKey) -> api.RunAccepted:
    run_id, sha = await bus.handle(c.SubmitRun(
        ws, body.engine, body.model, body.prompt, body.answer, tuple(body.brand_ids),
        body.requested_at, body.answered_at, key))
    return api.RunAccepted(run_id=run_id, answer_sha256=sha)


@router.get("/v1/runs", response_model=api.RunList)
async def list_runs(ws: Ws, bus: Bus, filters: RunFilters,
                    limit: Annotated[int, Query(ge=1, le=200)] = 50,
                    cursor: str | None = None) -> api.RunList:
    items, nxt = await bus.handle(c.ListRuns(ws, filters, limit, cursor))
    return api.RunList(items=[views.run_summary(i) for i in items], next_cursor=nxt)


@router.get("/v1/runs/{run_id}", response_model=schemas.RunDetail)
async def get_run(run_id: str, ws: Ws, bus: Bus) -> schemas.RunDetail:
    return views.run_view(await bus.handle(c.GetRun(ws, run_id)))


@router.get("/v1/runs/{run_id}/classifications", response_model=api.ClassificationHistory)
async def classifications(run_id: str, ws: Ws, bus: Bus,
                          as_of: api.IsoTime | None = None) -> api.ClassificationHistory:
    check_times(("as_of", as_of))
    rows, latest = await bus.handle(c.GetHistory(ws, run_id, as_of))
    return api.ClassificationHistory(run_id=run_id, as_of=as_of,
                                     items=[views.classification(r) for r in rows],
                                     as_of_classes=[views.classification(r) for r in latest])


@router.post("/v1/runs/{run_id}/reclassify", response_model=api.ReclassifyResult)
async def reclassify(run_id: str, body: api.ReclassifyRequest, ws: Ws, bus: Bus,
                     actor: Actor) -> api.ReclassifyResult:
    who = needs_actor(actor, f"manual reclassification needs {ACTOR_HEADER}")
    states = await bus.handle(c.Reclassify(ws, run_id, body.reason, who,
                                           _tuple(body.brand_ids)))
    return api.ReclassifyResult(run_id=run_id, brands=[views.state(s) for s in states])


# -- metrics -----------------------------------------------------------------------------------
@router.get("/v1/metrics", response_model=schemas.MetricsResponse, response_model_by_alias=True)
async def metrics(query: MetricsFilters, bus: Bus) -> schemas.MetricsResponse:
    return views.metrics(query, await bus.handle(query))


# -- review queue ------------------------------------------------------------------------------
@router.get("/v1/review/queue", response_model=api.ReviewQueue)
async def review_queue(
    ws: Ws, bus: Bus,
    brand_id: str | None = None,
    kind: api.ReviewKind | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
) -> api.ReviewQueue:
    return views.review_queue(await bus.handle(c.ListReviewQueue(
        ws, brand_id, kind and kind.value, limit, cursor)))


@router.get("/v1/review/queue/{run_id}/{brand_id}", response_model=api.ReviewItem)
async def review_item(run_id: str, brand_id: str, ws: Ws, bus: Bus) -> api.ReviewItem:
    return views.review_item(await bus.handle(c.GetReviewItem(ws, run_id, brand_id)))


@router.post("/v1/review/queue/{run_id}/{brand_id}/decision", status_code=201,
             response_model=api.ReviewDecisionResult,
             responses={409: {"model": ErrorResponse,
                              "description": "no longer in the queue, or the facts or the "
                                             "judge's label changed since the item was read"}})
async def review_decide(run_id: str, brand_id: str, body: api.ReviewDecisionCreate, ws: Ws,
                        bus: Bus, reviewer: ReviewerOf,
                        key: IdempotencyKey) -> api.ReviewDecisionResult:
    who = needs_actor(reviewer, f"a review needs {ACTOR_HEADER} (the API key)")
    decided = await bus.handle(c.DecideReview(
        ws, run_id, brand_id, body.citation_class.value, body.note or None,
        body.ground_truth_hash, body.classification_id, who, key))
    return views.review_decision(run_id, brand_id, decided)


@router.get("/v1/review/agreement", response_model=api.JudgeAgreement)
async def review_agreement(ws: Ws, bus: Bus, judge_model: str | None = None) -> api.JudgeAgreement:
    return views.agreement(await bus.handle(c.GetJudgeAgreement(ws, judge_model)), judge_model)
