"""The classifier's answers that went beyond the shared API contract in issue #25 (the position
of the brand in each answer, the run's source and collection method, model build changes) are
now in the contract itself (``attesta_contracts.api.classifier``), so the gateway's OpenAPI
document describes them. These names stay for the routes and views that use them: one model
each, the contract's.
"""

from __future__ import annotations

from attesta_contracts.api import classifier as api

PositionFigures = api.PositionFigures
MetricRow = api.MetricRow
MetricsSegment = api.MetricsSegment
BuildChange = api.BuildChange
MetricsResponse = api.MetricsResponse
PositionedBrandState = api.PositionedBrandState
RunDetail = api.RunView

__all__ = ["BuildChange", "MetricRow", "MetricsResponse", "MetricsSegment", "PositionFigures",
           "PositionedBrandState", "RunDetail"]
