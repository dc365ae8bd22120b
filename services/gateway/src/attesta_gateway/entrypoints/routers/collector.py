"""Collection (collector): prompts, engines, engine secrets, schedules and the collections they
produce."""

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_contracts.api import collector as col
from attesta_gateway.entrypoints.api import (
    AUTH_ERRORS,
    BRAND_ID_PATTERN,
    OPAQUE_ID_PATTERN,
    Authed,
    IdemOptional,
    errors,
)
from attesta_platform.http import ApiError, ErrorResponse

router = APIRouter(tags=["collection"])
IdP = Annotated[str, Path(pattern=OPAQUE_ID_PATTERN)]
SERVICE = "collector"
IMPORT_TYPES = {"text/csv": "csv", "application/x-ndjson": "jsonl", "application/jsonl": "jsonl"}


@router.post("/v1/prompts", response_model=col.Prompt, status_code=201,
             responses=errors(400, 409, 413, *AUTH_ERRORS),
             summary="Add a prompt (branded or not is decided from the tracked brands)")
async def prompt_create(body: col.PromptSpec, request: Request, caller: Authed,
                        idem: IdemOptional) -> Response:
    return await caller.create(request, idem, SERVICE, "/v1/prompts")


@router.post("/v1/prompts/import", response_model=col.ImportResult,
             responses={**errors(413, *AUTH_ERRORS), 415: {
                 "model": ErrorResponse, "description": "not text/csv or application/x-ndjson"}},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "text/csv": {"schema": {"type": "string"}},
                 "application/x-ndjson": {"schema": {"type": "string"}}}}},
             summary="Bulk import prompts from CSV or JSONL: a report per row; a re-import "
                     "changes nothing")
async def prompt_import(request: Request, caller: Authed) -> Response:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fmt = IMPORT_TYPES.get(ctype)
    if fmt is None:
        raise ApiError(415, "unsupported_media_type",
                       "send the file as text/csv or application/x-ndjson")
    return await caller.forward(SERVICE, "POST", "/v1/prompts/import",
                                params={"format": fmt}, body=await request.body())


@router.get("/v1/prompts", response_model=col.PromptList, responses=errors(*AUTH_ERRORS),
            summary="Prompts of your workspace (filter by set, tag, branded)")
async def prompt_list(
    caller: Authed,
    prompt_set: Annotated[str | None, Query(pattern=OPAQUE_ID_PATTERN)] = None,
    branded: bool | None = None,
    tag: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    include_retired: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    after: Annotated[str | None, Query(pattern=OPAQUE_ID_PATTERN)] = None,
) -> Response:
    return await caller.forward(SERVICE, "GET", "/v1/prompts", params={
        "prompt_set": prompt_set, "branded": branded, "tag": tag,
        "include_retired": include_retired, "limit": limit, "after": after})


@router.get("/v1/prompts/{prompt_id}", response_model=col.Prompt,
            responses=errors(404, *AUTH_ERRORS))
async def prompt_get(prompt_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "GET", f"/v1/prompts/{prompt_id}")


@router.patch("/v1/prompts/{prompt_id}", response_model=col.Prompt,
              responses=errors(404, 409, 413, *AUTH_ERRORS), summary="Change a prompt")
async def prompt_update(prompt_id: IdP, body: col.PromptUpdate, request: Request,
                        caller: Authed) -> Response:
    return await caller.forward(SERVICE, "PATCH", f"/v1/prompts/{prompt_id}",
                                body=await request.body())


@router.post("/v1/prompts/{prompt_id}/retire", response_model=col.Prompt,
             responses=errors(404, *AUTH_ERRORS),
             summary="Retire a prompt (no new samples; its history stays)")
async def prompt_retire(prompt_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "POST", f"/v1/prompts/{prompt_id}/retire", body=b"")


@router.post("/v1/engines", response_model=col.Engine, status_code=201,
             responses=errors(400, 409, 413, *AUTH_ERRORS),
             summary="Add an engine (OpenAI-compatible endpoint, or our assistant); its key is "
                     "a secret of this workspace, named by id")
async def engine_create(body: col.EngineSpec, request: Request, caller: Authed,
                        idem: IdemOptional) -> Response:
    return await caller.create(request, idem, SERVICE, "/v1/engines")


@router.get("/v1/engines", response_model=col.EngineList, responses=errors(*AUTH_ERRORS))
async def engine_list(caller: Authed) -> Response:
    return await caller.forward(SERVICE, "GET", "/v1/engines")


@router.put("/v1/engines/{engine_id}", response_model=col.Engine,
            responses=errors(404, 413, *AUTH_ERRORS), summary="Replace an engine's settings")
async def engine_replace(engine_id: IdP, body: col.EngineSpec, request: Request,
                         caller: Authed) -> Response:
    return await caller.forward(SERVICE, "PUT", f"/v1/engines/{engine_id}",
                                body=await request.body())


@router.post("/v1/engines/{engine_id}/retire", response_model=col.Engine,
             responses=errors(404, *AUTH_ERRORS))
async def engine_retire(engine_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "POST", f"/v1/engines/{engine_id}/retire", body=b"")


@router.post("/v1/secrets", response_model=col.Secret, status_code=201,
             responses=errors(409, 413, *AUTH_ERRORS),
             summary="Store an engine key for this workspace: write-only (never returned, "
                     "never logged), kept encrypted; engines name it by secret_id")
async def secret_create(body: col.SecretSpec, request: Request, caller: Authed) -> Response:
    # No Idempotency-Key here: the gateway would keep a fingerprint of this body, and the body
    # is a key. A retry of a request that went through gets 409 (a live name is unique).
    return await caller.forward(SERVICE, "POST", "/v1/secrets", body=await request.body())


@router.get("/v1/secrets", response_model=col.SecretList, responses=errors(*AUTH_ERRORS),
            summary="Your workspace's engine secrets: id, name and dates (never the value)")
async def secret_list(caller: Authed, include_retired: bool = False) -> Response:
    return await caller.forward(SERVICE, "GET", "/v1/secrets",
                                params={"include_retired": include_retired})


@router.post("/v1/secrets/{secret_id}/retire", response_model=col.Secret,
             responses=errors(404, *AUTH_ERRORS),
             summary="Retire a secret: its encrypted value is erased; engines using it stop "
                     "sending it")
async def secret_retire(secret_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "POST", f"/v1/secrets/{secret_id}/retire", body=b"")


@router.post("/v1/schedules", response_model=col.Schedule, status_code=201,
             responses=errors(400, 409, 413, *AUTH_ERRORS),
             summary="Schedule prompts (by set or tag) × engines, cron or interval, N samples")
async def schedule_create(body: col.ScheduleSpec, request: Request, caller: Authed,
                          idem: IdemOptional) -> Response:
    return await caller.create(request, idem, SERVICE, "/v1/schedules")


@router.get("/v1/schedules", response_model=col.ScheduleList, responses=errors(*AUTH_ERRORS))
async def schedule_list(caller: Authed) -> Response:
    return await caller.forward(SERVICE, "GET", "/v1/schedules")


@router.put("/v1/schedules/{schedule_id}", response_model=col.Schedule,
            responses=errors(404, 413, *AUTH_ERRORS))
async def schedule_replace(schedule_id: IdP, body: col.ScheduleSpec, request: Request,
                           caller: Authed) -> Response:
    return await caller.forward(SERVICE, "PUT", f"/v1/schedules/{schedule_id}",
                                body=await request.body())


@router.post("/v1/schedules/{schedule_id}/retire", response_model=col.Schedule,
             responses=errors(404, *AUTH_ERRORS))
async def schedule_retire(schedule_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "POST", f"/v1/schedules/{schedule_id}/retire", body=b"")


@router.post("/v1/schedules/{schedule_id}/run", response_model=col.RunOnceResult,
             status_code=202, responses=errors(404, 409, *AUTH_ERRORS),
             summary="Plan one slot now (default: the current one); collectors pick it up. "
                     "409 when the stored schedule cannot be planned (its plan_error says why)")
async def schedule_run(schedule_id: IdP, caller: Authed, body: col.RunOnce | None = None
                       ) -> Response:
    return await caller.forward(SERVICE, "POST", f"/v1/schedules/{schedule_id}/run",
                                body=(body or col.RunOnce()).model_dump_json().encode())


@router.get("/v1/collections", response_model=col.CollectionList,
            responses=errors(404, *AUTH_ERRORS),
            summary="Samples collected or failed (with the reason), by schedule, status, slot")
async def collection_list(
    caller: Authed,
    schedule_id: Annotated[str | None, Query(pattern=OPAQUE_ID_PATTERN)] = None,
    status: Literal["pending", "awaiting_reply", "collected", "failed"] | None = None,
    slot: Annotated[cls.IsoTime | None, Query()] = None,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN,
                                          description="label sources for this brand")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    after: Annotated[str | None, Query(pattern=OPAQUE_ID_PATTERN)] = None,
) -> Response:
    return await caller.forward(SERVICE, "GET", "/v1/collections", params={
        "schedule_id": schedule_id, "status": status, "slot": slot, "brand_id": brand_id,
        "limit": limit,
        "after": after})


@router.get("/v1/collections/{collection_id}", response_model=col.Collection,
            responses=errors(404, *AUTH_ERRORS))
async def collection_get(collection_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "GET", f"/v1/collections/{collection_id}")


@router.get("/v1/collections/{collection_id}/raw", responses=errors(404, *AUTH_ERRORS),
            summary="The engine's raw response, byte for byte (its SHA-256 is on the run)")
async def collection_raw(collection_id: IdP, caller: Authed) -> Response:
    return await caller.forward(SERVICE, "GET", f"/v1/collections/{collection_id}/raw")
