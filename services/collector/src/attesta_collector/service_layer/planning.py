"""Planning: turn due (schedule, slot)s into collection rows, one per (prompt, engine, sample).

A planner locks the due schedule row (``FOR UPDATE SKIP LOCKED``), writes the slot's record, its
collections and the schedule's next due time in one transaction: a crash plans all or nothing,
and two instances never plan one schedule at once (the rows' deterministic ids would make a
second plan a no-op anyway).
"""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg

from attesta_collector.adapters import postgres as db
from attesta_collector.domain.model import (
    MissedSlots,
    ScheduleSpec,
    collection_id,
    due_slots,
    prompt_matches,
)
from attesta_collector.service_layer.catalog import CatalogError, cadence_of
from attesta_platform.logs import get_logger

log = get_logger("attesta.collector.planning")


async def plan_slot(conn: asyncpg.Connection, schedule: asyncpg.Record, slot: datetime,
                    skipped_before: int, trigger: str) -> int:
    """Write one slot's collections (inside the caller's transaction); returns how many are new."""
    spec = ScheduleSpec.model_validate(schedule["spec"])
    ws, sid = schedule["workspace_id"], schedule["schedule_id"]
    prompts = [p for p in await db.live_prompts(conn, ws)
               if prompt_matches(p["prompt_set"], p["tags"], spec.prompt_sets, spec.prompt_tags)]
    engines = []
    for engine_id in spec.engine_ids:
        row = await db.get_engine(conn, ws, engine_id)
        if row is not None and row["retired_at"] is None:
            engines.append(engine_id)
    rows = [(collection_id(sid, p["prompt_id"], e, slot, k), ws, sid, p["prompt_id"], e, slot, k,
             p["text"], list(p["brand_ids"]), p["prompt_set"], dict(p["tags"] or {}))
            for p in prompts for e in engines for k in range(spec.samples)]
    new = await db.insert_collections(conn, rows)
    await db.insert_planned_slot(conn, ws, sid, slot, len(rows), skipped_before, trigger)
    log.info("slot planned", workspace=ws, schedule=sid, slot=slot.isoformat(),
             collections=len(rows), new=new, skipped_before=skipped_before, trigger=trigger)
    return new


async def plan_due(pool: asyncpg.Pool, now: datetime | None = None, limit: int = 20) -> int:
    """Plan every due schedule this instance could lock; returns the new collections."""
    now = now or datetime.now(UTC)
    created = 0
    async with pool.acquire() as conn, conn.transaction():
        for schedule in await db.claim_due_schedules(conn, now, limit):
            spec = ScheduleSpec.model_validate(schedule["spec"])
            cadence = cadence_of(spec)
            slots, skipped = due_slots(cadence, schedule["planned_through"], now,
                                       MissedSlots(spec.missed_slots), spec.max_catch_up_slots)
            for i, slot in enumerate(slots):
                created += await plan_slot(conn, schedule, slot, skipped if i == 0 else 0,
                                           "schedule")
            last = slots[-1] if slots else schedule["planned_through"]
            await db.mark_planned(conn, schedule["workspace_id"], schedule["schedule_id"], last,
                                  cadence.next_after(last or now))
    return created


async def plan_now(pool: asyncpg.Pool, ws: str, schedule_id: str,
                   slot: datetime | None = None) -> tuple[datetime, int]:
    """Plan one slot of a schedule at once (``run-once``): ``slot`` or the cadence's current
    slot. Re-running it for the same slot plans nothing new, so it resumes."""
    async with pool.acquire() as conn, conn.transaction():
        schedule = await db.get_schedule(conn, ws, schedule_id, for_update=True)
        if schedule is None or schedule["retired_at"] is not None:
            raise CatalogError(404, "not_found", f"no live schedule {schedule_id}")
        target = slot or cadence_of(schedule["spec"]).latest_at_or_before(datetime.now(UTC))
        return target, await plan_slot(conn, schedule, target.astimezone(UTC), 0, "manual")
