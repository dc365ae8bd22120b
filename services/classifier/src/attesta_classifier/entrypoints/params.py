"""Query parameters of the HTTP API -> the domain's queries, checked once for the routes and
the exports that share them (a time without a timezone, an empty range, an unknown dimension
are the caller's 422)."""

from __future__ import annotations

from datetime import datetime

from attesta_classifier.domain import commands as c
from attesta_contracts.api import classifier as api
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_platform.http import ApiError


def check_times(*pairs: tuple[str, datetime | None]) -> None:
    for name, value in pairs:
        if value is not None and value.tzinfo is None:
            raise ApiError(422, "invalid_request", f"{name}: give a timezone (e.g. Z)")


def run_filter(engine: str | None, brand_id: str | None, status: api.RunStatus | None,
               citation_class: CitationClass | None, decided_by: DecidedBy | None,
               tag: str | None, source: str | None, from_: datetime | None,
               to: datetime | None) -> c.RunFilter:
    check_times(("from", from_), ("to", to))
    return c.RunFilter(engine, brand_id, status and status.value,
                       citation_class and citation_class.value, source, from_, to,
                       decided_by and decided_by.value, tag)


def metrics_query(ws: str, period: api.Period, brand_id: str | None, engine: str | None,
                  from_: datetime | None, to: datetime | None,
                  group_by: str = "engine") -> c.GetMetrics:
    check_times(("from", from_), ("to", to))
    if from_ and to and to <= from_:
        raise ApiError(422, "invalid_request", "to must be after from")
    dims = [d.strip() for d in group_by.split(",") if d.strip()]
    try:
        dimensions = tuple(dict.fromkeys(api.MetricsDimension(d).value for d in dims))
    except ValueError:
        raise ApiError(422, "invalid_request", "group_by: give any of "
                       + ", ".join(d.value for d in api.MetricsDimension)) from None
    return c.GetMetrics(ws, period.value, brand_id, engine, from_, to, dimensions)
