"""Alert rules on every figure of the metrics rows (issue #25), on real PostgreSQL: share of voice,
the owned source share, share named first, mean position and the score fire on a real change
between two closed weeks and stay silent on a brand whose weeks are the same; each alert's two
periods are the very figures ``GET /v1/metrics`` serves for those weeks (value, n, prompts,
intervals), because the alerts read the same buckets."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.commands import CreateBrand, GetMetrics, UpdateBrand
from attesta_classifier.domain.notifications import email_content, headline
from attesta_classifier.service_layer.alerting import last_closed_week, message_of

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)  # a Wednesday: the last closed week is 16-23 Nov
BEFORE, AFTER, END = last_closed_week(NOW)
PROMPTS, ANSWERS = 12, 10
NEW_METRICS = ("share_of_voice", "source_share_owned", "position_first", "position_mean",
               "position_weighted_visibility", "score")


def _week(brand: str, rival: str | None, after: bool, p: int, k: int
          ) -> tuple[dict[str, tuple[str, int | None, list[str]]], list[str]]:
    """One answer (prompt ``p``, sample ``k``): each brand's (class, position, named order) and
    the domains it cites. ``after`` False and True are the two weeks of the moving brand; a
    brand without a rival has the same answers in both weeks."""
    if rival is None:  # steady: prompt-dependent, the same both weeks
        cls = "DESCRIPTIVE" if k < 3 + p % 4 else "ECHO"
        position = 1 if k < 6 + p % 3 else None
        owned = k < 2 + p % 3
        return {brand: (cls, position, [brand] if position else [])}, (
            [f"{brand}.example"] if owned else []) + ["review.example"]
    if not after:  # cited less, named after the rival, cites its own site rarely
        mine = "DESCRIPTIVE" if k < 2 + p % 3 else "ECHO"
        theirs = "DESCRIPTIVE" if k < 6 else "ABSENT"
        first = k < p % 2
        owned = k < 1 + p % 2
    else:  # cited more, named first more often, its own site cited
        mine = "DESCRIPTIVE" if k < 6 + p % 3 else "ECHO"
        theirs = "DESCRIPTIVE" if k < 4 else "ABSENT"
        first = k < 6 + p % 3
        owned = k < 5 + p % 3
    order = [brand, rival] if first else [rival, brand]
    return ({brand: (mine, order.index(brand) + 1, order),
             rival: (theirs, order.index(rival) + 1, order)},
            ([f"{brand}.example"] if owned else []) + ["review.example"])


async def _seed(pool, workspace: str, brand: str, rival: str | None) -> None:
    runs, states = [], []
    for after, start in ((False, BEFORE), (True, AFTER)):
        for p in range(PROMPTS):
            for k in range(ANSWERS):
                classes, domains = _week(brand, rival, after, p, k)
                run_id = f"run-{uuid.uuid4().hex}"
                answer = f"answer {run_id}"
                sources = [{"url": f"https://{d}/", "host": d, "domain": d} for d in domains]
                runs.append((run_id, workspace, "chatgpt", "model-x",
                             f"Which widget maker, {brand} prompt {p}?", answer,
                             hashlib.sha256(answer.encode()).hexdigest(),
                             start + timedelta(hours=1 + (p * ANSWERS + k) % 150),
                             json.dumps(sources)))
                for b, (cls, position, order) in classes.items():
                    states.append((run_id, b, workspace, uuid.uuid4(), cls, position, order))
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO runs (run_id, workspace_id, engine, model, prompt, answer, answer_sha256, "
            "answered_at, sources) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)", runs)
        await conn.executemany(
            "INSERT INTO run_brand_status (run_id, brand_id, workspace_id, status, "
            "classification_id, citation_class, decided_by, position, named_order) "
            "VALUES ($1, $2, $3, 'classified', $4, $5, 'deterministic', $6, $7)", states)


def _figure(row: dict, metric: str) -> dict:
    """The metrics row's cell a rule on ``metric`` watches."""
    return {"share_of_voice": row["share_of_voice"], "score": row["score"],
            "source_share_owned": row["source_share"]["owned"],
            "position_first": row["position"]["first"],
            "position_mean": row["position"]["mean"],
            "position_weighted_visibility": row["position"]["weighted_visibility"]}[metric]


async def test_every_new_metric_fires_on_a_real_change_with_the_metrics_own_figures(
        pool, heuristic, workspace):
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic)
    for name in ("Lumora", "Kestrel", "Orbit"):
        await bus.handle(CreateBrand(workspace, name, name.lower(),
                                     domains=(f"{name.lower()}.example",)))
    await bus.handle(UpdateBrand(workspace, "lumora", competitors=("kestrel",)))
    await _seed(pool, workspace, "lumora", "kestrel")
    await _seed(pool, workspace, "orbit", None)

    rules = {}
    for metric in NEW_METRICS:
        # Mean position: lower is better, so an improvement is "down".
        direction = "down" if metric == "position_mean" else "up"
        rules[metric] = await bus.handle(a.CreateAlertRule(workspace, "lumora", metric,
                                                           direction=direction))
        await bus.handle(a.CreateAlertRule(workspace, "orbit", metric))  # same weeks: silent
    wrong_way = await bus.handle(a.CreateAlertRule(workspace, "lumora", "position_mean",
                                                   direction="up"))

    [evaluation] = await bus.handle(a.EvaluateClosedPeriods(NOW, workspace))
    assert (evaluation.rules, evaluation.fired) == (13, 6)
    alerts, _ = await bus.handle(a.ListAlerts(workspace))
    fired = {al.metric: al for al in alerts}
    assert set(fired) == set(NEW_METRICS)
    assert {al.rule_id for al in alerts} == {r.rule_id for r in rules.values()}
    assert wrong_way.rule_id not in {al.rule_id for al in alerts}

    report = await bus.handle(GetMetrics(workspace, "week", "lumora", from_=BEFORE, to=END,
                                         group_by=()))
    rows = {row["period_start"]: row for row in report.rows}
    assert sorted(rows) == [BEFORE, AFTER]
    for metric, alert in fired.items():
        assert alert.p_value is not None and alert.p_adjusted is not None
        assert alert.p_adjusted <= 0.05 and alert.family_size == 13
        for period, start in ((alert.before, BEFORE), (alert.after, AFTER)):
            cell = _figure(rows[start], metric)
            assert period["value"] == pytest.approx(cell["value"]), metric
            assert period["n"] == cell["n"] and cell["underpowered"] is False, metric
            if metric == "position_mean":  # a place: the bootstrap over prompts only
                assert period["ci95_low"] is None
                assert (period["by_prompt_ci95_low"], period["by_prompt_ci95_high"]) == \
                    pytest.approx((cell["ci95_low"], cell["ci95_high"]))
                assert period["prompts"] == cell["prompts"]
            elif metric == "position_weighted_visibility":  # the row's interval is by prompt
                assert period["ci95_low"] is not None
                assert (period["by_prompt_ci95_low"], period["by_prompt_ci95_high"]) == \
                    pytest.approx((cell["ci95_low"], cell["ci95_high"]))
                assert period["prompts"] == cell["prompts"]
            else:
                assert (period["ci95_low"], period["ci95_high"]) == pytest.approx(
                    (cell["ci95_low"], cell["ci95_high"])), metric
            if metric == "source_share_owned":
                assert (period["by_prompt_ci95_low"], period["by_prompt_ci95_high"]) == \
                    pytest.approx((cell["by_prompt"]["ci95_low"], cell["by_prompt"]["ci95_high"]))
        assert len(alert.run_ids["after"]) == 20

    # Which way each moved, as the rules asked.
    assert fired["position_mean"].change < 0 < fired["share_of_voice"].change
    assert fired["score"].change > 0 and fired["position_first"].change > 0
    # The channels say a place as a place, and a share as a share.
    mean = message_of(fired["position_mean"], "Lumora")
    assert headline(mean).startswith(
        f"Lumora: mean position down {fired['position_mean'].before['value']:.2f} → ")
    text = email_content(mean).text
    assert f"(n {fired['position_mean'].after['n']}, 95% interval " in text
    assert "n/a" not in text  # the bootstrap interval stands in for Wilson's
    share = headline(message_of(fired["share_of_voice"], "Lumora"))
    assert share.startswith("Lumora: share of voice up ") and share.endswith("%")
