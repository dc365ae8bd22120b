"""Health and readiness (open; Prometheus ``/metrics`` is added by the app factory where the
settings allow it)."""

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from attesta_gateway.entrypoints.api import errors
from attesta_platform.http import error_response

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    instance: str


@router.get("/healthz", response_model=Health)
async def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", response_model=Readiness, responses=errors(503))
async def readyz(request: Request) -> Any:
    state = request.app.state
    if not state.ready:
        return error_response(503, "not_ready", "Kafka reply consumer not assigned yet",
                              {"Retry-After": "1"})
    return {"status": "ready", "instance": state.gateway.settings.instance_id}
