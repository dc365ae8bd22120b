"""Background work of the evidence service: the tree-head signer, a loop onto the bus."""

from __future__ import annotations

import asyncio

from attesta_evidence.domain.commands import SignTreeHead
from attesta_platform.bus import MessageBus
from attesta_platform.logs import get_logger

log = get_logger("attesta.evidence.log")


async def run_signer(bus: MessageBus, stop: asyncio.Event, interval_s: float) -> None:
    """Sign new heads every ``interval_s`` while the log grows; outlives outages."""
    while not stop.is_set():
        try:
            await bus.handle(SignTreeHead())
        except Exception as exc:  # noqa: BLE001 - retried next tick
            log.warning("tree head signing failed; retrying", error=repr(exc))
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval_s)
        except TimeoutError:
            pass
