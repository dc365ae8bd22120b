"""Evaluation of a workspace's alert rules when a week closes, on real PostgreSQL (issue #25):
seeded answers with a real change fire, noise and an underpowered cell do not, a muted rule is
left out of the family, the alert carries both weeks' figures and the runs behind them, its
event and one pending delivery per channel are written in the same transaction, and a second
evaluation of the same week (a restart, another instance) does nothing."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.commands import CreateBrand
from attesta_classifier.service_layer.alerting import last_closed_week
from attesta_contracts import Envelope
from attesta_contracts.alerts import AlertRaised
from attesta_platform.outbound import OutboundPolicy

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)  # a Wednesday: the last closed week is 16-23 Nov
BEFORE, AFTER, END = last_closed_week(NOW)


@pytest.fixture
def pool(module_pool):
    """This module's own database (the evaluator reads every workspace with a rule)."""
    return module_pool


def test_the_last_closed_week_is_the_iso_week_before_this_one():
    assert (BEFORE, AFTER, END) == (datetime(2026, 11, 9, tzinfo=UTC),
                                    datetime(2026, 11, 16, tzinfo=UTC),
                                    datetime(2026, 11, 23, tzinfo=UTC))
    monday = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    assert last_closed_week(monday)[1] == datetime(2026, 11, 16, tzinfo=UTC)
    assert last_closed_week(monday - timedelta(microseconds=1))[1] == datetime(2026, 11, 9,
                                                                               tzinfo=UTC)


async def _answers(pool, workspace: str, brand: str, start: datetime, rates: list[float],
                   per_prompt: int, engine: str = "chatgpt") -> list[str]:
    """``per_prompt`` classified answers for each prompt (one prompt per rate), of which
    round(rate * per_prompt) cited (DESCRIPTIVE) and the rest ABSENT, answered during the week
    from ``start``. Exact counts, so what fires does not hang on a lucky draw."""
    rows, states = [], []
    for p, rate in enumerate(rates):
        for k in range(per_prompt):
            run_id = f"run-{uuid.uuid4().hex}"
            answer = f"answer {run_id}"
            at = start + timedelta(hours=1 + (p * per_prompt + k) % 150)
            rows.append((run_id, workspace, engine, "model-x", f"Which kits does {brand} prompt {p} mean?",
                         answer, hashlib.sha256(answer.encode()).hexdigest(), at))
            states.append((run_id, brand, workspace, uuid.uuid4(),
                           "DESCRIPTIVE" if k < round(rate * per_prompt) else "ABSENT"))
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO runs (run_id, workspace_id, engine, model, prompt, answer, answer_sha256, "
            "answered_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", rows)
        await conn.executemany(
            "INSERT INTO run_brand_status (run_id, brand_id, workspace_id, status, "
            "classification_id, citation_class, decided_by) "
            "VALUES ($1, $2, $3, 'classified', $4, $5, 'deterministic')", states)
    return [r[0] for r in rows]


async def test_a_real_change_fires_noise_and_an_underpowered_cell_do_not(pool, heuristic,
                                                                        workspace):
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                    alert_outbound=OutboundPolicy.from_setting("127.0.0.1:9"))
    for brand in ("lumora", "kestrel", "tiny"):
        await bus.handle(CreateBrand(workspace, brand.title(), brand))
    # lumora: 12 prompts, citation rate 0.3 before, 0.7 after (a real change);
    # kestrel: every prompt moves (by up to 0.4) but the pooled rate stays 0.4 (noise only);
    # tiny: 0.1 -> 0.9 over 3 prompts only (underpowered).
    base = [0.2, 0.3, 0.3, 0.4, 0.3, 0.2, 0.4, 0.3, 0.2, 0.4, 0.3, 0.3]
    await _answers(pool, workspace, "lumora", BEFORE, base, 10)
    after_runs = await _answers(pool, workspace, "lumora", AFTER, [r + 0.4 for r in base], 10)
    noisy = [0.2, 0.3, 0.4, 0.5, 0.6, 0.4, 0.2, 0.3, 0.4, 0.5, 0.6, 0.4]
    await _answers(pool, workspace, "kestrel", BEFORE, noisy, 10)
    await _answers(pool, workspace, "kestrel", AFTER, noisy[::-1], 10)
    await _answers(pool, workspace, "tiny", BEFORE, [0.1] * 3, 20)
    await _answers(pool, workspace, "tiny", AFTER, [0.9] * 3, 20)
    await _answers(pool, workspace, "lumora", END, [1.0] * 12, 10)  # this week: not closed

    rules = {}
    for name, brand, extra in (("lumora", "lumora", {}), ("kestrel", "kestrel", {}),
                               ("tiny", "tiny", {}),
                               ("lumora-other-engine", "lumora", {"segment": {"engine": "gemini"}}),
                               ("lumora-muted", "lumora", {"muted": True}),
                               ("lumora-up-only-confab", "lumora",
                                {"metric": "confabulation_rate"})):
        metric = extra.pop("metric", "citation_rate")
        rules[name] = await bus.handle(a.CreateAlertRule(workspace, brand, metric, name, **extra))
    await bus.handle(a.CreateAlertChannel(workspace, "email", "team@lumora.example"))
    await bus.handle(a.CreateAlertChannel(workspace, "webhook", "http://127.0.0.1:9/hook"))

    [evaluation] = await bus.handle(a.EvaluateClosedPeriods(NOW, workspace))
    assert (evaluation.done, evaluation.period_start, evaluation.rules, evaluation.fired) == (
        True, AFTER, 5, 1)  # the muted rule is not evaluated

    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    [alert] = alerts
    assert alert.rule_id == rules["lumora"].rule_id and not alert.test
    assert (alert.period_start, alert.previous_period_start) == (AFTER, BEFORE)
    assert alert.before["n"] == alert.after["n"] == 120
    assert alert.before["prompts"] == alert.after["prompts"] == 12
    assert (alert.before["value"], alert.after["value"]) == pytest.approx((0.3, 0.7))
    assert alert.before["ci95_low"] < alert.before["value"] < alert.before["ci95_high"]
    assert alert.p_value is not None and alert.p_adjusted is not None
    assert alert.p_value <= alert.p_adjusted <= 0.05
    # The family: lumora, kestrel and lumora's confabulation rate (36 -> 84 mentions, none
    # confabulated: tested, p = 1); tiny is underpowered and the gemini segment empty.
    assert alert.family_size == 3
    assert 0 < len(alert.run_ids["after"]) <= 20 and set(alert.run_ids["after"]) <= set(after_runs)

    _, deliveries = await bus.handle(a.GetAlert(workspace, alert.alert_id))
    assert sorted(d.kind for d in deliveries) == ["email", "webhook"]
    assert {d.status for d in deliveries} == {"pending"}
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT event_id, value FROM messaging_outbox "
                                "WHERE topic = 'alerts.raised.v1'")
    events = [Envelope[AlertRaised].model_validate_json(r["value"]).payload for r in rows]
    mine = [e for e in events if e.workspace_id == workspace]
    assert [e.alert_id for e in mine] == [alert.alert_id]
    assert mine[0].after.n == 120 and mine[0].p_adjusted == alert.p_adjusted

    # A restart, or a second instance: the week was evaluated; nothing happens again.
    again = await bus.handle(a.EvaluateClosedPeriods(NOW + timedelta(hours=1)))
    assert [(e.workspace_id, e.done) for e in again if e.workspace_id == workspace] == [
        (workspace, False)]
    assert len((await bus.handle(a.ListAlerts(workspace)))[0]) == 1


async def test_a_change_the_other_way_or_too_small_to_be_real_does_not_fire(pool, heuristic,
                                                                           workspace):
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic)
    await bus.handle(CreateBrand(workspace, "Lumora", "lumora"))
    base = [0.3] * 12
    await _answers(pool, workspace, "lumora", BEFORE, base, 10)
    await _answers(pool, workspace, "lumora", AFTER, [0.7] * 12, 10)
    await bus.handle(a.CreateAlertRule(workspace, "lumora", "citation_rate", direction="down"))
    [evaluation] = await bus.handle(a.EvaluateClosedPeriods(NOW, workspace))
    assert (evaluation.rules, evaluation.fired) == (1, 0)

    other = f"{workspace}-small"
    await bus.handle(CreateBrand(other, "Lumora", "lumora"))
    await _answers(pool, other, "lumora", BEFORE, [0.30] * 12, 10)
    await _answers(pool, other, "lumora", AFTER, [0.34] * 12, 10)
    await bus.handle(a.CreateAlertRule(other, "lumora", "citation_rate"))
    [evaluation] = await bus.handle(a.EvaluateClosedPeriods(NOW, other))
    assert (evaluation.rules, evaluation.fired) == (1, 0)
    assert (await bus.handle(a.ListAlerts(other)))[0] == []
