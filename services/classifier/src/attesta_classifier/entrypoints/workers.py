"""The classifier's worker loops, through the bus: the judge worker judges the parked pairs
that are due (``JudgeDuePairs``, ``service_layer/judge_worker.py`` says why a worker); the alert
evaluator evaluates each week once it closed, and the alert delivery worker sends what fired
(``service_layer/alerting.py``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from attesta_classifier.domain.alert_commands import DeliverDueAlerts, EvaluateClosedPeriods
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


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass


async def run_alert_evaluator(bus: MessageBus, stop: asyncio.Event, *,
                              interval_s: float = 300.0) -> None:
    """Every ``interval_s``, evaluate the last closed week of every workspace that has not been
    evaluated for it yet (``EvaluateClosedPeriods``: once per (workspace, week), keyed in the
    database, so restarts and several instances change nothing). A week closes at Monday
    00:00 UTC; it is evaluated within ``interval_s`` of that."""
    while not stop.is_set():
        try:
            done = [e for e in await bus.handle(EvaluateClosedPeriods(datetime.now(UTC))) if e.done]
            if done:
                log.info("alert rules evaluated", workspaces=len(done),
                         fired=sum(e.fired for e in done))
        except Exception as exc:  # noqa: BLE001 - the worker must outlive outages
            log.warning("alert evaluation failed", error=repr(exc))
        await _pause(stop, interval_s)


async def run_alert_delivery(bus: MessageBus, stop: asyncio.Event, *, batch: int = 20,
                             idle_s: float = 1.0) -> None:
    """Send due alert deliveries, ``batch`` at a time, until ``stop``; an idle pause after an
    empty or failed step (``DeliverDueAlerts``; the claims and retries are in
    ``service_layer/alerting.py``)."""
    while not stop.is_set():
        try:
            busy = (await bus.handle(DeliverDueAlerts(batch)))["claimed"] > 0
        except Exception as exc:  # noqa: BLE001 - the worker must outlive outages
            log.warning("alert delivery step failed", error=repr(exc))
            busy = False
        if not busy:
            await _pause(stop, idle_s)
