"""The collector's internal HTTP API (127.0.0.1, called by the gateway with the internal token
and the caller's workspace): prompts, engines, engine secrets, schedules, collections.

A route is an adapter: contract model in, a command or query to the bus, the contract's view
out; the domain's errors become statuses in one table (``HTTP_ERRORS``), in the shared error
shape. A secret's value comes in once (``POST /v1/secrets``) and never goes out: responses carry
a secret's id, name and dates only, and an engine refers to it by id.
"""

# No ``from __future__ import annotations`` here: the routes are closures over the bus and the
# token given to ``create_app`` (no ``app.state``), and FastAPI reads their annotations, which
# name closure-local dependencies, as objects.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import AwareDatetime, ValidationError

from attesta_collector.domain import commands as c
from attesta_collector.service_layer.errors import (
    Conflict,
    Invalid,
    NotFound,
    ServiceError,
    TooLarge,
)
from attesta_collector.service_layer.unit_of_work import BrandsUnavailable, Row
from attesta_contracts.api.collector import (
    Collection,
    CollectionList,
    Engine,
    EngineList,
    EngineSpec,
    ImportResult,
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
from attesta_platform.bus import MessageBus
from attesta_platform.http import (
    ApiError,
    ErrorResponse,
    check_internal_token,
    error_response,
    install_error_handlers,
)
from attesta_platform.service import add_health_routes

# The domain's errors at the HTTP edge; the error's own code names it in the shared shape.
HTTP_ERRORS: dict[type[ServiceError], int] = {
    ServiceError: 400, NotFound: 404, Conflict: 409, Invalid: 422, TooLarge: 413}


def api_error(exc: ServiceError) -> ApiError:
    """A domain error as the HTTP API answers it."""
    kind = next(k for k in type(exc).__mro__ if k in HTTP_ERRORS)
    return ApiError(HTTP_ERRORS[kind], exc.code, exc.reason)


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
        finished_at=r["finished_at"], collection_method=r.get("collection_method"),
        **_build(r.get("model_build")))


def _build(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The stored ``model_build`` column as the API's ``model_build`` and its notes."""
    if not stored:
        return {}
    build = {k: stored.get(k) for k in ("model", "system_fingerprint")}
    return {"model_build": build if any(build.values()) else None,
            "model_build_notes": list(stored.get("notes") or [])}


def create_app(bus: MessageBus, *, internal_token: str, database: Any = None,
               ready: Callable[[], str | None] | None = None) -> FastAPI:
    """``database``: the pool /readyz probes; ``ready``: None when the rest of the process is."""
    app = FastAPI(title="Attesta collector (internal)", version="1.0.0", responses=ERRORS)
    install_error_handlers(app)

    @app.exception_handler(ServiceError)
    async def _domain(request: Request, exc: ServiceError) -> JSONResponse:
        err = api_error(exc)
        return error_response(err.status, err.code, err.reason)

    @app.exception_handler(BrandsUnavailable)
    async def _brands(request: Request, exc: BrandsUnavailable) -> JSONResponse:
        return error_response(503, "brands_unavailable", str(exc))

    @app.exception_handler(ValidationError)
    async def _invalid(request: Request, exc: ValidationError) -> JSONResponse:
        e = exc.errors()[0]
        return error_response(422, "invalid_request",
                              f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}")

    add_health_routes(app, "collector", ready, database=database)

    def workspace(request: Request) -> str:
        return check_internal_token(request, internal_token)

    Ws = Annotated[str, Depends(workspace)]  # noqa: N806 - a type, used as one

    # -- prompts ------------------------------------------------------------------------------
    @app.post("/v1/prompts", status_code=201, response_model=Prompt)
    async def create_prompt(body: PromptSpec, ws: Ws) -> Prompt:
        return _prompt(await bus.handle(c.CreatePrompt(ws, body)))

    @app.get("/v1/prompts", response_model=PromptList)
    async def list_prompts(ws: Ws, prompt_set: str | None = None, branded: bool | None = None,
                           tag: str | None = None, include_retired: bool = False,
                           limit: Annotated[int, Query(ge=1, le=1000)] = 200,
                           after: str | None = None) -> PromptList:
        rows = await bus.handle(c.ListPrompts(ws, prompt_set, branded, tag, include_retired,
                                              limit, after))
        items = [_prompt(r) for r in rows]
        return PromptList(items=items, next_after=items[-1].prompt_id if len(items) == limit else None)

    @app.get("/v1/prompts/{prompt_id}", response_model=Prompt)
    async def get_prompt(prompt_id: str, ws: Ws) -> Prompt:
        return _prompt(await bus.handle(c.GetPrompt(ws, prompt_id)))

    @app.patch("/v1/prompts/{prompt_id}", response_model=Prompt)
    async def change_prompt(prompt_id: str, body: PromptUpdate, ws: Ws) -> Prompt:
        return _prompt(await bus.handle(c.UpdatePrompt(ws, prompt_id, body)))

    @app.post("/v1/prompts/{prompt_id}/retire", response_model=Prompt)
    async def retire_prompt(prompt_id: str, ws: Ws) -> Prompt:
        return _prompt(await bus.handle(c.RetirePrompt(ws, prompt_id)))

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
            raise ApiError(415, "unsupported_media_type",
                           "send text/csv or application/x-ndjson (or ?format=csv|jsonl)")
        return await bus.handle(c.ImportPrompts(ws, fmt, await request.body()))

    # -- engines ------------------------------------------------------------------------------
    @app.post("/v1/engines", status_code=201, response_model=Engine)
    async def create_engine(body: EngineSpec, ws: Ws) -> Engine:
        return _engine(await bus.handle(c.CreateEngine(ws, body)))

    @app.get("/v1/engines", response_model=EngineList)
    async def list_engines(ws: Ws) -> EngineList:
        return EngineList(items=[_engine(r) for r in await bus.handle(c.ListEngines(ws))])

    @app.put("/v1/engines/{engine_id}", response_model=Engine)
    async def replace_engine(engine_id: str, body: EngineSpec, ws: Ws) -> Engine:
        return _engine(await bus.handle(c.ReplaceEngine(ws, engine_id, body)))

    @app.post("/v1/engines/{engine_id}/retire", response_model=Engine)
    async def retire_engine(engine_id: str, ws: Ws) -> Engine:
        return _engine(await bus.handle(c.RetireEngine(ws, engine_id)))

    # -- engine secrets -----------------------------------------------------------------------
    @app.post("/v1/secrets", status_code=201, response_model=Secret)
    async def create_secret(body: SecretSpec, ws: Ws) -> Secret:
        return _secret(await bus.handle(c.CreateSecret(ws, body)))

    @app.get("/v1/secrets", response_model=SecretList)
    async def list_secrets(ws: Ws, include_retired: bool = False) -> SecretList:
        return SecretList(items=[_secret(r) for r in await bus.handle(
            c.ListSecrets(ws, include_retired))])

    @app.post("/v1/secrets/{secret_id}/retire", response_model=Secret)
    async def retire_secret(secret_id: str, ws: Ws) -> Secret:
        return _secret(await bus.handle(c.RetireSecret(ws, secret_id)))

    # -- schedules ----------------------------------------------------------------------------
    @app.post("/v1/schedules", status_code=201, response_model=Schedule)
    async def create_schedule(body: ScheduleSpec, ws: Ws) -> Schedule:
        return _schedule(await bus.handle(c.CreateSchedule(ws, body)))

    @app.get("/v1/schedules", response_model=ScheduleList)
    async def list_schedules(ws: Ws) -> ScheduleList:
        return ScheduleList(items=[_schedule(r) for r in await bus.handle(c.ListSchedules(ws))])

    @app.put("/v1/schedules/{schedule_id}", response_model=Schedule)
    async def replace_schedule(schedule_id: str, body: ScheduleSpec, ws: Ws) -> Schedule:
        return _schedule(await bus.handle(c.ReplaceSchedule(ws, schedule_id, body)))

    @app.post("/v1/schedules/{schedule_id}/retire", response_model=Schedule)
    async def retire_schedule(schedule_id: str, ws: Ws) -> Schedule:
        return _schedule(await bus.handle(c.RetireSchedule(ws, schedule_id)))

    @app.post("/v1/schedules/{schedule_id}/run", status_code=202, response_model=RunOnceResult)
    async def run_schedule(schedule_id: str, ws: Ws, body: RunOnce | None = None) -> RunOnceResult:
        """Plan one slot now (default: the cadence's current slot); collectors pick it up."""
        slot, new = await bus.handle(c.PlanSlotNow(ws, schedule_id, body.slot if body else None))
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
        rows = await bus.handle(c.ListCollections(ws, schedule_id, status, slot, brand_id,
                                                  limit, after))
        items = [_collection(r) for r in rows]
        return CollectionList(items=items,
                              next_after=items[-1].collection_id if len(items) == limit else None)

    @app.get("/v1/collections/{collection_id}", response_model=Collection)
    async def get_collection(collection_id: str, ws: Ws) -> Collection:
        return _collection(await bus.handle(c.GetCollection(ws, collection_id)))

    @app.get("/v1/collections/{collection_id}/raw", responses={200: {"content": {
        "application/json": {}}}})
    async def get_raw(collection_id: str, ws: Ws) -> Response:
        """The engine's raw response body, byte for byte (its SHA-256 is on the run)."""
        sha256, body = await bus.handle(c.GetRawResponse(ws, collection_id))
        return Response(body, media_type="application/json",
                        headers={"X-Content-SHA256": sha256})

    return app
