"""The looks at one week share each rule's alpha, on real PostgreSQL (issue #25, docs/alerts.md
"Looking many times"): a slot's look spends the O'Brien-Fleming-type share of the open week's
information, a redelivered slot spends nothing, a later slot only the increment, and the week's
close spends the rest; a moderate change that a single weekly test sees fires at the close and
not at a slot half-way through the week, a large one fires at the slot."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import asyncpg
import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain import alerts as domain
from attesta_classifier.domain.commands import CreateBrand
from attesta_classifier.service_layer.alerting import open_week, slot_look
from attesta_testing.classifier_rows import insert_classified_runs

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)  # a Wednesday: the open week began 23 Nov
BEFORE, AFTER, END = open_week(NOW)
PROMPTS = 12
ANSWERS = (10, 5)  # per prompt: the closed week, the open week so far (information 0.5)


async def _seed(pool, workspace: str, brand: str, first: tuple[float, float]) -> None:
    """Each prompt's answers name the brand first in a share ``first`` (closed week, open week
    so far), else second; every prompt alike."""
    runs, states = [], []
    for week, (start, answers) in enumerate(zip((BEFORE, AFTER), ANSWERS, strict=True)):
        for p in range(PROMPTS):
            for k in range(answers):
                run_id = f"run-{uuid.uuid4().hex}"
                answer = f"answer {run_id}"
                is_first = k < round(first[week] * answers)
                at = start + timedelta(minutes=20 * (p * answers + k))  # < NOW in the open week
                runs.append((run_id, workspace, "chatgpt", "model-x",
                             f"Which ring, {brand} prompt {p}?", answer,
                             hashlib.sha256(answer.encode()).hexdigest(), at, "api"))
                states.append((run_id, brand, workspace, uuid.uuid4(), "DESCRIPTIVE",
                               1 if is_first else 2,
                               [brand, "rival"] if is_first else ["rival", brand]))
    await insert_classified_runs(pool, runs, states)


async def _looks(pool, rule_id: uuid.UUID) -> list[asyncpg.Record]:
    async with pool.acquire() as conn:
        return await conn.fetch(
            "SELECT look, information, level, spent, closing, fired FROM alert_looks "
            "WHERE rule_id = $1 AND period_start = $2 ORDER BY looked_at, look", rule_id, AFTER)


async def test_a_weeks_looks_spend_its_alpha_once_and_the_close_spends_the_rest(
        pool, heuristic, workspace):
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic)
    for name in ("Lumora", "Kestrel", "Rival"):
        await bus.handle(CreateBrand(workspace, name, name.lower()))
    await _seed(pool, workspace, "lumora", (0.2, 0.8))  # large: t = 7.7 on 11 df
    await _seed(pool, workspace, "kestrel", (0.4, 0.6))  # moderate: p about 0.03
    lumora = await bus.handle(a.CreateAlertRule(workspace, "lumora", "position_first"))
    kestrel = await bus.handle(a.CreateAlertRule(workspace, "kestrel", "position_first"))
    slot = partial(a.EvaluateAfterSlot, workspace, "sch-hourly", completed_at=NOW, now=NOW)
    interim = domain.interim_spending(0.5, 0.05)

    # A slot half-way through the week's answers: each rule may spend A(0.5) of its alpha.
    first = await bus.handle(slot(NOW - timedelta(hours=1)))
    assert (first.done, first.rules, first.fired) == (True, 2, 1)
    for rule in (lumora, kestrel):
        [row] = await _looks(pool, rule.rule_id)
        assert row["look"] == slot_look("sch-hourly", NOW - timedelta(hours=1))
        assert row["information"] == pytest.approx(0.5)
        assert row["level"] == pytest.approx(interim) and row["spent"] == pytest.approx(interim)
        assert row["fired"] is (rule is lumora)  # kestrel's p (~0.03) is far above A(0.5)

    # The same slot again (a redelivery): nothing evaluated, nothing spent.
    again = await bus.handle(slot(NOW - timedelta(hours=1)))
    assert (again.done, again.fired) == (False, 0)
    assert len(await _looks(pool, kestrel.rule_id)) == 1

    # The next slot saw no new answer: the curve has not moved, it spends 0 and fires nothing.
    nxt = await bus.handle(slot(NOW))
    assert (nxt.done, nxt.fired) == (True, 0)
    rows = await _looks(pool, kestrel.rule_id)
    assert [r["level"] for r in rows] == [pytest.approx(interim), 0.0]

    # The week's close spends the rest: kestrel's moderate change fires now, as a single weekly
    # test would have fired it; lumora fired this week already (once per rule and week).
    [close] = await bus.handle(a.EvaluateClosedPeriods(END + timedelta(days=1), workspace))
    assert (close.done, close.period_start, close.fired) == (True, AFTER, 1)
    for rule in (lumora, kestrel):
        rows = await _looks(pool, rule.rule_id)
        assert rows[-1]["look"] == domain.CLOSE and rows[-1]["closing"]
        assert rows[-1]["level"] == pytest.approx(0.05 - interim)
        assert rows[-1]["spent"] == pytest.approx(0.05)
        assert sum(r["level"] for r in rows) == pytest.approx(0.05)
    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    assert sorted(al.brand_id for al in alerts) == ["kestrel", "lumora"]
    assert 2 * interim < next(al for al in alerts if al.brand_id == "kestrel").p_adjusted <= 0.05

    # A slot of that week evaluated after its close spends nothing more.
    late = await bus.handle(slot(NOW + timedelta(days=2), completed_at=END - timedelta(minutes=1),
                                 now=END + timedelta(days=1)))
    assert (late.done, late.fired) == (True, 0)
    assert len(await _looks(pool, kestrel.rule_id)) == 3

    # Looks are append-only, like the alerts.
    async with pool.acquire() as conn:
        with pytest.raises(asyncpg.PostgresError):
            await conn.execute("UPDATE alert_looks SET spent = 0 WHERE rule_id = $1",
                               kestrel.rule_id)
