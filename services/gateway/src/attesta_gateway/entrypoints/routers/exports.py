"""``/v1/exports/*``: the runs table and the metrics as files (classifier).

The classifier streams them page by page (``attesta_classifier.entrypoints.exports``); the
gateway checks the key, the per-key limit and the query like ``/v1/runs`` and ``/v1/metrics``,
and passes the file on chunk by chunk as it arrives (``Caller.stream``: no total timeout, each
wait for the next chunk bounded), so neither side holds the whole file.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_gateway.entrypoints.api import AUTH_ERRORS, BRAND_ID_PATTERN, Authed, errors
from attesta_gateway.service_layer.forwarding import JSON_ONLY

router = APIRouter(tags=["exports"])
CSV = "text/csv"
NDJSON = "application/x-ndjson"
Text = Annotated[str | None, Query(min_length=1, max_length=100)]


@router.get("/v1/exports/runs", responses={
    **errors(400, *AUTH_ERRORS),
    200: {"content": {CSV: {"schema": {"type": "string"}}, NDJSON: {"schema": {"type": "string"}}},
          "description": "the runs matching the filters of GET /v1/runs: CSV, one row per "
                         "(run, brand) with its current class, or JSON Lines of RunSummary"}},
    response_class=Response, summary="Export runs as CSV or JSON Lines")
async def export_runs(
    caller: Authed,
    format: Literal["csv", "jsonl"] = "csv",  # noqa: A002 - the public parameter's name
    engine: Text = None,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
    status: Annotated[cls.RunStatus | None, Query()] = None,
    citation_class: Annotated[CitationClass | None, Query()] = None,
    decided_by: Annotated[DecidedBy | None, Query()] = None,
    tag: Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="any of the collector prompt's tags (topic, persona or funnel)")] = None,
    source: Text = None,
    from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
    to: Annotated[cls.IsoTime | None, Query()] = None,
) -> Response:
    return await caller.stream(
        "classifier", "/v1/exports/runs", media_types=(CSV, NDJSON),
        params={"format": format, "engine": engine, "brand_id": brand_id,
                "status": status.value if status else None,
                "citation_class": citation_class.value if citation_class else None,
                "decided_by": decided_by.value if decided_by else None,
                "tag": tag,
                "source": source, "from": from_, "to": to})


@router.get("/v1/exports/metrics", responses={
    **errors(400, *AUTH_ERRORS),
    200: {"content": {CSV: {"schema": {"type": "string"}},
                      "application/json": {"schema": {"$ref": "#/components/schemas/MetricsResponse"}}},
          "description": "the metrics of GET /v1/metrics: CSV, one row per (brand, engine, "
                         "period) with every figure's value, successes, n and 95 % interval; "
                         "or the MetricsResponse JSON"}},
    response_class=Response, summary="Export metrics as CSV or JSON")
async def export_metrics(
    caller: Authed,
    format: Literal["csv", "json"] = "csv",  # noqa: A002 - the public parameter's name
    period: Annotated[cls.Period, Query()] = cls.Period.WEEK,
    from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
    to: Annotated[cls.IsoTime | None, Query()] = None,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
    engine: Text = None,
) -> Response:
    return await caller.stream(
        "classifier", "/v1/exports/metrics", media_types=(CSV, *JSON_ONLY),
        params={"format": format, "period": period.value, "from": from_, "to": to,
                "brand_id": brand_id, "engine": engine})
