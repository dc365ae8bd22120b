"""The gateway's routers, one module per area. ``ROUTERS`` is the order the app includes them in
(it is also the order of the paths in docs/openapi.json): a new router is appended."""

from __future__ import annotations

from fastapi import APIRouter


def all_routers() -> list[APIRouter]:
    from attesta_gateway.entrypoints.routers import (
        brands,
        chat,
        collector,
        evidence,
        exports,
        metrics,
        ops,
        public,
        runs,
    )

    return [ops.router, chat.router, public.router, evidence.router, brands.router, runs.router,
            metrics.router, collector.router, exports.router]
