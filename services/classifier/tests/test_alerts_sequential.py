"""The repeated looks at one week share a rule's alpha (issue #25, docs/alerts.md "Looking many
times"): the pure logic of ``domain.alerts.look`` -- the alpha spent never exceeds the nominal,
a redelivered slot does not spend twice, the closing look spends the rest -- and, on seeded
noise, that the week's looks together keep a rule's false-alert rate at its nominal level where
testing every look at alpha does not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attesta_classifier.domain import alerts as a

pytestmark = pytest.mark.unit

ALPHA = 0.05


def test_the_spending_function_is_lan_demets_obrien_fleming_of_the_interim_budget():
    budget = a.INTERIM_SHARE * ALPHA
    for t in (0.05, 0.2, 0.5, 0.8, 1.0):
        expected = 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - budget / 2) / np.sqrt(t))
        assert a.interim_spending(t, ALPHA) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert a.interim_spending(0.0, ALPHA) == 0.0
    assert a.interim_spending(1.0, ALPHA) == pytest.approx(budget)
    assert a.interim_spending(3.0, ALPHA) == pytest.approx(budget)  # t is capped at 1
    ts = np.linspace(0, 1, 101)
    spent = [a.interim_spending(float(t), ALPHA) for t in ts]
    assert all(x <= y for x, y in zip(spent, spent[1:], strict=False))  # never decreases
    # O'Brien-Fleming type: little early, most late.
    assert a.interim_spending(0.5, ALPHA) < 0.05 * budget


@pytest.mark.parametrize("seed", range(20))
def test_the_spent_alpha_never_exceeds_the_nominal(seed):
    """Any sequence of looks -- information fractions up, down, repeated, above 1, with
    redeliveries, a close anywhere or none -- spends at most alpha, each level is >= 0, and
    the levels add up to what the state says was spent."""
    rng = np.random.default_rng(seed)
    alpha = float(rng.choice([0.01, 0.05, 0.1]))
    state = a.Spending(alpha)
    levels = []
    close_at = int(rng.integers(0, 80))  # at or after 60: no close in this sequence
    for i in range(60):
        look_id = f"slot:{int(rng.integers(0, i + 1))}"  # some ids come again (redeliveries)
        step = a.look(state, look_id, float(rng.uniform(0, 1.3)), closing=i == close_at)
        assert step.level >= 0
        levels.append(step.level)
        state = step.spending
        if not state.closed:
            assert state.spent <= a.INTERIM_SHARE * alpha + 1e-15  # the open week's budget
        assert state.spent <= alpha + 1e-15
    assert sum(levels) == pytest.approx(state.spent, abs=1e-15)
    assert sum(levels) <= alpha + 1e-15


def test_a_redelivered_slot_does_not_spend_twice():
    first = a.look(a.Spending(ALPHA), "slot:hourly:2026-11-25T14:00:00+00:00", 0.6)
    assert first.level == pytest.approx(a.interim_spending(0.6, ALPHA)) and first.level > 0
    again = a.look(first.spending, "slot:hourly:2026-11-25T14:00:00+00:00", 0.9)
    assert again.level == 0.0 and again.spending == first.spending
    # The next slot spends only the increment of the curve since.
    nxt = a.look(first.spending, "slot:hourly:2026-11-25T15:00:00+00:00", 0.9)
    assert nxt.level == pytest.approx(a.interim_spending(0.9, ALPHA) - first.level)
    # A slot that saw less information than one before spends nothing (the fraction seen only
    # grows), but is recorded as seen.
    late = a.look(nxt.spending, "slot:daily:2026-11-25T09:00:00+00:00", 0.7)
    assert late.level == 0.0 and late.spending.spent == nxt.spending.spent
    assert "slot:daily:2026-11-25T09:00:00+00:00" in late.spending.looks


def test_the_closing_look_spends_the_rest():
    state = a.Spending(ALPHA)
    for i, t in enumerate((0.2, 0.5, 0.8, 0.95)):
        state = a.look(state, f"slot:{i}", t).spending
    spent_before = state.spent
    assert 0 < spent_before <= a.INTERIM_SHARE * ALPHA
    close = a.look(state, a.CLOSE, 0.97, closing=True)
    assert close.level == pytest.approx(ALPHA - spent_before)
    assert close.level >= (1 - a.INTERIM_SHARE) * ALPHA  # the close keeps most of alpha
    assert close.spending.closed and close.spending.spent == pytest.approx(ALPHA)
    # After the close nothing more is spent: a late slot, a second close.
    assert a.look(close.spending, "slot:late", 1.0).level == 0.0
    assert a.look(close.spending, a.CLOSE, 1.0, closing=True).level == 0.0
    # A week with no look before its close tests at the rule's whole alpha, as before.
    assert a.look(a.Spending(ALPHA), a.CLOSE, 1.0, closing=True).level == ALPHA


def test_a_look_with_nothing_left_never_fires_and_at_level_keeps_the_rest():
    rule = a.AlertRule("b", "citation_rate")
    cell = a.Cell({f"p{i}": (1, 10) for i in range(20)}, {f"p{i}": (9, 10) for i in range(20)})
    [decision] = a.evaluate([(rule, cell)])
    assert decision.fired and decision.level == rule.alpha and decision.p_adjusted < 1e-9
    assert not a.at_level(decision, 0.0).fired  # even an adjusted p of (nearly) 0
    held = a.at_level(decision, 1e-6)
    assert held.fired and held.level == 1e-6 and held.p_value == decision.p_value
    weak = a.Cell({"p0": (1, 10)}, {"p0": (9, 10)})
    [under] = a.evaluate([(rule, weak)])
    assert a.at_level(under, 0.05) == under  # untested: left as it is


def test_the_information_fraction_is_the_open_weeks_answers_over_the_closed_weeks():
    cell = a.Cell({"p0": (3, 10), "p1": (3, 10)}, {"p0": (1, 5), "p1": (0, 0)})
    assert a.information(cell) == pytest.approx(0.25)
    assert a.information(a.Cell({"p0": (3, 10)}, {"p0": (9, 30)})) == 1.0  # capped
    assert a.information(a.Cell({}, {"p0": (1, 3)})) == 0.0


def test_the_weeks_looks_together_keep_a_rules_false_alert_rate_at_alpha():
    """Seeded noise (no change), one rule alone: 12 looks at a growing week and the close.
    Testing every look at alpha fires in more weeks than alpha; the spent looks do not."""
    rng = np.random.default_rng(20261205)
    rule = a.AlertRule("b", "citation_rate", min_n=30, min_prompts=5, alpha=ALPHA)
    weeks, looks, prompts, answers = 600, 12, 12, 12
    every_look = spent_looks = 0
    for _ in range(weeks):
        rates = rng.beta(2, 5, size=prompts)
        before = {f"p{i}": (int(s), answers) for i, s in enumerate(rng.binomial(answers, rates))}
        slots = rng.integers(0, looks, size=(prompts, answers))  # the look each answer lands in
        hits = rng.random((prompts, answers)) < rates[:, None]
        state, any_raw, any_spent = a.Spending(ALPHA), False, False
        for j in range(looks + 1):
            closing = j == looks
            seen = slots < j if not closing else np.ones_like(slots, dtype=bool)
            after = {f"p{i}": (int((hits[i] & seen[i]).sum()), int(seen[i].sum()))
                     for i in range(prompts)}
            cell = a.Cell(before, after)
            if a.underpowered(cell, rule.min_n, rule.min_prompts):
                continue
            p = a.prompt_unit_test(cell).p_value
            any_raw |= p <= ALPHA
            step = a.look(state, a.CLOSE if closing else f"slot:{j}", a.information(cell),
                          closing=closing)
            state = step.spending
            any_spent |= step.level > 0 and p <= step.level
        every_look += any_raw
        spent_looks += any_spent
    assert spent_looks / weeks <= ALPHA
    assert every_look > 1.5 * spent_looks and every_look / weeks > ALPHA
