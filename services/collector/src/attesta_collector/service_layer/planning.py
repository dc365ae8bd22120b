"""Planning: turn due (schedule, slot)s into collection rows, one per (prompt, engine, sample).

A planner locks the due schedule rows (``FOR UPDATE SKIP LOCKED``, the most overdue first, at
most ``limit`` a round) and plans each in its own savepoint: its slots' records, their
collections and its next due time are written together or not at all, and two instances never
plan one schedule at once (the rows' deterministic ids would make a second plan a no-op anyway).

A schedule that cannot be planned (a stored cron that never fires, a spec that no longer
validates, ...) is rolled back to its savepoint and keeps the error where the API shows it
(``plan_error``, ``plan_error_at``, ``plan_failures``), due again after a growing delay; every
other schedule of the round is planned as usual. The next successful plan, or an update of the
schedule, clears the error.

A slot is *completed* when every sample planned for it was collected or given up. The slot
sweeper (``complete_slots``) marks such a slot completed and stages
``collection.slot-completed.v1`` (its counts and the run ids it produced) in one transaction,
once per slot: the row's ``completed_at`` and the event id derived from the slot make a second
sweep, another instance or a crash before the relay publish it at most once (the relay is
at-least-once; the classifier's evaluation of a slot is idempotent). Samples added to a slot
after it completed (``run-once`` of the same slot after new prompts) announce nothing more.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import ValidationError

from attesta_collector.domain import commands as c
from attesta_collector.domain.model import (
    Cadence,
    CadenceError,
    MissedSlots,
    ScheduleSpec,
    check_cron,
    collection_id,
    due_slots,
    plan_retry_at,
    prompt_matches,
)
from attesta_collector.service_layer.catalog import cadence_of
from attesta_collector.service_layer.collecting import PRODUCER, CollectorTopics
from attesta_collector.service_layer.errors import Conflict, NotFound
from attesta_collector.service_layer.unit_of_work import PlannedCollection, Row, UnitOfWork
from attesta_contracts import derived_id
from attesta_contracts.collection import SlotCompleted
from attesta_platform import outbox
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


async def plan_due(cmd: c.PlanDue, uow: UnitOfWork, now: datetime | None = None,
                   limit: int = 20, max_rounds: int = 10) -> int:
    """Plan every due schedule this instance could lock; returns the new collections.

    A round is one transaction over at most ``limit`` schedules; rounds go on while they come
    back full (up to ``max_rounds``, then the next call goes on), so many schedules due at the
    same minute are planned at once rather than ``limit`` per planner tick."""
    now = now or datetime.now(UTC)
    created = 0
    for _ in range(max_rounds):
        async with uow:
            claimed = await uow.schedules.claim_due(now, limit)
            for schedule in claimed:
                created += await _plan_claimed(uow, schedule, now)
            await uow.commit()
        if len(claimed) < limit:
            break
    return created


async def _plan_claimed(uow: UnitOfWork, schedule: Row, now: datetime) -> int:
    """Plan one claimed schedule in its own savepoint, or keep why it could not be planned."""
    ws, sid = schedule["workspace_id"], schedule["schedule_id"]
    try:
        async with uow.savepoint():
            return await _plan_due_slots(uow, schedule, now)
    except Exception as exc:  # whatever it is, it is this schedule's alone
        reason = _plan_error_reason(exc)
        failures = schedule["plan_failures"] + 1
        retry_at = plan_retry_at(now, failures)
        log.warning("schedule not planned", workspace=ws, schedule=sid, reason=reason,
                    failures=failures, retry_at=retry_at.isoformat(),
                    exc_info=not isinstance(exc, ValueError))
        await uow.schedules.mark_plan_failed(ws, sid, reason, now, retry_at)
        return 0


async def _plan_due_slots(uow: UnitOfWork, schedule: Row, now: datetime) -> int:
    spec = ScheduleSpec.model_validate(schedule["spec"])
    cadence = _checked_cadence(spec, now)
    slots, skipped = due_slots(cadence, schedule["planned_through"], now,
                               MissedSlots(spec.missed_slots), spec.max_catch_up_slots)
    created = 0
    for i, slot in enumerate(slots):
        created += await plan_slot(uow, schedule, slot, skipped if i == 0 else 0, "schedule")
    last = slots[-1] if slots else schedule["planned_through"]
    await uow.schedules.mark_planned(schedule["workspace_id"], schedule["schedule_id"], last,
                                     cadence.next_after(last or now))
    return created


def _checked_cadence(spec: ScheduleSpec, now: datetime) -> Cadence:
    # The API's rule holds for records stored before it: a cron it would refuse is not planned.
    if spec.cron is not None and (problem := check_cron(spec.cron, now)):
        raise CadenceError(problem)
    return cadence_of(spec)


PLAN_ERROR_MAX_CHARS = 1000


def _plan_error_reason(exc: Exception) -> str:
    """What the tenant sees: the rule the spec breaks (its own data); anything else is ours,
    logged with its traceback and not shown (it may name tables or hosts)."""
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        reason = f"the stored schedule is no longer valid: " \
                 f"{'.'.join(str(p) for p in e['loc']) or 'spec'}: {e['msg']}"
    elif isinstance(exc, ValueError):  # CadenceError, croniter's errors
        reason = str(exc)
    else:
        reason = "internal error while planning (logged); it is tried again"
    return reason[:PLAN_ERROR_MAX_CHARS]


async def plan_slot_now(cmd: c.PlanSlotNow, uow: UnitOfWork) -> tuple[datetime, int]:
    """Plan one slot of a schedule at once (``run-once``): ``slot`` or the cadence's current
    slot. Re-running it for the same slot plans nothing new, so it resumes."""
    ws, schedule_id = cmd.ws, cmd.schedule_id
    async with uow:
        schedule = await uow.schedules.get(ws, schedule_id, for_update=True)
        if schedule is None or schedule["retired_at"] is not None:
            raise NotFound("not_found", f"no live schedule {schedule_id}")
        now = datetime.now(UTC)
        try:
            target = cmd.slot or _checked_cadence(ScheduleSpec.model_validate(schedule["spec"]),
                                              now).latest_at_or_before(now)
        except ValueError as exc:  # a stored spec that cannot be planned
            raise Conflict("unplannable_schedule",
                           f"schedule {schedule_id} cannot be planned: "
                           f"{_plan_error_reason(exc)}; change it (PUT)") from None
        new = await plan_slot(uow, schedule, target.astimezone(UTC), 0, "manual")
        await uow.commit()
    return target, new


async def complete_slots(cmd: c.CompleteSlots, uow: UnitOfWork, topics: CollectorTopics) -> int:
    """Announce the slots whose every sample is done: each marked completed and its event staged
    in one transaction (module docstring); returns how many."""
    async with uow:
        done = await uow.schedules.complete_slots(cmd.limit)
        rows = []
        for r in done:
            event = SlotCompleted(
                workspace_id=r["workspace_id"], schedule_id=r["schedule_id"], slot=r["slot"],
                planned=r["planned"], collected=r["collected"], failed=r["failed"],
                run_ids=list(r["run_ids"]), completed_at=r["completed_at"])
            key = f"{event.workspace_id}/{event.schedule_id}/{event.slot.isoformat()}"
            rows.append(outbox.staged(topics.slot_completed, event.schedule_id, event,
                                      producer=PRODUCER, correlation_id=f"slot/{key}",
                                      event_id=derived_id("collector-slot", key)))
        await uow.outbox.add(rows)
        await uow.commit()
    for r in done:
        log.info("slot completed", workspace=r["workspace_id"], schedule=r["schedule_id"],
                 slot=r["slot"].isoformat(), collected=r["collected"], failed=r["failed"])
    return len(done)
