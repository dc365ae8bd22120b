"""``/v1/metrics``: citation rate, share of voice, confabulation rate, score (classifier)."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_gateway.entrypoints.api import AUTH_ERRORS, BRAND_ID_PATTERN, Authed, errors

router = APIRouter(tags=["metrics"])


@router.get("/v1/metrics", response_model=cls.MetricsResponse, response_model_by_alias=True,
            responses=errors(400, *AUTH_ERRORS),
            summary="Citation rate, share of voice, confabulation rate, score")
async def metrics_get(
    caller: Authed,
    period: Annotated[cls.Period, Query()] = cls.Period.WEEK,
    from_: Annotated[cls.IsoTime | None, Query(alias="from")] = None,
    to: Annotated[cls.IsoTime | None, Query()] = None,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
    engine: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    group_by: Annotated[str | None, Query(
        max_length=100, pattern=r"^[a-z, ]*$",
        description="comma-separated dimensions of each row: engine (the default), topic, "
                    "persona, funnel, branded; a dimension left out is summed over (without "
                    "engine: all engines together); empty: one row per brand and period")] = None,
) -> Response:
    return await caller.forward("classifier", "GET", "/v1/metrics",
                                params={"period": period.value, "from": from_, "to": to,
                                        "brand_id": brand_id, "engine": engine,
                                        "group_by": group_by})
