"""The gateway's routers, one module per area. ``ROUTERS`` is the order the app includes them in
(it is also the order of the paths in docs/openapi.json): a new router is appended."""

from __future__ import annotations

from fastapi import APIRouter

from attesta_gateway.entrypoints.routers import (
    brands,
    chat,
    collector,
    evidence,
    exports,
    metrics,
    ops,
    public,
    review,
    runs,
)
from attesta_platform.service import ReadyCheck


def all_routers(ready: ReadyCheck, instance: str) -> list[APIRouter]:
    """``ready`` and ``instance`` are the health routes' (the gateway's readiness is its
    Kafka reply consumer's)."""
    return [ops.ops_router(ready, instance), chat.router, public.router, evidence.router, brands.router, runs.router,
            metrics.router, collector.router, exports.router, review.router]
