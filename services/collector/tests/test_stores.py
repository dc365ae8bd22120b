"""One contract for the collector's repositories and unit of work, run against the in-memory
fakes (``adapters/memory.py``) and against PostgreSQL (a fresh migrated database per test), so
the fakes the service layer's unit tests use behave like production."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from attesta_collector.adapters.memory import CollectorState, InMemoryCollectorUnitOfWork
from attesta_collector.bootstrap import unit_of_work_factory
from attesta_collector.service_layer.unit_of_work import Collected, PlannedCollection
from attesta_platform.outbox import OutboxRow

WS = "ws-1"
SLOT = datetime(2026, 12, 4, 9, tzinfo=UTC)


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def new_uow(request):
    """A factory of units of work on one fresh store."""
    if request.param == "memory":
        return partial(InMemoryCollectorUnitOfWork, CollectorState())
    return unit_of_work_factory(request.getfixturevalue("pool"))


def prompt(text: str, prompt_set: str = "core", **extra) -> dict:
    return {"workspace_id": WS, "prompt_id": f"pr-{text}", "prompt_set": prompt_set,
            "text": text, "locale": "en", "tags": {}, "brand_ids": [], "branded": False,
            "branded_brand_ids": [], "prompt_key": f"{prompt_set}|{text}", **extra}


def planned(i: int, slot: datetime = SLOT, engine_id: str = "e1", ws: str = WS
            ) -> PlannedCollection:
    return PlannedCollection(f"col-{engine_id}-{slot:%H}-{i}", ws, "sch", f"pr-{i}", engine_id,
                             slot, i, f"question {i}", ["acme"], "core", {"topic": "t"})


def answered(raw: bytes) -> Collected:
    return Collected("run-x", "m-1", "a" * 64, hashlib.sha256(raw).hexdigest(), 12.5,
                     {"total_tokens": 3}, [{"domain": "acme.example"}])


async def test_commit_keeps_and_leaving_without_commit_rolls_back(new_uow):
    async with new_uow() as uow:
        await uow.prompts.add(prompt("kept"))
        await uow.commit()
    async with new_uow() as uow:
        await uow.prompts.add(prompt("dropped"))
    with pytest.raises(RuntimeError):
        async with new_uow() as uow:
            await uow.engines.add(WS, "e", {"name": "e"})
            raise RuntimeError("boom")
    async with new_uow().read() as uow:
        assert [p["text"] for p in await uow.prompts.live(WS)] == ["kept"]
        assert await uow.engines.list(None) == []


async def test_prompts_are_unique_by_key_filterable_and_retired_not_deleted(new_uow):
    async with new_uow() as uow:
        a = await uow.prompts.add(prompt("a", tags={"topic": "sleep"}, branded=True))
        assert a is not None and a["retired_at"] is None and a["created_at"] is not None
        assert await uow.prompts.add(prompt("a") | {"prompt_id": "pr-other"}) is None
        assert (await uow.prompts.by_key(WS, "core|a"))["prompt_id"] == "pr-a"
        await uow.prompts.add(prompt("b", prompt_set="other"))
        await uow.prompts.add(prompt("c"))
        # A change to another prompt's key is refused, and the unit of work goes on.
        assert await uow.prompts.update(WS, "pr-c", prompt("a") | {"prompt_id": "pr-c"}) is None
        changed = await uow.prompts.update(WS, "pr-c", prompt("c2") | {"prompt_id": "pr-c"})
        assert changed["text"] == "c2" and changed["prompt_id"] == "pr-c"
        first = await uow.prompts.retire(WS, "pr-b")
        await asyncio.sleep(0.01)
        assert (await uow.prompts.retire(WS, "pr-b"))["retired_at"] == first["retired_at"]
        assert await uow.prompts.retire(WS, "pr-ghost") is None
        await uow.commit()
    async with new_uow().read() as uow:
        assert [p["prompt_id"] for p in await uow.prompts.live(WS)] == ["pr-a", "pr-c"]
        pick = partial(uow.prompts.list, WS, prompt_set=None, branded=None, tag=None,
                       include_retired=False, limit=10, after=None)
        assert [p["prompt_id"] for p in await pick(include_retired=True)] == [
            "pr-a", "pr-b", "pr-c"]
        assert [p["prompt_id"] for p in await pick(branded=True)] == ["pr-a"]
        assert [p["prompt_id"] for p in await pick(tag="sleep")] == ["pr-a"]
        assert [p["prompt_id"] for p in await pick(prompt_set="other",
                                                   include_retired=True)] == ["pr-b"]
        assert [p["prompt_id"] for p in await pick(after="pr-a", limit=1)] == ["pr-c"]
        assert (await uow.prompts.get(WS, "pr-c", for_update=False))["text"] == "c2"
        assert await uow.prompts.get("ws-other", "pr-a") is None


async def test_engines_and_which_have_claimable_work(new_uow):
    async with new_uow() as uow:
        assert (await uow.engines.add(WS, "e1", {"name": "one"}))["spec"] == {"name": "one"}
        assert await uow.engines.add(WS, "e1", {"name": "again"}) is None
        await uow.engines.add(WS, "e2", {"name": "two"})
        await uow.engines.add("ws-2", "e1", {"name": "elsewhere"})
        assert (await uow.engines.replace(WS, "e2", {"name": "2"}))["spec"] == {"name": "2"}
        assert await uow.engines.replace(WS, "ghost", {}) is None
        assert (await uow.engines.retire(WS, "e2"))["retired_at"] is not None
        await uow.collections.add([planned(1, engine_id="e1")])
        await uow.commit()
    async with new_uow().read() as uow:
        assert [(e["workspace_id"], e["engine_id"]) for e in await uow.engines.list(None)] == [
            ("ws-1", "e1"), ("ws-1", "e2"), ("ws-2", "e1")]
        assert [e["engine_id"] for e in await uow.engines.list("ws-2")] == ["e1"]
        assert [(e["workspace_id"], e["engine_id"]) for e in await uow.engines.with_pending()] == [
            ("ws-1", "e1")]


async def test_schedules_due_planned_slots_and_retire(new_uow):
    now = datetime.now(UTC)
    async with new_uow() as uow:
        assert await uow.schedules.add(WS, "late", {"interval_s": 60}, True, now - timedelta(1))
        assert await uow.schedules.add(WS, "late", {}, True, now) is None
        await uow.schedules.add(WS, "later", {"interval_s": 60}, True, now - timedelta(hours=1))
        await uow.schedules.add(WS, "future", {}, True, now + timedelta(1))
        await uow.schedules.add(WS, "off", {}, False, now - timedelta(1))
        await uow.schedules.add(WS, "gone", {}, True, now - timedelta(1))
        assert (await uow.schedules.retire(WS, "gone"))["active"] is False
        await uow.commit()
    async with new_uow() as uow:
        due = await uow.schedules.claim_due(now, 10)
        assert [s["schedule_id"] for s in due] == ["late", "later"]
        assert [s["schedule_id"] for s in await uow.schedules.claim_due(now, 1)] == ["late"]
        await uow.schedules.mark_planned(WS, "late", SLOT, SLOT + timedelta(hours=1))
        await uow.schedules.mark_planned(WS, "late", SLOT - timedelta(hours=5), now)
        assert await uow.schedules.add_slot(WS, "late", SLOT, 3, 2, "schedule")
        assert not await uow.schedules.add_slot(WS, "late", SLOT, 3, 0, "manual")
        await uow.commit()
    async with new_uow().read() as uow:
        late = await uow.schedules.get(WS, "late")
        assert late["planned_through"] == SLOT and late["next_due_at"] == now  # greatest()
        changed = await uow.schedules.update(WS, "late", {"cron": "0 9 * * *"}, False, now)
        assert changed["spec"] == {"cron": "0 9 * * *"} and changed["active"] is False
        assert [s["schedule_id"] for s in await uow.schedules.list(WS)] == [
            "future", "gone", "late", "later", "off"]
        assert await uow.schedules.update(WS, "ghost", {}, True, now) is None


async def test_collections_are_claimed_by_lease_and_finished_once(new_uow):
    async with new_uow() as uow:
        assert await uow.collections.add([planned(i) for i in range(3)]
                                         + [planned(0, SLOT - timedelta(hours=1))]) == 4
        assert await uow.collections.add([planned(0), planned(3)]) == 1  # a re-plan keeps rows
        await uow.commit()
    async with new_uow().read() as uow:
        claimed = await uow.collections.claim(WS, "e1", "me", 0.3, 2)
        # oldest slot first, then by id; leased rows are not claimed again
        assert [c["collection_id"] for c in claimed] == ["col-e1-08-0", "col-e1-09-0"]
        assert all(c["claims"] == 1 and c["lease_owner"] == "me" for c in claimed)
        assert [c["collection_id"] for c in await uow.collections.claim(
            WS, "e1", "you", 30, 10, "sch")] == ["col-e1-09-1", "col-e1-09-2", "col-e1-09-3"]
        assert await uow.collections.claim(WS, "e1", "you", 30, 10, "other") == []
    await asyncio.sleep(0.5)  # my leases expire: claimable again
    async with new_uow().read() as uow:
        again = await uow.collections.claim(WS, "e1", "you", 30, 10)
        assert [(c["collection_id"], c["claims"]) for c in again] == [
            ("col-e1-08-0", 2), ("col-e1-09-0", 2)]
    raw = b'{"choices": []}'
    async with new_uow() as uow:
        await uow.collections.store_raws({answered(raw).raw_sha256: raw})
        await uow.collections.store_raws({answered(raw).raw_sha256: raw})  # known: kept
        moved = await uow.collections.finish_collected_many(
            [("col-e1-09-0", answered(raw), 2), ("col-e1-09-1", answered(raw), 1)])
        assert moved == {"col-e1-09-0", "col-e1-09-1"}
        assert await uow.collections.finish_collected_many(
            [("col-e1-09-0", answered(raw), 1)]) == set()
        failed = await uow.collections.finish_failed("col-e1-09-2", "x" * 5000, 3)
        assert failed["status"] == "failed" and len(failed["last_error"]) == 4000
        assert failed["attempts"] == 3 and failed["lease_owner"] is None
        assert await uow.collections.finish_failed("col-e1-09-2", "again", 1) is None
        await uow.commit()
    async with new_uow().read() as uow:
        got = await uow.collections.get("col-e1-09-0")
        assert (got["status"], got["attempts"], got["run_id"], got["usage"], got["sources"]) == (
            "collected", 2, "run-x", {"total_tokens": 3}, [{"domain": "acme.example"}])
        assert got["lease_until"] is None and got["finished_at"] is not None
        assert got["prompt_tags"] == {"topic": "t"} and list(got["brand_ids"]) == ["acme"]
        assert await uow.collections.raw(got["raw_sha256"]) == raw
        assert await uow.collections.raw("0" * 64) is None
        assert await uow.collections.progress(WS, "sch", SLOT) == {
            "collected": 2, "failed": 1, "pending": 1}
        pick = partial(uow.collections.list, WS, schedule_id="sch", status=None, slot=SLOT,
                       limit=10, after=None)
        assert [c["collection_id"] for c in await pick(status="collected")] == [
            "col-e1-09-0", "col-e1-09-1"]
        assert [c["collection_id"] for c in await pick(after="col-e1-09-1", limit=1)] == [
            "col-e1-09-2"]
        assert await uow.collections.get("col-ghost") is None


async def test_awaiting_replies_expire_and_link_once(new_uow):
    async with new_uow() as uow:
        await uow.collections.add([planned(0), planned(1)])
        assert await uow.collections.mark_awaiting("col-e1-09-0")
        assert not await uow.collections.mark_awaiting("col-e1-09-0")
        await uow.commit()
    async with new_uow().read() as uow:
        assert await uow.collections.expired_awaiting(60, 10) == []
    await asyncio.sleep(0.05)
    async with new_uow() as uow:
        [expired] = await uow.collections.expired_awaiting(0.01, 10)
        assert expired["collection_id"] == "col-e1-09-0" and expired["attempts"] == 1
        assert expired["requested_at"] is not None
        reply = Collected("run-a", "assistant", "b" * 64, None, None, None, [])
        assert not await uow.collections.finish_collected("col-e1-09-0", reply, 0)  # not pending
        assert await uow.collections.finish_collected("col-e1-09-0", reply, 0,
                                                      ("awaiting_reply", "failed"))
        assert not await uow.collections.finish_collected("col-e1-09-0", reply, 0,
                                                          ("awaiting_reply", "failed"))
        await uow.commit()
    async with new_uow().read() as uow:
        assert (await uow.collections.get("col-e1-09-0"))["run_id"] == "run-a"


async def test_the_outbox_is_part_of_the_unit_of_work(new_uow):
    row = OutboxRow("t.v1", "k", uuid.uuid4(), b"{}")
    async with new_uow() as uow:
        await uow.outbox.add([row])
    async with new_uow() as uow:  # the first rolled back: the event id is free
        await uow.outbox.add_new([row])
        await uow.outbox.add([row])  # idempotent per event id
        await uow.commit()
