"""The gateway's routes, in the order the app includes them (it is also the order of the paths
in docs/openapi.json): health, chat, every forwarded route (``entrypoints/route_table.py``), then
the gateway's own API-key routes."""

from __future__ import annotations

from fastapi import APIRouter

from attesta_gateway.entrypoints.forwarded import router
from attesta_gateway.entrypoints.route_table import FORWARDED
from attesta_gateway.entrypoints.routers import chat, keys, ops
from attesta_platform.service import ReadyCheck


def all_routers(ready: ReadyCheck, instance: str) -> list[APIRouter]:
    """``ready`` and ``instance`` are the health routes' (the gateway's readiness is its
    Kafka reply consumer's)."""
    return [ops.ops_router(ready, instance), chat.router, router(FORWARDED), keys.router]
