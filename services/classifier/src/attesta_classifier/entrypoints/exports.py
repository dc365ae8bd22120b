"""Exports of the classifier's internal API: the runs table and the metrics as files.

``GET /v1/exports/runs?format=csv|jsonl`` takes the filters of ``GET /v1/runs`` and streams
the whole result page by page (keyset pages of ``PAGE`` runs through the same
``ListRuns`` the table uses), so a large export never holds more than one page in memory.
CSV has one row per (run, brand) pair with the pair's current class; JSONL one ``RunSummary``
per line. ``GET /v1/exports/metrics?format=csv|json`` takes the parameters of
``GET /v1/metrics``: CSV has one row per (brand, engine, period) with every figure's value,
successes, n and 95 % interval; JSON is the ``MetricsResponse`` itself.

Spreadsheet safety: a CSV text cell starting with ``= + - @`` (or tab/CR) is prefixed with
``'`` so a spreadsheet shows it as text instead of running it as a formula (OWASP "CSV
injection"); the JSON(L) forms carry the values unchanged.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from collections.abc import AsyncIterator, Iterable
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from attesta_classifier.domain.commands import ListRuns
from attesta_classifier.entrypoints import views
from attesta_classifier.entrypoints.deps import Bus, Ws
from attesta_classifier.entrypoints.params import metrics_query, run_filter
from attesta_contracts.api import classifier as api
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_platform.bus import MessageBus

router = APIRouter(tags=["exports"])
PAGE = 200
FIGURES = ("citation_rate", "share_of_voice", "confabulation_rate", "echo_rate", "absent_rate",
           "score")
RUN_COLUMNS = ("run_id", "recorded_at", "answered_at", "engine", "model", "source",
               "answer_sha256", "brand_id", "status", "citation_class", "decided_by",
               "judge_model", "ground_truth_hash", "reason")
METRIC_COLUMNS = ("brand_id", "engine", "period_start", "n", "refused", "pending", *(
    f"{f}_{part}" for f in FIGURES for part in ("value", "successes", "n", "ci95_low", "ci95_high")))
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return value


def _csv_lines(rows: Iterable[Iterable[object]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue()


async def _summaries(bus: MessageBus, query: ListRuns) -> AsyncIterator[list[api.RunSummary]]:
    while True:
        items, cursor = await bus.handle(query)
        yield [views.run_summary(i) for i in items]
        if cursor is None:
            return
        query = replace(query, cursor=cursor)


@router.get("/v1/exports/runs", response_class=StreamingResponse, responses={
    200: {"content": {"text/csv": {}, "application/x-ndjson": {}},
          "description": "the runs, streamed"}})
async def export_runs(
    ws: Ws, bus: Bus,
    format: Literal["csv", "jsonl"] = "csv",  # noqa: A002 - the public parameter's name
    engine: str | None = None,
    brand_id: str | None = None,
    status: api.RunStatus | None = None,
    citation_class: CitationClass | None = None,
    decided_by: DecidedBy | None = None,
    tag: str | None = None,
    source: str | None = None,
    from_: Annotated[api.IsoTime | None, Query(alias="from")] = None,
    to: api.IsoTime | None = None,
) -> StreamingResponse:
    pages = _summaries(bus, ListRuns(ws, run_filter(
        engine, brand_id, status, citation_class, decided_by, tag, source, from_, to), PAGE))
    first = await anext(pages)  # errors (e.g. a bad filter) surface before the 200 is sent

    async def body() -> AsyncIterator[str]:
        page: list[api.RunSummary] | None = first
        if format == "csv":
            yield _csv_lines([RUN_COLUMNS])
        while page is not None:
            if format == "jsonl":
                yield "".join(s.model_dump_json() + "\n" for s in page)
            else:
                yield _csv_lines(
                    (s.run_id, s.recorded_at, s.answered_at, s.engine, s.model, s.source,
                     s.answer_sha256, b.brand_id if b else None, b.status.value if b else None,
                     b.citation_class.value if b and b.citation_class else None,
                     b.decided_by.value if b and b.decided_by else None,
                     b.judge_model if b else None, b.ground_truth_hash if b else None,
                     b.reason if b else None)
                    for s in page for b in (s.brands or (None,)))
            page = await anext(pages, None)

    media = "text/csv; charset=utf-8" if format == "csv" else "application/x-ndjson"
    return StreamingResponse(body(), media_type=media, headers={
        "Content-Disposition": f'attachment; filename="attesta-runs.{format}"'})


@router.get("/v1/exports/metrics", response_class=StreamingResponse, responses={
    200: {"content": {"text/csv": {}, "application/json": {}},
          "description": "the metrics as a file"}})
async def export_metrics(
    ws: Ws, bus: Bus,
    format: Literal["csv", "json"] = "csv",  # noqa: A002 - the public parameter's name
    period: api.Period = api.Period.WEEK,
    brand_id: str | None = None,
    engine: str | None = None,
    from_: Annotated[api.IsoTime | None, Query(alias="from")] = None,
    to: api.IsoTime | None = None,
) -> StreamingResponse:
    rows = [api.MetricRow(**r) for r in await bus.handle(
        metrics_query(ws, period, brand_id, engine, from_, to))]

    async def body() -> AsyncIterator[str]:
        if format == "json":
            yield api.MetricsResponse(period=period, **{"from": from_}, to=to,
                                      rows=rows).model_dump_json(by_alias=True)
            return
        yield _csv_lines([METRIC_COLUMNS])
        for r in rows:
            rates = [getattr(r, f) for f in FIGURES]
            yield _csv_lines([(r.brand_id, r.engine, r.period_start, r.n, r.refused, r.pending,
                               *(v for rate in rates for v in (
                                   rate.value, rate.successes, rate.n, rate.ci95_low,
                                   rate.ci95_high)))])

    media = "text/csv; charset=utf-8" if format == "csv" else "application/json"
    return StreamingResponse(body(), media_type=media, headers={
        "Content-Disposition": f'attachment; filename="attesta-metrics.{format}"'})
