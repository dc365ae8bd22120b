"""Query parameters of the HTTP API -> the domain's queries, declared and checked once for the
routes and the exports that share them (a time without a timezone, an empty range, an unknown
dimension are the caller's 422).

``RunFilters`` is the one spelling of the run filter (``GET /v1/runs`` and its export);
``MetricsFilters`` the one of the metrics window and segment (``GET /v1/metrics`` and its
export). Each is a FastAPI dependency whose parameters are the query's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends, Query

from attesta_classifier.domain import commands as c
from attesta_classifier.entrypoints.deps import Ws
from attesta_contracts.api import classifier as api
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_platform.http import ApiError

From = Annotated[api.IsoTime | None, Query(alias="from")]
METHOD = ("only answers collected this way: api, api_with_search, assistant (the engine's "
          "declared collection method)")


def check_times(*pairs: tuple[str, datetime | None]) -> None:
    for name, value in pairs:
        if value is not None and value.tzinfo is None:
            raise ApiError(422, "invalid_request", f"{name}: give a timezone (e.g. Z)")


def run_filter(engine: str | None = None, brand_id: str | None = None,
               status: api.RunStatus | None = None,
               citation_class: CitationClass | None = None,
               decided_by: DecidedBy | None = None, tag: str | None = None,
               source: str | None = None, from_: From = None,
               to: api.IsoTime | None = None,
               collection_method: Annotated[str | None, Query(
                   min_length=1, max_length=100, description=METHOD)] = None) -> c.RunFilter:
    check_times(("from", from_), ("to", to))
    return c.RunFilter(engine, brand_id, status and status.value,
                       citation_class and citation_class.value, source, from_, to,
                       decided_by and decided_by.value, tag, collection_method)


GROUP_BY = ("comma-separated dimensions of each row: engine, topic, persona, funnel, branded; a "
            "dimension left out is summed over (without engine: all engines together); empty: "
            "one row per brand and period")


def metrics_query(
    ws: Ws,
    period: api.Period = api.Period.WEEK,
    brand_id: str | None = None,
    engine: Annotated[str | None, Query(description="only this engine's answers")] = None,
    from_: From = None,
    to: api.IsoTime | None = None,
    group_by: Annotated[str, Query(description=GROUP_BY)] = "engine",
    topic: Annotated[str | None, Query(description="only prompts with this topic tag")] = None,
    persona: Annotated[str | None, Query(description="only prompts with this persona tag")] = None,
    funnel: Annotated[str | None, Query(description="only prompts at this funnel stage")] = None,
    branded: Annotated[bool | None, Query(
        description="only prompts that name (true) or do not name (false) a tracked brand")] = None,
    source: Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="only runs of this source (collector, external, assistant, ...); "
                    "source=assistant gives the ad-hoc chats with the assistant alone")] = None,
    include_chats: Annotated[bool, Query(
        description="count the ad-hoc chats with the assistant (source assistant) too; by "
                    "default a brand's figures are over its prompts only")] = False,
    collection_method: Annotated[str | None, Query(
        min_length=1, max_length=100,
        description=METHOD + "; 'any': every method together. Without it, rows are split by "
                             "collection method (never averaged across methods)")] = None,
) -> c.GetMetrics:
    check_times(("from", from_), ("to", to))
    if from_ and to and to <= from_:
        raise ApiError(422, "invalid_request", "to must be after from")
    dims = [d.strip() for d in group_by.split(",") if d.strip()]
    try:
        dimensions = tuple(dict.fromkeys(api.MetricsDimension(d).value for d in dims))
    except ValueError:
        raise ApiError(422, "invalid_request", "group_by: give any of "
                       + ", ".join(d.value for d in api.MetricsDimension)) from None
    return c.GetMetrics(ws, period.value, brand_id, engine, from_, to, dimensions, topic,
                        persona, funnel, branded, source, include_chats, collection_method)


RunFilters = Annotated[c.RunFilter, Depends(run_filter)]
MetricsFilters = Annotated[c.GetMetrics, Depends(metrics_query)]
