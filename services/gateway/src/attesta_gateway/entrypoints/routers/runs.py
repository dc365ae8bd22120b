"""Runs (prompt + AI answer) and their classification history (classifier)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_gateway.entrypoints.api import (
    AUTH_ERRORS,
    BRAND_ID_PATTERN,
    Authed,
    IdemOptional,
    IdemRequired,
    RunIdP,
    errors,
)

router = APIRouter(tags=["runs"])


@router.post("/v1/runs", response_model=cls.RunAccepted, status_code=202,
             responses=errors(400, 404, 409, 413, *AUTH_ERRORS),
             summary="Submit a run (prompt + AI answer) for classification")
async def run_create(body: cls.RunCreate, request: Request, caller: Authed,
                     idem: IdemRequired) -> Response:
    return await caller.create(request, idem, "classifier", "/v1/runs")


@router.get("/v1/runs", response_model=cls.RunList, responses=errors(400, *AUTH_ERRORS),
            summary="Runs of your workspace, newest first")
async def run_list(
    caller: Authed,
    engine: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
    status: Annotated[cls.RunStatus | None, Query()] = None,
    citation_class: Annotated[CitationClass | None, Query()] = None,
    decided_by: Annotated[DecidedBy | None, Query()] = None,
    tag: Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="any of the collector prompt's tags (topic, persona or funnel)")] = None,
    source: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
    to: Annotated[cls.IsoTime | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
) -> Response:
    return await caller.forward(
        "classifier", "GET", "/v1/runs",
        params={"engine": engine, "brand_id": brand_id,
                "status": status.value if status else None,
                "citation_class": citation_class.value if citation_class else None,
                "decided_by": decided_by.value if decided_by else None,
                "tag": tag,
                "source": source, "from": from_, "to": to, "limit": limit, "cursor": cursor})


@router.get("/v1/runs/{run_id}", response_model=cls.RunView,
            responses=errors(404, *AUTH_ERRORS))
async def run_get(run_id: RunIdP, caller: Authed) -> Response:
    return await caller.forward("classifier", "GET", f"/v1/runs/{run_id}")


@router.get("/v1/runs/{run_id}/classifications", response_model=cls.ClassificationHistory,
            responses=errors(404, *AUTH_ERRORS),
            summary="Append-only classification history of a run (as of a time)")
async def run_history(run_id: RunIdP, caller: Authed,
                      as_of: Annotated[cls.IsoTime | None, Query()] = None) -> Response:
    return await caller.forward("classifier", "GET", f"/v1/runs/{run_id}/classifications",
                                params={"as_of": as_of})


@router.post("/v1/runs/{run_id}/reclassify", response_model=cls.ReclassifyResult,
             responses=errors(400, 404, 409, 413, *AUTH_ERRORS),
             summary="Manual reclassification (appends history; audited with your key id)")
async def run_reclassify(run_id: RunIdP, body: cls.ReclassifyRequest, request: Request,
                         caller: Authed, idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier", f"/v1/runs/{run_id}/reclassify")
