"""Alert rules evaluated after each schedule slot (issue #25), on real PostgreSQL and Kafka: the
collector's ``collection.slot-completed.v1`` leads to one evaluation of the workspace's rules on
the open week so far against the last closed week; an alert fires at most once per (rule,
period) however many slots (and the weekly close) see the change; a redelivered event evaluates
nothing twice; a slot whose runs are not classified yet waits (a retryable error); a poison
event is dead-lettered with its reason; the position-weighted visibility fires on a seeded real
change and not on seeded noise; a segment names the collection method."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import httpx
import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.commands import CreateBrand
from attesta_classifier.entrypoints.consumers import make_slot_handler
from attesta_classifier.entrypoints.http import create_app
from attesta_classifier.service_layer.alerting import SlotRunsPending, open_week
from attesta_classifier.service_layer.errors import Invalid
from attesta_contracts import Envelope, derived_id
from attesta_contracts.alerts import AlertRaised
from attesta_contracts.collection import SlotCompleted
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.topics import DEAD_LETTERED, SLOT_COMPLETED
from attesta_platform.messaging import Messaging, RetryPolicy, TopicCopy, envelope_bytes
from attesta_testing.classifier_rows import insert_classified_runs
from attesta_testing.infra import kafka_bootstrap, publish_raw

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)  # a Wednesday: the open week began 23 Nov
BEFORE, AFTER, END = open_week(NOW)
PROMPTS, ANSWERS = 12, 10


def test_the_open_week_is_the_iso_week_holding_the_time():
    assert (BEFORE, AFTER, END) == (datetime(2026, 11, 16, tzinfo=UTC),
                                    datetime(2026, 11, 23, tzinfo=UTC),
                                    datetime(2026, 11, 30, tzinfo=UTC))
    assert open_week(datetime(2026, 11, 30, tzinfo=UTC))[1] == END


async def _seed(pool, workspace: str, brand: str, first: tuple[float, float], cited: float,
                method: str = "api", noise: int | None = None,
                weeks: tuple[datetime, datetime] = (BEFORE, AFTER)) -> list[str]:
    """PROMPTS x ANSWERS answers in the closed week and as many in the open week so far. The
    brand is named first in a share ``first`` (before, after) of each prompt's answers, else
    second; cited in a share ``cited`` of them. ``noise``: a seed; each answer names it first
    with the before share, drawn at random, in both weeks. Returns the open week's run ids."""
    rng = random.Random(noise)
    runs, states, opened = [], [], []
    for week, start in enumerate(weeks):
        for p in range(PROMPTS):
            for k in range(ANSWERS):
                run_id = f"run-{uuid.uuid4().hex}"
                answer = f"answer {run_id}"
                if noise is not None:
                    is_first = rng.random() < first[0]
                else:
                    is_first = k < round(first[week] * ANSWERS)
                position = 1 if is_first else 2
                order = [brand, "rival"] if is_first else ["rival", brand]
                cls = "DESCRIPTIVE" if (k + p) % ANSWERS < round(cited * ANSWERS) else "ECHO"
                at = start + timedelta(minutes=20 * (p * ANSWERS + k))  # < NOW in the open week
                runs.append((run_id, workspace, "chatgpt", "model-x",
                             f"Which ring, {brand} prompt {p}?", answer,
                             hashlib.sha256(answer.encode()).hexdigest(), at, method))
                states.append((run_id, brand, workspace, uuid.uuid4(), cls, position, order))
                if week:
                    opened.append(run_id)
    await insert_classified_runs(pool, runs, states)
    return opened


async def _workspace(pool, heuristic, workspace: str):
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic)
    for name in ("Lumora", "Kestrel", "Rival"):
        await bus.handle(CreateBrand(workspace, name, name.lower()))
    return bus


async def _raised(pool, workspace: str) -> list[AlertRaised]:
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT value FROM messaging_outbox WHERE topic = 'alerts.raised.v1' "
                                "ORDER BY id")
    events = [Envelope[AlertRaised].model_validate_json(bytes(r["value"])).payload for r in rows]
    return [e for e in events if e.workspace_id == workspace and not e.test]


async def test_a_slot_evaluates_once_and_a_rule_fires_once_per_period(pool, heuristic, workspace):
    bus = await _workspace(pool, heuristic, workspace)
    lumora = await _seed(pool, workspace, "lumora", (0.2, 0.8), 0.5)
    await _seed(pool, workspace, "kestrel", (0.5, 0.5), 0.5, noise=20261205)
    rules = {(brand, metric): await bus.handle(a.CreateAlertRule(workspace, brand, metric))
             for brand in ("lumora", "kestrel")
             for metric in ("position_weighted_visibility", "position_first", "citation_rate")}
    slot = partial(a.EvaluateAfterSlot, workspace, "sch-hourly", completed_at=NOW, now=NOW)

    first = await bus.handle(slot(NOW - timedelta(hours=1), run_ids=tuple(lumora[-40:])))
    assert (first.done, first.rules, first.fired, first.period_start) == (True, 6, 2, AFTER)
    again = await bus.handle(slot(NOW - timedelta(hours=1), run_ids=tuple(lumora[-40:])))
    assert (again.done, again.fired) == (False, 0)  # the same slot, redelivered
    later = await bus.handle(slot(NOW, completed_at=NOW + timedelta(minutes=59),
                                  now=NOW + timedelta(hours=1)))
    assert (later.done, later.fired) == (True, 0)  # the next slot: fired already this week
    # The week's close compares the same two weeks: nothing fires a second time.
    [close] = await bus.handle(a.EvaluateClosedPeriods(END + timedelta(days=2), workspace))
    assert (close.done, close.period_start, close.fired) == (True, AFTER, 0)

    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    assert sorted(al.metric for al in alerts) == ["position_first",
                                                 "position_weighted_visibility"]
    assert {al.rule_id for al in alerts} == {
        rules[("lumora", m)].rule_id for m in ("position_first", "position_weighted_visibility")}
    weighted = next(al for al in alerts if al.metric == "position_weighted_visibility")
    # 1st weighs 1, 2nd 0.9: 0.2 -> 0.8 named first is 0.92 -> 0.98.
    assert weighted.before["value"] == pytest.approx(0.92)
    assert weighted.after["value"] == pytest.approx(0.98)
    assert weighted.before["n"] == weighted.after["n"] == PROMPTS * ANSWERS
    assert weighted.before["ci95_low"] is not None  # a mean in [0, 1]: Wilson and bootstrap
    assert weighted.after["by_prompt_ci95_low"] <= 0.98 <= weighted.after["by_prompt_ci95_high"]
    assert (weighted.period_start, weighted.previous_period_start) == (AFTER, BEFORE)
    assert weighted.p_adjusted <= 0.05 and weighted.family_size == 6
    assert len(weighted.run_ids["after"]) == 20 and set(weighted.run_ids["after"]) <= set(lumora)
    assert len(await _raised(pool, workspace)) == 2  # one event per alert
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT count(*) FROM alert_slot_evaluations WHERE workspace_id = $1", workspace) == 2


async def test_a_slot_whose_runs_are_not_classified_yet_waits_then_evaluates(
        pool, heuristic, workspace):
    bus = await _workspace(pool, heuristic, workspace)
    opened = await _seed(pool, workspace, "lumora", (0.2, 0.8), 0.5)
    await bus.handle(a.CreateAlertRule(workspace, "lumora", "position_weighted_visibility"))
    runs = (*opened[:5], "run-still-on-its-way")
    with pytest.raises(SlotRunsPending, match="1 of the slot's 6 runs"):
        await bus.handle(a.EvaluateAfterSlot(workspace, "sch", NOW, NOW, runs, now=NOW))
    assert (await bus.handle(a.ListAlerts(workspace)))[0] == []
    # Past the wait, what is recorded is evaluated.
    done = await bus.handle(a.EvaluateAfterSlot(workspace, "sch", NOW, NOW, runs,
                                                now=NOW + timedelta(minutes=11)))
    assert (done.done, done.fired) == (True, 1)


async def test_a_segment_names_the_collection_method(pool, heuristic, workspace):
    bus = await _workspace(pool, heuristic, workspace)
    await _seed(pool, workspace, "lumora", (0.2, 0.8), 0.5, method="api_with_search")
    await _seed(pool, workspace, "kestrel", (0.2, 0.8), 0.5, method="api")
    for brand in ("lumora", "kestrel"):
        await bus.handle(a.CreateAlertRule(workspace, brand, "position_first",
                                           segment={"collection_method": "api_with_search"}))
    done = await bus.handle(a.EvaluateAfterSlot(workspace, "sch", NOW, NOW, now=NOW))
    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    # kestrel's answers were all plain API: its cell is empty (underpowered), it never fires.
    assert done.fired == 1 and [al.brand_id for al in alerts] == ["lumora"]
    assert alerts[0].segment == {"collection_method": "api_with_search"}

    app = create_app(bus, internal_token="t", database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c.test",
                                 headers={"X-Attesta-Internal-Token": "t",
                                          "X-Attesta-Workspace": workspace}) as client:
        base = {"brand_id": "lumora", "metric": "position_weighted_visibility"}
        r = await client.post("/v1/alerts/rules", json={
            **base, "segment": {"collection_method": "assistant", "engine": "chatgpt"}})
        assert r.status_code == 201, r.text
        assert r.json()["segment"]["collection_method"] == "assistant"
        for segment, words in (({"collection_method": "scraped"}, "collection_method"),
                               ({"colour": "red"}, "colour")):
            r = await client.post("/v1/alerts/rules", json={**base, "segment": segment})
            assert r.status_code == 422 and words in r.text, r.text
    with pytest.raises(Invalid, match="unknown collection_method 'fax'"):
        await bus.handle(a.CreateAlertRule(workspace, "lumora", "score",
                                           segment={"collection_method": "fax"}))


def _slot_event(workspace: str, run_ids: list[str], slot: datetime) -> bytes:
    payload = SlotCompleted(workspace_id=workspace, schedule_id="sch-kafka", slot=slot,
                            planned=len(run_ids), collected=len(run_ids), failed=0,
                            run_ids=run_ids, completed_at=datetime.now(UTC))
    return envelope_bytes(SLOT_COMPLETED, payload, producer="collector",
                          event_id=derived_id("collector-slot", workspace, slot.isoformat()),
                          correlation_id=f"slot/{workspace}")


async def test_slot_events_through_kafka_redelivery_and_a_poison_event(pool, heuristic,
                                                                       workspace, consume_until):
    """The consumer as bootstrap wires it, on a private topic carrying the contract: the same
    event twice evaluates once; an event its contract refuses is dead-lettered with why."""
    bus = await _workspace(pool, heuristic, workspace)
    # The open week is today's (the event completed now): its answers are seeded there.
    now = datetime.now(UTC)
    lumora = await _seed(pool, workspace, "lumora", (0.2, 0.8), 0.5,
                         weeks=open_week(now)[:2])
    await bus.handle(a.CreateAlertRule(workspace, "lumora", "position_weighted_visibility"))
    topic = f"test.slots.{uuid.uuid4().hex[:8]}"
    group = f"classifier-alerts-test-{uuid.uuid4().hex[:8]}"
    m = Messaging(kafka_bootstrap(), "classifier-test", RetryPolicy(2, 0.05, 0.2))
    dead: list[MessageDeadLettered] = []

    async def on_dead(env, delivery) -> None:
        if env.payload.consumer == group:
            dead.append(env.payload)

    letters = m.consume(DEAD_LETTERED, group_id=f"{group}-dlq", handler=on_dead,
                        auto_offset_reset="latest")
    await m.ensure_topics([topic, DEAD_LETTERED], partitions=1)
    await m.start()
    try:
        await m.wait_assigned(letters, timeout_s=60)
        slot = now.replace(minute=0, second=0, microsecond=0)
        event = _slot_event(workspace, lumora[:30], slot)
        poison = json.loads(event)
        poison["payload"]["planned"] = -1
        for value in (event, event, json.dumps(poison).encode()):
            await publish_raw(m, topic, value, key=b"sch-kafka")
        consumer = m.batch_consumer(TopicCopy(SLOT_COMPLETED, topic), group_id=group,
                                    handler=make_slot_handler(bus), batch_max=5, wait_ms=100)

        async def handled() -> bool:
            return consumer.progress.processed >= 2 and bool(dead)

        await consume_until(consumer, handled)
    finally:
        await m.stop()
    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    assert [al.metric for al in alerts] == ["position_weighted_visibility"]
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT count(*) FROM alert_slot_evaluations WHERE workspace_id = $1", workspace) == 1
    [letter] = dead
    assert letter.source_topic == topic and "planned" in letter.error, letter.error
