"""The judge worker's loop, through the bus: judge the parked pairs that are due
(``JudgeDuePairs``, ``service_layer/judge_worker.py`` says why a worker) until stopped."""

from __future__ import annotations

import asyncio

from attesta_classifier.domain.commands import JudgeDuePairs
from attesta_platform.bus import MessageBus
from attesta_platform.logs import get_logger

log = get_logger("attesta.classifier.judge_worker")


async def run_judge_worker(bus: MessageBus, stop: asyncio.Event, *, batch: int,
                           idle_s: float = 0.5) -> None:
    """Judge due pairs, ``batch`` at a time, until ``stop``; survives database or judge outages
    (an idle pause after a failed or empty step)."""
    while not stop.is_set():
        try:
            busy = any((await bus.handle(JudgeDuePairs(batch))).values())
        except Exception as exc:  # noqa: BLE001 - the worker must outlive outages
            log.warning("judge worker iteration failed", error=repr(exc))
            busy = False
        if not busy:
            try:
                await asyncio.wait_for(stop.wait(), timeout=idle_s)
            except TimeoutError:
                pass
