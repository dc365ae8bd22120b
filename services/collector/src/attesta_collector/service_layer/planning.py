"""Planning: turn due (schedule, slot)s into collection rows, one per (prompt, engine, sample).

A planner locks the due schedule row (``FOR UPDATE SKIP LOCKED``), writes the slot's record, its
collections and the schedule's next due time in one transaction: a crash plans all or nothing,
and two instances never plan one schedule at once (the rows' deterministic ids would make a
second plan a no-op anyway).
"""

from __future__ import annotations

from datetime import UTC, datetime

from attesta_collector.domain.model import (
    MissedSlots,
    ScheduleSpec,
    collection_id,
    due_slots,
    prompt_matches,
)
from attesta_collector.service_layer.catalog import CatalogError, cadence_of
from attesta_collector.service_layer.unit_of_work import PlannedCollection, Row, UnitOfWork
from attesta_platform.logs import get_logger

log = get_logger("attesta.collector.planning")


async def plan_slot(uow: UnitOfWork, schedule: Row, slot: datetime, skipped_before: int,
                    trigger: str) -> int:
    """Write one slot's collections (inside the caller's unit of work); returns how many are
    new."""
    spec = ScheduleSpec.model_validate(schedule["spec"])
    ws, sid = schedule["workspace_id"], schedule["schedule_id"]
    prompts = [p for p in await uow.prompts.live(ws)
               if prompt_matches(p["prompt_set"], p["tags"], spec.prompt_sets, spec.prompt_tags)]
    engines = []
    for engine_id in spec.engine_ids:
        row = await uow.engines.get(ws, engine_id)
        if row is not None and row["retired_at"] is None:
            engines.append(engine_id)
    planned = [PlannedCollection(collection_id(sid, p["prompt_id"], e, slot, k), ws, sid,
                                 p["prompt_id"], e, slot, k, p["text"], list(p["brand_ids"]),
                                 p["prompt_set"], dict(p["tags"] or {}))
               for p in prompts for e in engines for k in range(spec.samples)]
    new = await uow.collections.add(planned)
    await uow.schedules.add_slot(ws, sid, slot, len(planned), skipped_before, trigger)
    log.info("slot planned", workspace=ws, schedule=sid, slot=slot.isoformat(),
             collections=len(planned), new=new, skipped_before=skipped_before, trigger=trigger)
    return new


async def plan_due(uow: UnitOfWork, now: datetime | None = None, limit: int = 20) -> int:
    """Plan every due schedule this instance could lock; returns the new collections."""
    now = now or datetime.now(UTC)
    created = 0
    async with uow:
        for schedule in await uow.schedules.claim_due(now, limit):
            spec = ScheduleSpec.model_validate(schedule["spec"])
            cadence = cadence_of(spec)
            slots, skipped = due_slots(cadence, schedule["planned_through"], now,
                                       MissedSlots(spec.missed_slots), spec.max_catch_up_slots)
            for i, slot in enumerate(slots):
                created += await plan_slot(uow, schedule, slot, skipped if i == 0 else 0,
                                           "schedule")
            last = slots[-1] if slots else schedule["planned_through"]
            await uow.schedules.mark_planned(schedule["workspace_id"], schedule["schedule_id"],
                                             last, cadence.next_after(last or now))
        await uow.commit()
    return created


async def plan_now(uow: UnitOfWork, ws: str, schedule_id: str,
                   slot: datetime | None = None) -> tuple[datetime, int]:
    """Plan one slot of a schedule at once (``run-once``): ``slot`` or the cadence's current
    slot. Re-running it for the same slot plans nothing new, so it resumes."""
    async with uow:
        schedule = await uow.schedules.get(ws, schedule_id, for_update=True)
        if schedule is None or schedule["retired_at"] is not None:
            raise CatalogError(404, "not_found", f"no live schedule {schedule_id}")
        target = slot or cadence_of(schedule["spec"]).latest_at_or_before(datetime.now(UTC))
        new = await plan_slot(uow, schedule, target.astimezone(UTC), 0, "manual")
        await uow.commit()
    return target, new
