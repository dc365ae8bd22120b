"""Exports of the classifier's internal API: the runs table and the metrics as files.

``GET /v1/exports/runs?format=csv|jsonl`` takes the filters of ``GET /v1/runs`` and streams
the whole result page by page (keyset pages of ``PAGE`` runs through the same
``ListRuns`` the table uses), so a large export never holds more than one page in memory.
CSV has one row per (run, brand) pair with the pair's current class; JSONL one ``RunSummary``
per line; both carry the answer's SHA-256, the ground-truth hash and the Merkle log's leaf index
(``log_index``), what a reader needs to verify a row offline (docs/metrics.md). ``GET /v1/exports/metrics?format=csv|json`` takes the parameters of
``GET /v1/metrics`` (its window, ``group_by`` and segment filters: the same dependency,
``params.MetricsFilters``): CSV has one row per (brand, group, period) with every figure's
value, successes, n, 95 % interval and whether the cell is underpowered; JSON is the
``MetricsResponse`` itself.

Spreadsheet safety: a CSV text cell starting with ``= + - @`` (or tab/CR) is prefixed with
``'`` so a spreadsheet shows it as text instead of running it as a formula (OWASP "CSV
injection"); the JSON(L) forms carry the values unchanged.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from collections.abc import AsyncIterator, Iterable
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from attesta_classifier.domain.commands import ListRuns
from attesta_classifier.entrypoints import views
from attesta_classifier.entrypoints.deps import Bus, Ws
from attesta_classifier.entrypoints.params import MetricsFilters, RunFilters
from attesta_classifier.entrypoints.schemas import PositionFigures
from attesta_contracts.api import classifier as api
from attesta_platform.bus import MessageBus

router = APIRouter(tags=["exports"])
PAGE = 200
FIGURES = ("citation_rate", "share_of_voice", "confabulation_rate", "echo_rate", "absent_rate",
           "score")
RUN_COLUMNS = ("run_id", "recorded_at", "answered_at", "engine", "model", "source",
               "answer_sha256", "brand_id", "status", "citation_class", "decided_by",
               "judge_model", "ground_truth_hash", "reason",
               # Issue #25 item 7 (appended): the Merkle log's leaf of the answer's bytes, empty
               # until the evidence service logged them (docs/metrics.md "Verify an export").
               "log_index")
# The first columns as they always were; then (issue #25/#27, appended so a reader by position
# keeps working) the row's segment values, its distinct prompts, whether each cell is
# underpowered, and the citation rate's bootstrap over prompts.
METRIC_COLUMNS = ("brand_id", "engine", "period_start", "n", "refused", "pending", *(
    f"{f}_{part}" for f in FIGURES for part in ("value", "successes", "n", "ci95_low", "ci95_high")),
    "topic", "persona", "funnel", "branded", "prompts", "underpowered",
    *(f"{f}_underpowered" for f in FIGURES), *(
        f"citation_rate_by_prompt_{part}"
        for part in ("value", "n", "prompts", "ci95_low", "ci95_high")),
    # Issue #25 item 3 (appended too): the position figures (docs/metrics.md "Position").
    "position_answers", "position_named", "position_prompts",
    *(f"position_{fig}_{part}" for fig in ("mean", "first", "weighted_visibility")
      for part in ("value", "n", "ci95_low", "ci95_high", "underpowered")),
    "collection_method")  # issue #25 item 4: rows are split by it
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
    ws: Ws, bus: Bus, filters: RunFilters,
    format: Literal["csv", "jsonl"] = "csv",  # noqa: A002 - the public parameter's name
) -> StreamingResponse:
    pages = _summaries(bus, ListRuns(ws, filters, PAGE))
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
                     b.reason if b else None, s.log_index)
                    for s in page for b in (s.brands or (None,)))
            page = await anext(pages, None)

    media = "text/csv; charset=utf-8" if format == "csv" else "application/x-ndjson"
    return StreamingResponse(body(), media_type=media, headers={
        "Content-Disposition": f'attachment; filename="attesta-runs.{format}"'})


@router.get("/v1/exports/metrics", response_class=StreamingResponse, responses={
    200: {"content": {"text/csv": {}, "application/json": {}},
          "description": "the metrics as a file"}})
async def export_metrics(
    query: MetricsFilters, bus: Bus,
    format: Literal["csv", "json"] = "csv",  # noqa: A002 - the public parameter's name
) -> StreamingResponse:
    response = views.metrics(query, await bus.handle(query))
    rows = response.rows

    async def body() -> AsyncIterator[str]:
        if format == "json":
            yield response.model_dump_json(by_alias=True)
            return
        yield _csv_lines([METRIC_COLUMNS])
        for r in rows:
            rates = [getattr(r, f) for f in FIGURES]
            by_prompt = r.citation_rate_by_prompt
            yield _csv_lines([(
                r.brand_id, r.engine, r.period_start, r.n, r.refused, r.pending,
                *(v for rate in rates for v in (
                    rate.value, rate.successes, rate.n, rate.ci95_low, rate.ci95_high)),
                r.topic, r.persona, r.funnel, r.branded, r.prompts, r.underpowered,
                *(rate.underpowered for rate in rates),
                *((by_prompt.value, by_prompt.n, by_prompt.prompts, by_prompt.ci95_low,
                   by_prompt.ci95_high) if by_prompt else (None,) * 5),
                *_position_cells(r.position), r.collection_method)])

    media = "text/csv; charset=utf-8" if format == "csv" else "application/json"
    return StreamingResponse(body(), media_type=media, headers={
        "Content-Disposition": f'attachment; filename="attesta-metrics.{format}"'})


def _position_cells(p: PositionFigures | None) -> tuple[object, ...]:
    if p is None:
        return (None,) * 18
    return (p.answers, p.named, p.prompts, *(
        v for fig in (p.mean, p.first, p.weighted_visibility)
        for v in (fig.value, fig.n, fig.ci95_low, fig.ci95_high, fig.underpowered)))
