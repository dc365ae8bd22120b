"""A schedule slot is announced once when every planned sample was collected or given up
(issue #25: the classifier evaluates alert rules after each slot): against the in-memory fakes
and real PostgreSQL, nothing while a sample is pending or awaiting our assistant's reply, one
``collection.slot-completed.v1`` with the counts and the run ids once the last one is done, and
nothing more on the next sweep or from a second sweeper at the same time."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from functools import partial

import orjson
import pytest

from attesta_collector.adapters.memory import CollectorState, InMemoryCollectorUnitOfWork
from attesta_collector.bootstrap import unit_of_work_factory
from attesta_collector.domain.commands import CompleteSlots
from attesta_collector.service_layer.collecting import CollectorTopics
from attesta_collector.service_layer.planning import complete_slots
from attesta_collector.service_layer.unit_of_work import Collected, PlannedCollection
from attesta_contracts import Envelope, derived_id
from attesta_contracts.collection import SlotCompleted
from attesta_contracts.topics import SLOT_COMPLETED

WS = "ws-slots"
SLOT = datetime(2026, 12, 4, 9, tzinfo=UTC)
OTHER = datetime(2026, 12, 4, 10, tzinfo=UTC)
TOPICS = CollectorTopics()


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def store(request):
    """(unit of work factory, a function returning the staged slot events)."""
    if request.param == "memory":
        state = CollectorState()

        async def memory_events() -> list[bytes]:
            return [r.value for r in state.outbox if r.topic == SLOT_COMPLETED]

        return partial(InMemoryCollectorUnitOfWork, state), memory_events
    pool = request.getfixturevalue("pool")

    async def pg_events() -> list[bytes]:
        async with pool.acquire() as conn:
            return [bytes(r["value"]) for r in await conn.fetch(
                "SELECT value FROM messaging_outbox WHERE topic = $1 ORDER BY id",
                SLOT_COMPLETED)]

    return unit_of_work_factory(pool), pg_events


def planned(i: int, slot: datetime = SLOT) -> PlannedCollection:
    return PlannedCollection(f"col-{slot:%H}-{i}", WS, "sch", f"pr-{i}", "e1", slot, 0,
                             f"question {i}", ["acme"], "core", {})


def answered(run_id: str) -> Collected:
    raw = run_id.encode()
    return Collected(run_id, "m-1", "a" * 64, hashlib.sha256(raw).hexdigest(), 1.0, None, [])


async def _plan(new_uow, slot: datetime, n: int) -> None:
    async with new_uow() as uow:
        await uow.collections.add([planned(i, slot) for i in range(n)])
        await uow.schedules.add_slot(WS, "sch", slot, n, 0, "schedule")
        await uow.commit()


async def _collect(new_uow, *items: tuple[str, str]) -> None:
    async with new_uow() as uow:
        await uow.collections.store_raws({answered(r).raw_sha256: r.encode() for _, r in items})
        await uow.collections.finish_collected_many([(c, answered(r), 1) for c, r in items])
        await uow.commit()


async def test_a_slot_is_announced_once_when_its_last_sample_is_done(store):
    new_uow, events = store
    sweep = partial(complete_slots, CompleteSlots(), topics=TOPICS)
    await _plan(new_uow, SLOT, 4)
    await _plan(new_uow, OTHER, 1)
    async with new_uow() as uow:  # one sample waits for our assistant's reply
        assert await uow.collections.mark_awaiting("col-09-3")
        await uow.commit()
    await _collect(new_uow, ("col-09-0", "run-b"), ("col-09-1", "run-a"))
    async with new_uow() as uow:
        await uow.collections.finish_failed("col-09-2", "engine down", 3)
        await uow.commit()
    assert await sweep(uow=new_uow()) == 0  # col-09-3 awaits a reply, col-10-0 is pending
    assert await events() == []

    async with new_uow() as uow:
        reply = Collected("run-c", "assistant", "c" * 64, None, None, None, [], "assistant")
        assert await uow.collections.finish_collected("col-09-3", reply, 0, ("awaiting_reply",))
        await uow.commit()
    assert await sweep(uow=new_uow()) == 1
    assert await sweep(uow=new_uow()) == 0  # announced once
    [raw] = await events()
    envelope = Envelope[SlotCompleted].model_validate_json(raw)
    slot = envelope.payload
    assert (slot.workspace_id, slot.schedule_id, slot.slot) == (WS, "sch", SLOT)
    assert (slot.planned, slot.collected, slot.failed) == (4, 3, 1)
    assert slot.run_ids == ["run-a", "run-b", "run-c"]
    assert envelope.event_id == derived_id("collector-slot", f"{WS}/sch/{SLOT.isoformat()}")
    assert orjson.loads(raw)["event_type"] == "SlotCompleted"

    await _collect(new_uow, ("col-10-0", "run-d"))
    assert await sweep(uow=new_uow()) == 1
    assert [Envelope[SlotCompleted].model_validate_json(r).payload.slot
            for r in await events()] == [SLOT, OTHER]


@pytest.mark.integration
async def test_two_sweepers_at_once_announce_a_slot_once(pool):
    new_uow = unit_of_work_factory(pool)
    for hour in range(8):
        slot = datetime(2026, 12, 4, hour, tzinfo=UTC)
        await _plan(new_uow, slot, 2)
        await _collect(new_uow, *((f"col-{slot:%H}-{i}", f"run-{hour}-{i}") for i in range(2)))
    counts = await asyncio.gather(*(complete_slots(CompleteSlots(limit=3), new_uow(), TOPICS)
                                    for _ in range(4)))
    counts += [await complete_slots(CompleteSlots(), new_uow(), TOPICS)]
    assert sum(counts) == 8
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM messaging_outbox WHERE topic = $1",
                                   SLOT_COMPLETED) == 8
        assert await conn.fetchval(
            "SELECT count(*) FROM planned_slots WHERE completed_at IS NULL") == 0
