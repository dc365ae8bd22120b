"""Health and readiness (open, and in the OpenAPI document): the platform's one implementation,
declared on the public edge. Prometheus ``/metrics`` is added by the app factory where the
settings allow it, never here."""

from fastapi import APIRouter

from attesta_gateway.entrypoints.api import errors
from attesta_platform.service import ReadyCheck, add_health_routes


def ops_router(ready: ReadyCheck, instance: str) -> APIRouter:
    router = APIRouter(tags=["operations"])
    add_health_routes(router, "gateway", ready, instance=instance, documented=errors(503),
                      metrics=False)
    return router
