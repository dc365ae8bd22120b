"""Issue #23: a schedule cannot stall the planner.

A cron that never fires (or fires less than once a year, or is not ASCII cron syntax) is a 422
at create and at update. A schedule stored before that check, which the planner then cannot
plan, is rolled back to its own savepoint and keeps its error (visible in the API), due again
after a growing delay, while every other workspace's schedule is planned in the same round; a
fix clears the error. The planner runs on a real PostgreSQL; the same rules on the in-memory
fakes where marked."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from functools import partial

import httpx
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.adapters.memory import CollectorState, InMemoryCollectorUnitOfWork
from attesta_collector.domain.commands import CreatePrompt, CreateSchedule, PlanDue
from attesta_collector.domain.model import (
    CRON_HORIZON,
    PLAN_RETRY_MAX,
    SKIP_COUNT_CAP,
    Cadence,
    CadenceError,
    MissedSlots,
    check_cron,
    due_slots,
    plan_retry_at,
)
from attesta_collector.bootstrap import build_bus
from attesta_collector.entrypoints.http import create_app
from attesta_collector.service_layer.planning import plan_due
from attesta_testing.collector import INTERNAL_TOKEN, engine_checks, random_box

NOW = datetime(2026, 12, 4, 10, 7, tzinfo=UTC)
NEVER = ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30,31 2 *"]
LEAP_DAY = "0 0 29 2 *"
NOT_ASCII = ["\u0660 \u0660 * * *",  # Arabic-Indic zeros: croniter reads them as 0
             "\uff10 9 * * *",  # a fullwidth zero
             "0\u2003 9 * * *",  # an em space between fields
             "R 9 * * *"]  # croniter's random minute: a slot that moves at every computation


# -- the rules, pure ---------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("cron", [*NEVER, LEAP_DAY])
def test_a_cron_that_does_not_fire_every_year_is_refused_on_any_date(cron):
    # 29 February is refused too: its previous and next occurrences are four years apart, so
    # they are never both within the 366-day horizon, whatever the date of the request.
    for now in (NOW, datetime(2028, 2, 29, 0, 0, tzinfo=UTC), datetime(2028, 3, 1, tzinfo=UTC),
                datetime(2027, 12, 31, 23, 59, tzinfo=UTC)):
        reason = check_cron(cron, now)
        assert reason is not None and "once a year" in reason and "366 days" in reason, (now, reason)


@pytest.mark.unit
@pytest.mark.parametrize("cron", NOT_ASCII)
def test_a_cron_must_be_ascii_cron_syntax(cron):
    reason = check_cron(cron, NOW)
    assert reason is not None and "ASCII" in reason


@pytest.mark.unit
@pytest.mark.parametrize("cron", ["*/15 * * * *", "0 9 * * 1-5", "0 0 1 1 *", "0 0 L * *",
                                  "0 6 * jan,jul MON", "0 0 * * 5#5", "0 0 15W * *"])
def test_usual_crons_are_accepted(cron):
    assert check_cron(cron, NOW) is None
    assert check_cron(cron, datetime(2028, 2, 29, tzinfo=UTC)) is None


@pytest.mark.unit
def test_a_yearly_cron_is_within_the_horizon_on_its_own_day():
    assert CRON_HORIZON == timedelta(days=366)
    for now in (datetime(2028, 1, 1, tzinfo=UTC), datetime(2027, 12, 31, 23, 59, tzinfo=UTC)):
        assert check_cron("0 0 1 1 *", now) is None


@pytest.mark.unit
def test_a_cadence_that_yields_no_slot_fails_fast_with_a_domain_error():
    with pytest.raises(CadenceError, match="no occurrence within a year"):
        Cadence(cron="0 0 30 2 *").next_after(NOW)
    with pytest.raises(CadenceError, match="no occurrence within a year"):
        Cadence(cron="0 0 30 2 *").latest_at_or_before(NOW)


@pytest.mark.unit
def test_counting_a_year_of_missed_minutes_does_not_block_the_planner():
    # A minutely schedule a year behind (a long outage, or an error fixed after months): its
    # skipped slots used to be counted one croniter call each, up to 100,000 (seven seconds of
    # a blocked event loop). An interval is counted exactly by arithmetic; a cron up to a cap.
    behind = NOW - timedelta(days=365)
    started = time.perf_counter()
    slots, skipped = due_slots(Cadence(cron="* * * * *"), behind, NOW, MissedSlots.SKIP, 24)
    assert slots == [NOW.replace(second=0)] and skipped == SKIP_COUNT_CAP == 2_000
    slots, skipped = due_slots(Cadence(interval_s=60), behind, NOW, MissedSlots.SKIP, 24)
    assert skipped == 365 * 24 * 60 - 1  # exact: every minute but the one collected
    assert time.perf_counter() - started < 2.0  # ~0.05 s; the old count took ~7 s


@pytest.mark.unit
def test_the_retry_delay_grows_and_is_bounded():
    delays = [plan_retry_at(NOW, n) - NOW for n in range(1, 12)]
    assert delays[:3] == [timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4)]
    assert delays == sorted(delays) and max(delays) == PLAN_RETRY_MAX == timedelta(hours=1)


# -- the API and the planner on PostgreSQL ----------------------------------------------------

WS_A, WS_B = "ws-plan-a", "ws-plan-b"
BRANDS = StaticBrandDirectory({WS_A: [], WS_B: []})


def _headers(ws: str) -> dict[str, str]:
    return {"X-Attesta-Internal-Token": INTERNAL_TOKEN, "X-Attesta-Workspace": ws}


@pytest.fixture
async def client(pool, new_uow):
    app = create_app(build_bus(new_uow, brands=BRANDS, engine_checks=engine_checks(),
                               sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://collector") as c:
        yield c


async def _seed(client: httpx.AsyncClient, pool, ws: str) -> None:
    """A prompt and an engine ``e`` (our assistant: the planner asks nothing of an engine but
    that it is live)."""
    r = await client.post("/v1/prompts", json={"text": f"best sleep ring? ({ws})"},
                          headers=_headers(ws))
    assert r.status_code == 201, r.text
    async with pool.acquire() as conn:
        await conn.execute("INSERT INTO engines (workspace_id, engine_id, spec) VALUES ($1, 'e', $2)",
                           ws, {"name": "e", "kind": "assistant"})


async def _schedule(client: httpx.AsyncClient, ws: str, schedule_id: str) -> dict:
    items = (await client.get("/v1/schedules", headers=_headers(ws))).json()["items"]
    return next(s for s in items if s["schedule_id"] == schedule_id)


@pytest.mark.integration
@pytest.mark.parametrize("cron", [*NEVER, LEAP_DAY, *NOT_ASCII])
async def test_a_never_firing_or_non_ascii_cron_is_a_422_at_create_and_at_update(
        client, pool, cron):
    await _seed(client, pool, WS_A)
    h = _headers(WS_A)
    r = await client.post("/v1/schedules", json={"schedule_id": "bad", "engine_ids": ["e"],
                                                 "cron": cron}, headers=h)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["reason"].startswith("cron: ")
    r = await client.post("/v1/schedules", json={"schedule_id": "ok", "engine_ids": ["e"],
                                                 "cron": "0 9 * * *"}, headers=h)
    assert r.status_code == 201, r.text
    r = await client.put("/v1/schedules/ok", json={"engine_ids": ["e"], "cron": cron}, headers=h)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["reason"].startswith("cron: ")
    assert (await _schedule(client, WS_A, "ok"))["cron"] == "0 9 * * *"  # unchanged


async def _store_as_an_old_record(pool, ws: str, schedule_id: str, spec: dict,
                                  next_due_at: datetime) -> None:
    """What a schedule created before the check looks like: its spec straight in the table."""
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO schedules (workspace_id, schedule_id, spec, active, next_due_at) "
            "VALUES ($1, $2, $3, true, $4)", ws, schedule_id, spec, next_due_at)


@pytest.mark.integration
async def test_a_schedule_that_cannot_be_planned_does_not_delay_another_workspace(
        client, pool, new_uow):
    await _seed(client, pool, WS_A)
    await _seed(client, pool, WS_B)
    r = await client.post("/v1/schedules", json={"schedule_id": "hourly", "engine_ids": ["e"],
                                                 "interval_s": 3600}, headers=_headers(WS_B))
    assert r.status_code == 201, r.text  # due at once
    now = datetime.now(UTC)
    # Three stored records the planner cannot plan, the most overdue of all (first in line):
    # a cron that never fires, one croniter would read as random minutes, and a spec that no
    # longer validates.
    await _store_as_an_old_record(pool, WS_A, "feb30", {"engine_ids": ["e"], "cron": "0 0 30 2 *"},
                                  now - timedelta(hours=3))
    await _store_as_an_old_record(pool, WS_A, "random", {"engine_ids": ["e"], "cron": "R 9 * * *"},
                                  now - timedelta(hours=2))
    await _store_as_an_old_record(pool, "ws-plan-c", "zero", {"engine_ids": ["e"],
                                                              "interval_s": 3600, "samples": 0},
                                  now - timedelta(hours=1))

    # One round of three: the bad ones fill it, each rolled back alone; the next round, in the
    # same call, plans workspace B's schedule.
    assert await plan_due(PlanDue(), new_uow(), now, limit=3) == 1
    hourly = await _schedule(client, WS_B, "hourly")
    assert hourly["planned_through"] is not None and hourly["plan_error"] is None
    assert hourly["plan_failures"] == 0
    assert datetime.fromisoformat(hourly["next_due_at"]) > now
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT count(*) FROM collections WHERE workspace_id=$1", WS_B) == 1
        # Nothing of the failed ones survived their savepoints.
        assert await conn.fetchval(
            "SELECT count(*) FROM planned_slots WHERE workspace_id=$1", WS_A) == 0

    feb30 = await _schedule(client, WS_A, "feb30")
    assert "'0 0 30 2 *' must fire at least once a year" in feb30["plan_error"]
    assert feb30["plan_failures"] == 1 and feb30["planned_through"] is None
    assert datetime.fromisoformat(feb30["plan_error_at"]) == now
    assert datetime.fromisoformat(feb30["next_due_at"]) == now + timedelta(minutes=1)
    assert "ASCII" in (await _schedule(client, WS_A, "random"))["plan_error"]
    async with pool.acquire() as conn:  # (a spec the API model refuses cannot be listed)
        zero = await conn.fetchrow("SELECT * FROM schedules WHERE schedule_id='zero'")
    assert "no longer valid" in zero["plan_error"] and "samples" in zero["plan_error"]

    # Not claimed again before its retry time; then again, with a longer delay.
    await plan_due(PlanDue(), new_uow(), now + timedelta(seconds=30))
    assert (await _schedule(client, WS_A, "feb30"))["plan_failures"] == 1
    later = now + timedelta(minutes=1)
    await plan_due(PlanDue(), new_uow(), later)
    feb30 = await _schedule(client, WS_A, "feb30")
    assert feb30["plan_failures"] == 2
    assert datetime.fromisoformat(feb30["next_due_at"]) == later + timedelta(minutes=2)
    # Run now says why instead of a 5xx.
    r = await client.post("/v1/schedules/feb30/run", headers=_headers(WS_A))
    assert r.status_code == 409 and "once a year" in r.json()["error"]["reason"]

    # A fix clears the error at once and the schedule is planned again.
    r = await client.put("/v1/schedules/feb30", json={"engine_ids": ["e"], "cron": "0 0 28 2 *"},
                         headers=_headers(WS_A))
    assert r.status_code == 200, r.text
    fixed = r.json()
    assert fixed["plan_error"] is None and fixed["plan_error_at"] is None
    assert fixed["plan_failures"] == 0
    await plan_due(PlanDue(), new_uow(), datetime.now(UTC))
    feb28 = await _schedule(client, WS_A, "feb30")
    assert feb28["planned_through"] is not None and feb28["plan_error"] is None
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT count(*) FROM collections WHERE schedule_id='feb30'") == 1


# -- the same planner on the in-memory fakes ---------------------------------------------------


@pytest.mark.unit
async def test_the_fakes_roll_back_a_failed_plan_to_its_savepoint():
    from attesta_collector.domain.model import PromptSpec, ScheduleSpec
    from attesta_collector.service_layer import catalog

    new_uow = partial(InMemoryCollectorUnitOfWork, CollectorState())
    for ws in (WS_A, WS_B):
        await catalog.create_prompt(CreatePrompt(ws, PromptSpec(text="best ring?")), new_uow(),
                                    BRANDS)
        async with new_uow() as uow:
            await uow.engines.add(ws, "e", {"name": "e", "kind": "assistant"})
            await uow.commit()
    await catalog.create_schedule(CreateSchedule(WS_B, ScheduleSpec(
        schedule_id="hourly", engine_ids=["e"], interval_s=3600)), new_uow(), now=NOW)
    async with new_uow() as uow:
        await uow.schedules.add(WS_A, "feb30", {"engine_ids": ["e"], "cron": "0 0 30 2 *"}, True,
                                NOW - timedelta(hours=1))
        await uow.commit()
    assert await plan_due(PlanDue(), new_uow(), NOW, limit=1) == 1
    async with new_uow().read() as uow:
        bad = await uow.schedules.get(WS_A, "feb30")
        good = await uow.schedules.get(WS_B, "hourly")
    assert bad["plan_failures"] == 1 and "once a year" in bad["plan_error"]
    assert bad["next_due_at"] == NOW + timedelta(minutes=1)
    assert good["planned_through"] is not None and good["plan_error"] is None


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def either_uow(request):
    """A factory of units of work on one fresh store: the fakes, then PostgreSQL."""
    if request.param == "memory":
        return partial(InMemoryCollectorUnitOfWork, CollectorState())
    return request.getfixturevalue("new_uow")


async def test_a_savepoint_undoes_only_its_own_writes(either_uow):
    new_uow = either_uow
    async with new_uow() as uow:
        await uow.schedules.add(WS_A, "kept", {"interval_s": 60}, True, NOW)
        with pytest.raises(RuntimeError):
            async with uow.savepoint():
                await uow.schedules.add(WS_A, "undone", {"interval_s": 60}, True, NOW)
                raise RuntimeError("this schedule's plan failed")
        async with uow.savepoint():
            await uow.schedules.add(WS_A, "also-kept", {"interval_s": 60}, True, NOW)
        await uow.schedules.mark_plan_failed(WS_A, "kept", "why", NOW, NOW + timedelta(minutes=1))
        await uow.commit()
    async with new_uow().read() as uow:
        assert [s["schedule_id"] for s in await uow.schedules.list(WS_A)] == ["also-kept", "kept"]
        kept = await uow.schedules.get(WS_A, "kept")
        assert (kept["plan_error"], kept["plan_error_at"], kept["plan_failures"]) == ("why", NOW, 1)
        await uow.schedules.mark_planned(WS_A, "kept", NOW, NOW + timedelta(minutes=1))
        kept = await uow.schedules.get(WS_A, "kept")
        assert (kept["plan_error"], kept["plan_error_at"], kept["plan_failures"]) == (None, None, 0)
