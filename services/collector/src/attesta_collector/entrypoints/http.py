"""The collector's internal HTTP API (127.0.0.1, called by the gateway with the internal token
and the caller's workspace): prompts, engines, engine secrets, schedules, collections.

A secret's value comes in once (``POST /v1/secrets``) and never goes out: responses carry a
secret's id, name and dates only, and an engine refers to it by id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import asyncpg
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import AwareDatetime, ValidationError

from attesta_collector.domain.sources import label_source
from attesta_collector.service_layer import catalog, planning
from attesta_collector.service_layer.catalog import CatalogError
from attesta_collector.service_layer.unit_of_work import (
    BrandDirectory,
    BrandsUnavailable,
    EngineChecks,
    Row,
    Sealer,
    UnitOfWork,
)
from attesta_contracts.api.collector import (
    Collection,
    CollectionList,
    Engine,
    EngineList,
    EngineSpec,
    ImportResult,
    ImportRow,
    Prompt,
    PromptList,
    PromptSpec,
    PromptUpdate,
    RunOnce,
    RunOnceResult,
    Schedule,
    ScheduleList,
    ScheduleSpec,
    Secret,
    SecretList,
    SecretSpec,
)
from attesta_platform.service import add_health_routes
from attesta_platform.http import (
    ErrorResponse,
    check_internal_token,
    error_response,
    install_error_handlers,
)


@dataclass
class ApiContext:
    pool: asyncpg.Pool  # for the readiness check
    uow: Callable[[], UnitOfWork]  # a new unit of work per request
    brands: BrandDirectory
    internal_token: str
    engine_checks: EngineChecks  # outbound policy and operator keys, at engine create/update
    sealer: Sealer  # seals a secret's value before it is stored
    ready: Callable[[], str | None] | None = None


def workspace(request: Request) -> str:
    ctx: ApiContext = request.app.state.ctx
    return check_internal_token(request, ctx.internal_token)


Ws = Annotated[str, Depends(workspace)]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": d} for code, d in (
        (401, "missing or wrong internal token"), (404, "not found"), (409, "conflict"),
        (422, "invalid request"), (503, "a dependency is unavailable"))}


def _prompt(r: Row) -> Prompt:
    return Prompt(**{k: r[k] for k in Prompt.model_fields})


def _engine(r: Row) -> Engine:
    return Engine(engine_id=r["engine_id"], created_at=r["created_at"],
                  updated_at=r["updated_at"], retired_at=r["retired_at"], **r["spec"])


def _secret(r: Row) -> Secret:
    return Secret(secret_id=r["secret_id"], name=r["name"], created_at=r["created_at"],
                  retired_at=r["retired_at"])


def _schedule(r: Row) -> Schedule:
    return Schedule(schedule_id=r["schedule_id"], active=r["active"],
                    planned_through=r["planned_through"], next_due_at=r["next_due_at"],
                    created_at=r["created_at"], retired_at=r["retired_at"],
                    plan_error=r["plan_error"], plan_error_at=r["plan_error_at"],
                    plan_failures=r["plan_failures"], **r["spec"])


def _collection(r: Row) -> Collection:
    return Collection(
        collection_id=r["collection_id"], schedule_id=r["schedule_id"], prompt_id=r["prompt_id"],
        engine_id=r["engine_id"], slot=r["slot"], sample=r["sample"], status=r["status"],
        attempts=r["attempts"], reason=r["last_error"], run_id=r["run_id"], model=r["model"],
        answer_sha256=r["answer_sha256"], raw_response_sha256=r["raw_sha256"],
        latency_ms=r["latency_ms"], usage=r["usage"], sources=r["sources"] or [],
        finished_at=r["finished_at"])


def create_app(ctx: ApiContext) -> FastAPI:
    app = FastAPI(title="Attesta collector (internal)", version="1.0.0", responses=ERRORS)
    app.state.ctx = ctx
    install_error_handlers(app)

    @app.exception_handler(CatalogError)
    async def _catalog(request: Request, exc: CatalogError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.reason)

    @app.exception_handler(BrandsUnavailable)
    async def _brands(request: Request, exc: BrandsUnavailable) -> JSONResponse:
        return error_response(503, "brands_unavailable", str(exc))

    @app.exception_handler(asyncpg.DataError)
    async def _data(request: Request, exc: asyncpg.DataError) -> JSONResponse:
        return error_response(422, "invalid_request", f"unstorable value: {exc}")

    @app.exception_handler(ValidationError)
    async def _invalid(request: Request, exc: ValidationError) -> JSONResponse:
        e = exc.errors()[0]
        return error_response(422, "invalid_request",
                              f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}")

    add_health_routes(app, "collector", ctx.ready, database=ctx.pool)

    # -- prompts ------------------------------------------------------------------------------
    @app.post("/v1/prompts", status_code=201, response_model=Prompt)
    async def create_prompt(body: PromptSpec, ws: Ws) -> Prompt:
        return _prompt(await catalog.create_prompt(ctx.uow(), ctx.brands, ws, body))

    @app.get("/v1/prompts", response_model=PromptList)
    async def list_prompts(ws: Ws, prompt_set: str | None = None, branded: bool | None = None,
                           tag: str | None = None, include_retired: bool = False,
                           limit: Annotated[int, Query(ge=1, le=1000)] = 200,
                           after: str | None = None) -> PromptList:
        rows = await catalog.list_prompts(ctx.uow(), ws, prompt_set=prompt_set, branded=branded,
                                          tag=tag, include_retired=include_retired, limit=limit,
                                          after=after)
        items = [_prompt(r) for r in rows]
        return PromptList(items=items, next_after=items[-1].prompt_id if len(items) == limit else None)

    @app.get("/v1/prompts/{prompt_id}", response_model=Prompt)
    async def get_prompt(prompt_id: str, ws: Ws) -> Prompt:
        return _prompt(await catalog.get_prompt(ctx.uow(), ws, prompt_id))

    @app.patch("/v1/prompts/{prompt_id}", response_model=Prompt)
    async def change_prompt(prompt_id: str, body: PromptUpdate, ws: Ws) -> Prompt:
        return _prompt(await catalog.update_prompt(ctx.uow(), ctx.brands, ws, prompt_id, body))

    @app.post("/v1/prompts/{prompt_id}/retire", response_model=Prompt)
    async def retire_prompt(prompt_id: str, ws: Ws) -> Prompt:
        return _prompt(await catalog.retire_prompt(ctx.uow(), ws, prompt_id))

    @app.post("/v1/prompts/import", response_model=ImportResult,
              openapi_extra={"requestBody": {"content": {
                  "text/csv": {"schema": {"type": "string"}},
                  "application/x-ndjson": {"schema": {"type": "string"}}}, "required": True}})
    async def import_prompts(request: Request, ws: Ws,
                             format: Literal["csv", "jsonl"] | None = None) -> ImportResult:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        fmt = format or {"text/csv": "csv", "application/x-ndjson": "jsonl",
                         "application/jsonl": "jsonl"}.get(ctype)
        if fmt is None:
            raise CatalogError(415, "unsupported_media_type",
                               "send text/csv or application/x-ndjson (or ?format=csv|jsonl)")
        report = await catalog.import_prompts(ctx.uow(), ctx.brands, ws, fmt,
                                              await request.body())
        return ImportResult(accepted=report.accepted, unchanged=report.unchanged,
                            refused=report.refused, rows=[ImportRow(**r) for r in report.rows])

    # -- engines ------------------------------------------------------------------------------
    @app.post("/v1/engines", status_code=201, response_model=Engine)
    async def create_engine(body: EngineSpec, ws: Ws) -> Engine:
        return _engine(await catalog.create_engine(ctx.uow(), ctx.engine_checks, ws, body))

    @app.get("/v1/engines", response_model=EngineList)
    async def list_engines(ws: Ws) -> EngineList:
        return EngineList(items=[_engine(r) for r in await catalog.list_engines(ctx.uow(), ws)])

    @app.put("/v1/engines/{engine_id}", response_model=Engine)
    async def replace_engine(engine_id: str, body: EngineSpec, ws: Ws) -> Engine:
        return _engine(await catalog.replace_engine(ctx.uow(), ctx.engine_checks, ws, engine_id,
                                                    body))

    @app.post("/v1/engines/{engine_id}/retire", response_model=Engine)
    async def retire_engine(engine_id: str, ws: Ws) -> Engine:
        return _engine(await catalog.retire_engine(ctx.uow(), ws, engine_id))

    # -- engine secrets -----------------------------------------------------------------------
    @app.post("/v1/secrets", status_code=201, response_model=Secret)
    async def create_secret(body: SecretSpec, ws: Ws) -> Secret:
        return _secret(await catalog.create_secret(ctx.uow(), ctx.sealer, ws, body))

    @app.get("/v1/secrets", response_model=SecretList)
    async def list_secrets(ws: Ws, include_retired: bool = False) -> SecretList:
        return SecretList(items=[_secret(r) for r in await catalog.list_secrets(
            ctx.uow(), ws, include_retired)])

    @app.post("/v1/secrets/{secret_id}/retire", response_model=Secret)
    async def retire_secret(secret_id: str, ws: Ws) -> Secret:
        return _secret(await catalog.retire_secret(ctx.uow(), ws, secret_id))

    # -- schedules ----------------------------------------------------------------------------
    @app.post("/v1/schedules", status_code=201, response_model=Schedule)
    async def create_schedule(body: ScheduleSpec, ws: Ws) -> Schedule:
        return _schedule(await catalog.create_schedule(ctx.uow(), ws, body))

    @app.get("/v1/schedules", response_model=ScheduleList)
    async def list_schedules(ws: Ws) -> ScheduleList:
        return ScheduleList(items=[_schedule(r)
                                   for r in await catalog.list_schedules(ctx.uow(), ws)])

    @app.put("/v1/schedules/{schedule_id}", response_model=Schedule)
    async def replace_schedule(schedule_id: str, body: ScheduleSpec, ws: Ws) -> Schedule:
        return _schedule(await catalog.replace_schedule(ctx.uow(), ws, schedule_id, body))

    @app.post("/v1/schedules/{schedule_id}/retire", response_model=Schedule)
    async def retire_schedule(schedule_id: str, ws: Ws) -> Schedule:
        return _schedule(await catalog.retire_schedule(ctx.uow(), ws, schedule_id))

    @app.post("/v1/schedules/{schedule_id}/run", status_code=202, response_model=RunOnceResult)
    async def run_schedule(schedule_id: str, ws: Ws, body: RunOnce | None = None) -> RunOnceResult:
        """Plan one slot now (default: the cadence's current slot); collectors pick it up."""
        slot, new = await planning.plan_now(ctx.uow(), ws, schedule_id,
                                            body.slot if body else None)
        return RunOnceResult(schedule_id=schedule_id, slot=slot, new_collections=new)

    # -- collections --------------------------------------------------------------------------
    @app.get("/v1/collections", response_model=CollectionList)
    async def list_collections(ws: Ws, schedule_id: str | None = None,
                               status: Literal["pending", "awaiting_reply", "collected",
                                               "failed"] | None = None,
                               slot: AwareDatetime | None = None,
                               brand_id: str | None = None,
                               limit: Annotated[int, Query(ge=1, le=1000)] = 200,
                               after: str | None = None) -> CollectionList:
        """``brand_id``: label every source owned / competitor / third_party for that brand."""
        rows = await catalog.list_collections(ctx.uow(), ws, schedule_id=schedule_id,
                                              status=status, slot=slot, limit=limit, after=after)
        items = [_collection(r) for r in rows]
        if brand_id is not None:
            brands = {b.brand_id: b for b in await ctx.brands.brands(ws)}
            if brand_id not in brands:
                raise CatalogError(404, "not_found", f"no tracked brand {brand_id}")
            for item in items:
                for source in item.sources:
                    source["label"] = label_source(source.get("host") or source["domain"],
                                                   brands[brand_id], brands).value
        return CollectionList(items=items,
                              next_after=items[-1].collection_id if len(items) == limit else None)

    @app.get("/v1/collections/{collection_id}", response_model=Collection)
    async def get_collection(collection_id: str, ws: Ws) -> Collection:
        return _collection(await catalog.get_collection(ctx.uow(), ws, collection_id))

    @app.get("/v1/collections/{collection_id}/raw", responses={200: {"content": {
        "application/json": {}}}})
    async def get_raw(collection_id: str, ws: Ws) -> Response:
        """The engine's raw response body, byte for byte (its SHA-256 is on the run)."""
        sha256, body = await catalog.raw_response(ctx.uow(), ws, collection_id)
        return Response(body, media_type="application/json",
                        headers={"X-Content-SHA256": sha256})

    return app
