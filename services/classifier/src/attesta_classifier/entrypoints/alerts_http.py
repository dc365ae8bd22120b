"""The classifier's alert routes (issue #25): rules, channels, fired alerts and their delivery
log. Routes are adapters onto the bus, like ``entrypoints/http.py``'s; this router is included
by ``create_app``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["alerts"])
