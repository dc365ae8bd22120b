"""The classifier's internal HTTP API (FastAPI on :8081, called by the gateway).

Every ``/v1`` route needs the internal token and a workspace (``check_internal_token``); a
brand or run of another workspace answers 404, never its data. Errors use the shared shape.
``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus, ``adapters/telemetry.py``) are open and
not in the OpenAPI document.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from collections.abc import Callable
from typing import Annotated, Any

import asyncpg
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse

from attesta_classifier.adapters.fetcher import SafeFetcher
from attesta_classifier.service_layer import brands as brand_svc
from attesta_classifier.service_layer import ground_truth as gt_svc
from attesta_classifier.service_layer import metrics as metrics_svc
from attesta_classifier.service_layer import review as review_svc
from attesta_classifier.service_layer import runs as run_svc
from attesta_classifier.service_layer.errors import ServiceError
from attesta_classifier.service_layer.pipeline import Heuristic
from attesta_classifier.service_layer.unit_of_work import (
    HistoryRow, PairState, StoredBrand, StoredFact, UnitOfWork)
from attesta_contracts.api import classifier as api
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_platform.logs import get_logger
from attesta_platform.http import (
    ACTOR_HEADER, ApiError, ErrorResponse, actor_name_of, check_internal_token, error_response,
    install_error_handlers)
from attesta_platform.service import add_health_routes


log = get_logger("attesta.classifier.http")


@dataclass
class ApiContext:
    pool: asyncpg.Pool  # for /readyz
    uow: Callable[[], UnitOfWork]  # a new unit of work per request
    fetcher: SafeFetcher
    heuristic: Heuristic
    judge: Any  # a Judge, or None when the judge path is not wired
    internal_token: str
    judge_timeout_s: float = 60.0
    refresh_deadline_s: float = 8.0
    ready: Callable[[], str | None] | None = None  # None when the rest of the process is ready
    review_sample_share: float = 0.05  # judge-decided pairs drawn for a blind review


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text} for code, text in (
        (400, "missing workspace or actor"), (401, "missing or wrong internal token"),
        (404, "not found in this workspace"), (422, "invalid request"))}


def _brand(b: StoredBrand) -> api.Brand:
    return api.Brand(brand_id=b.brand_id, workspace_id=b.workspace_id, name=b.name,
                     aliases=list(b.aliases), domains=list(b.domains),
                     competitors=list(b.competitors), sources=list(b.sources),
                     created_at=b.created_at, updated_at=b.updated_at)


def _fact(f: StoredFact) -> api.GroundTruthFactView:
    return api.GroundTruthFactView(
        fact_id=f.fact_id, brand_id=f.brand_id, type=f.type, text=f.text,
        source_url=f.source_url, fetched_at=f.fetched_at, attribution=f.attribution,
        content_sha256=f.content_sha256, active=f.active, superseded_at=f.superseded_at,
        recorded_at=f.created_at)


def _state(s: PairState) -> api.RunBrandState:
    classified = s.status == "classified"
    return api.RunBrandState(
        brand_id=s.brand_id, status=s.status,
        citation_class=s.citation_class if classified else None,
        decided_by=s.decided_by if classified else None,
        judge_model=s.judge_model if classified else None,
        classification_id=str(s.classification_id) if s.classification_id else None,
        ground_truth_hash=s.ground_truth_hash, reason=s.reason, updated_at=s.updated_at)


def _classification(r: HistoryRow) -> api.Classification:
    d = asdict(r)
    d["classification_id"] = str(d["classification_id"])
    d.pop("workspace_id")
    return api.Classification(**d)


def _review_item(i: review_svc.ReviewItem) -> api.ReviewItem:
    r, b, judge = i.run, i.brand, i.judge
    return api.ReviewItem(
        run_id=r.run_id, brand_id=b.brand_id, kind=api.ReviewKind(i.kind),
        since=i.state.updated_at, brand_name=b.name, aliases=list(b.aliases),
        domains=list(b.domains), engine=r.engine, model=r.model, prompt=r.prompt,
        answer=r.answer, answer_sha256=r.answer_sha256, answered_at=r.answered_at,
        answer_segments=[api.AnswerSegment(text=t, mention=k) for t, k in i.segments],
        ground_truth_hash=i.ground_truth_hash, facts=[_fact(f) for f in i.facts],
        judge=None if judge is None else api.JudgeOutput(
            state=api.JudgeState(judge.state), reason=judge.reason, attempts=judge.attempts,
            judge_model=judge.judge_model,
            claims=[api.JudgeClaimView(claim=c.claim, verdict=c.verdict, reason=c.reason,
                                       fact_ids=list(c.fact_ids)) for c in judge.claims]),
        classification_id=(str(i.state.classification_id)
                           if i.kind == "sample" and i.state.classification_id else None))


def _rate(p: Any) -> api.Rate:
    return api.Rate(value=p.value, successes=p.successes, n=p.n, ci95_low=p.low, ci95_high=p.high)


def _reviewer(request: Request) -> review_svc.Reviewer:
    """Who decides: the API key's name the gateway forwards (its id when the key has none)."""
    key_id = (request.headers.get(ACTOR_HEADER) or "").strip()[:200] or None
    name = actor_name_of(request) or key_id
    if name is None:
        raise ApiError(400, "missing_actor", f"a review needs {ACTOR_HEADER} (the API key)")
    return review_svc.Reviewer(name, key_id)


def workspace(request: Request) -> str:
    """The caller's workspace, once the internal token checked out (401/400 otherwise)."""
    return check_internal_token(request, request.app.state.ctx.internal_token)


Ws = Annotated[str, Depends(workspace)]


def create_app(ctx: ApiContext) -> FastAPI:
    app = FastAPI(title="Attesta classifier (internal)", version="1.0.0", responses=ERRORS)
    app.state.ctx = ctx
    install_error_handlers(app)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.reason, exc.headers)

    @app.exception_handler(asyncpg.DataError)
    async def _data_error(request: Request, exc: asyncpg.DataError) -> JSONResponse:
        # Input PostgreSQL cannot store or compare (the API models refuse the known cases, NUL
        # characters and out-of-range times, first): the caller's data, so a 422, never a 500,
        # and the database's own message stays in the log (it names internals).
        log.info("unstorable value refused", path=request.url.path, error=repr(exc))
        return error_response(422, "invalid_request",
                              "a value cannot be stored (e.g. a NUL character or a time out of "
                              "range)")

    add_health_routes(app, "classifier", ctx.ready, database=ctx.pool)

    # -- brands ------------------------------------------------------------------------------
    @app.post("/v1/brands", status_code=201, response_model=api.Brand,
              responses={409: {"model": ErrorResponse, "description": "brand id taken"}})
    async def create_brand(body: api.BrandCreate, ws: Ws) -> api.Brand:
        return _brand(await brand_svc.create_brand(ctx.uow(), ws, body))

    @app.get("/v1/brands", response_model=api.BrandList)
    async def list_brands(ws: Ws) -> api.BrandList:
        return api.BrandList(items=[_brand(r) for r in await brand_svc.list_brands(ctx.uow(), ws)])

    @app.get("/v1/brands/{brand_id}", response_model=api.Brand)
    async def get_brand(brand_id: str, ws: Ws) -> api.Brand:
        return _brand(await brand_svc.get_brand(ctx.uow(), ws, brand_id))

    @app.patch("/v1/brands/{brand_id}", response_model=api.Brand)
    async def update_brand(brand_id: str, body: api.BrandUpdate, ws: Ws) -> api.Brand:
        return _brand(await brand_svc.update_brand(ctx.uow(), ws, brand_id, body))

    # -- ground truth ------------------------------------------------------------------------
    @app.post("/v1/brands/{brand_id}/ground-truth/refresh", response_model=api.RefreshResult,
              responses={409: {"model": ErrorResponse,
                               "description": "brand has no sources, or a refresh of it is "
                                              "running (Retry-After)"},
                         422: {"model": ErrorResponse,
                               "description": "every source was refused (SSRF guard)"},
                         502: {"model": ErrorResponse, "description": "no source could be fetched"},
                         504: {"model": ErrorResponse,
                               "description": "the refresh deadline ran out"}})
    async def refresh(brand_id: str, ws: Ws) -> api.RefreshResult:
        o = await gt_svc.refresh(ctx.uow(), ctx.fetcher, ws, brand_id,
                                 deadline_s=ctx.refresh_deadline_s)
        return api.RefreshResult(
            refresh_id=o.refresh_id, brand_id=o.brand_id, changed=o.changed,
            ground_truth_hash=o.ground_truth_hash, active_fact_ids=o.active_fact_ids,
            added_fact_ids=o.added_fact_ids, superseded_fact_ids=o.superseded_fact_ids,
            sources=[api.SourceFetchOutcome(url=s.url, ok=s.ok, http_status=s.http_status,
                                            sha256=s.sha256, bytes=s.bytes,
                                            facts_extracted=s.facts_extracted, error=s.error)
                     for s in o.sources])

    @app.get("/v1/brands/{brand_id}/ground-truth", response_model=api.GroundTruth)
    async def ground_truth(brand_id: str, ws: Ws,
                           include_superseded: bool = False) -> api.GroundTruth:
        gt_hash, facts, superseded = await gt_svc.get_ground_truth(
            ctx.uow(), ws, brand_id, include_superseded=include_superseded)
        return api.GroundTruth(brand_id=brand_id, ground_truth_hash=gt_hash,
                               facts=[_fact(f) for f in facts],
                               superseded=None if superseded is None else [_fact(f) for f in superseded])

    @app.post("/v1/brands/{brand_id}/ground-truth/facts", status_code=201,
              response_model=api.GroundTruthFactView,
              responses={200: {"model": api.GroundTruthFactView, "description": "already active"}})
    async def add_fact(brand_id: str, body: api.ManualFactCreate, ws: Ws,
                       response: Response) -> api.GroundTruthFactView:
        created, row = await gt_svc.add_manual_fact(ctx.uow(), ws, brand_id, type_=body.type,
                                                    text=body.text, source_url=body.source_url,
                                                    attribution=body.attribution)
        if not created:
            response.status_code = 200
        return _fact(row)

    @app.post("/v1/brands/{brand_id}/reverify", response_model=api.ReverifyResult)
    async def reverify(brand_id: str, ws: Ws, request: Request) -> api.ReverifyResult:
        actor = request.headers.get(ACTOR_HEADER) or None
        c = await run_svc.reverify_brand(ctx.uow(), ctx.heuristic, ws, brand_id, actor=actor,
                                         reason="reverification after a ground-truth change")
        return api.ReverifyResult(brand_id=brand_id, **c)

    # -- runs --------------------------------------------------------------------------------
    @app.post("/v1/runs", status_code=202, response_model=api.RunAccepted)
    async def create_run(body: api.RunCreate, ws: Ws, request: Request) -> api.RunAccepted:
        run_id, sha = await run_svc.create_run(ctx.uow(), ws, body,
                                               request.headers.get("idempotency-key"))
        return api.RunAccepted(run_id=run_id, answer_sha256=sha)

    @app.get("/v1/runs", response_model=api.RunList)
    async def list_runs(
        ws: Ws,
        engine: str | None = None,
        brand_id: str | None = None,
        status: api.RunStatus | None = None,
        citation_class: CitationClass | None = None,
        decided_by: DecidedBy | None = None,
        tag: str | None = None,
        source: str | None = None,
        from_: Annotated[api.IsoTime | None, Query(alias="from")] = None,
        to: api.IsoTime | None = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: str | None = None,
    ) -> api.RunList:
        for name, value in (("from", from_), ("to", to)):
            if value is not None and value.tzinfo is None:
                raise ApiError(422, "invalid_request", f"{name}: give a timezone (e.g. Z)")
        items, nxt = await run_svc.list_runs(ctx.uow(), ws, run_svc.RunFilter(
            engine, brand_id, status.value if status else None,
            citation_class.value if citation_class else None, source, from_, to, limit, cursor,
            decided_by.value if decided_by else None, tag))
        return api.RunList(items=[api.RunSummary(
            run_id=r.run_id, engine=r.engine, model=r.model, answer_sha256=r.answer_sha256,
            source=r.source, answered_at=r.answered_at, recorded_at=r.recorded_at,
            brands=[_state(s) for s in states])
            for r, states in items], next_cursor=nxt)

    @app.get("/v1/runs/{run_id}", response_model=api.RunView)
    async def get_run(run_id: str, ws: Ws) -> api.RunView:
        r, states = await run_svc.get_run(ctx.uow(), ws, run_id)
        return api.RunView(
            run_id=r.run_id, workspace_id=r.workspace_id, engine=r.engine, model=r.model,
            prompt=r.prompt, answer=r.answer, answer_sha256=r.answer_sha256,
            brand_ids=list(r.brand_ids), source=r.source, requested_at=r.requested_at,
            answered_at=r.answered_at, recorded_at=r.recorded_at,
            brands=[_state(s) for s in states])

    @app.get("/v1/runs/{run_id}/classifications", response_model=api.ClassificationHistory)
    async def classifications(run_id: str, ws: Ws, as_of: api.IsoTime | None = None) -> api.ClassificationHistory:
        if as_of is not None and as_of.tzinfo is None:
            raise ApiError(422, "invalid_request", "as_of: give a timezone (e.g. Z)")
        rows, latest = await run_svc.history(ctx.uow(), ws, run_id, as_of)
        return api.ClassificationHistory(run_id=run_id, as_of=as_of,
                                         items=[_classification(r) for r in rows],
                                         as_of_classes=[_classification(r) for r in latest])

    @app.post("/v1/runs/{run_id}/reclassify", response_model=api.ReclassifyResult)
    async def reclassify(run_id: str, body: api.ReclassifyRequest, ws: Ws,
                         request: Request) -> api.ReclassifyResult:
        actor = (request.headers.get(ACTOR_HEADER) or "").strip()
        if not actor:
            raise ApiError(400, "missing_actor", f"manual reclassification needs {ACTOR_HEADER}")
        states = await run_svc.reclassify(ctx.uow(), ctx.heuristic, ctx.judge, ws, run_id,
                                          reason=body.reason, actor=actor[:200],
                                          brand_ids=body.brand_ids,
                                          judge_timeout_s=ctx.judge_timeout_s)
        return api.ReclassifyResult(run_id=run_id, brands=[_state(s) for s in states])

    # -- metrics -----------------------------------------------------------------------------
    @app.get("/v1/metrics", response_model=api.MetricsResponse, response_model_by_alias=True)
    async def metrics(
        ws: Ws,
        period: api.Period = api.Period.WEEK,
        brand_id: str | None = None,
        engine: str | None = None,
        from_: Annotated[api.IsoTime | None, Query(alias="from")] = None,
        to: api.IsoTime | None = None,
        group_by: Annotated[str, Query(
            description="comma-separated dimensions of each row: engine, topic, persona, funnel, "
                        "branded; a dimension left out is summed over (without engine: all "
                        "engines together); empty: one row per brand and period")] = "engine",
    ) -> api.MetricsResponse:
        for name, value in (("from", from_), ("to", to)):
            if value is not None and value.tzinfo is None:
                raise ApiError(422, "invalid_request", f"{name}: give a timezone (e.g. Z)")
        if from_ and to and to <= from_:
            raise ApiError(422, "invalid_request", "to must be after from")
        dims = [d.strip() for d in group_by.split(",") if d.strip()]
        try:
            dimensions = list(dict.fromkeys(api.MetricsDimension(d) for d in dims))
        except ValueError:
            raise ApiError(422, "invalid_request", "group_by: give any of "
                           + ", ".join(d.value for d in api.MetricsDimension)) from None
        rows = await metrics_svc.compute(ctx.uow(), ws, period=period.value, brand_id=brand_id,
                                         engine=engine, from_=from_, to=to,
                                         group_by=[d.value for d in dimensions])
        return api.MetricsResponse(period=period, **{"from": from_}, to=to, group_by=dimensions,
                                   rows=[api.MetricRow(**r) for r in rows])

    # -- review queue ------------------------------------------------------------------------
    @app.get("/v1/review/queue", response_model=api.ReviewQueue)
    async def review_queue(
        ws: Ws,
        brand_id: str | None = None,
        kind: api.ReviewKind | None = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: str | None = None,
    ) -> api.ReviewQueue:
        page = await review_svc.queue(ctx.uow(), ws, share=ctx.review_sample_share,
                                      brand_id=brand_id, kind=kind.value if kind else None,
                                      limit=limit, cursor=cursor)
        c, now = page.counts, page.now
        return api.ReviewQueue(
            items=[api.ReviewQueueItem(
                run_id=e.run_id, brand_id=e.brand_id,
                brand_name=page.brand_names.get(e.brand_id, e.brand_id),
                kind=api.ReviewKind(e.kind), engine=e.engine, since=e.since,
                age_s=max(0, int((now - e.since).total_seconds())), reason=e.reason)
                for e in page.entries],
            next_cursor=page.next_cursor, pending=c.pending, oldest_pending_at=c.oldest_pending_at,
            oldest_pending_age_s=(None if c.oldest_pending_at is None
                                  else max(0, int((now - c.oldest_pending_at).total_seconds()))),
            sample_open=c.sample_open, sample_share=ctx.review_sample_share)

    @app.get("/v1/review/queue/{run_id}/{brand_id}", response_model=api.ReviewItem)
    async def review_item(run_id: str, brand_id: str, ws: Ws) -> api.ReviewItem:
        return _review_item(await review_svc.item(ctx.uow(), ws, run_id, brand_id,
                                                  share=ctx.review_sample_share))

    @app.post("/v1/review/queue/{run_id}/{brand_id}/decision", status_code=201,
              response_model=api.ReviewDecisionResult,
              responses={409: {"model": ErrorResponse,
                               "description": "no longer in the queue, or the facts or the "
                                              "judge's label changed since the item was read"}})
    async def review_decide(run_id: str, brand_id: str, body: api.ReviewDecisionCreate, ws: Ws,
                            request: Request) -> api.ReviewDecisionResult:
        d = await review_svc.decide(
            ctx.uow(), ws, run_id, brand_id,
            review_svc.DecisionInput(body.citation_class.value, body.note or None,
                                     body.ground_truth_hash, body.classification_id),
            _reviewer(request), share=ctx.review_sample_share,
            heuristic_version=ctx.heuristic.version,
            idempotency_key=request.headers.get("idempotency-key"))
        return api.ReviewDecisionResult(
            run_id=run_id, brand_id=brand_id, kind=api.ReviewKind(d.kind),
            citation_class=CitationClass(d.citation_class), reviewer=d.reviewer, note=d.note,
            reviewed_at=d.reviewed_at,
            classification=_classification(d.label) if d.label else None,
            review_id=str(d.review.review_id) if d.review else None)

    @app.get("/v1/review/agreement", response_model=api.JudgeAgreement)
    async def review_agreement(ws: Ws, judge_model: str | None = None) -> api.JudgeAgreement:
        a = await review_svc.judge_agreement(ctx.uow(), ws, judge_model)
        return api.JudgeAgreement(
            n=a.n, observed=_rate(a.observed), kappa=a.kappa,
            per_class=[api.ClassAgreement(citation_class=CitationClass(c.citation_class),
                                          judge_n=c.judge_n, human_n=c.human_n, agreed=c.agreed,
                                          precision=_rate(c.precision)) for c in a.per_class],
            confusion=a.confusion, judge_model=judge_model, sample_share=ctx.review_sample_share)

    from attesta_classifier.entrypoints.exports import router as exports_router  # uses Ws above

    app.include_router(exports_router)
    return app
