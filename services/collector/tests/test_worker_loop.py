"""The collecting loop outlives whatever a claiming round does: it runs as a background task
nobody awaits until shutdown, so an exception escaping it (or a claim hanging on a connection
PostgreSQL dropped) would stop all collecting silently. Found by the fault harness
(scripts/faults.py): after a PostgreSQL stop one collector never claimed again and 114 planned
samples stayed pending."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from attesta_collector.adapters.memory import InMemoryCollectorUnitOfWork
from attesta_collector.service_layer.collecting import Collector, CollectorLimits

pytestmark = pytest.mark.unit


async def test_the_loop_survives_errors_and_hangs_and_keeps_claiming():
    stop = asyncio.Event()
    calls: list[str] = []

    async def claim(schedule_id=None) -> int:
        calls.append("claim")
        if len(calls) == 1:
            raise asyncpg.exceptions.InternalClientError("pool in a bad state")
        if len(calls) == 2:
            await asyncio.Event().wait()  # hangs: the round is abandoned after the timeout
        if len(calls) == 3:
            raise RuntimeError("anything else")
        stop.set()
        return 0

    collector = Collector(new_uow=InMemoryCollectorUnitOfWork, owner="test",
                          engines=lambda ws, spec: None,
                          limits=CollectorLimits(poll_s=0.01, claim_timeout_s=0.2))
    collector.claim_and_start = claim
    await asyncio.wait_for(collector.run(stop), timeout=10)
    assert len(calls) == 4
