"""The statistical core of alerts (issue #25): a rule fires only on a real change, with the prompt
as the unit, corrected for the rules evaluated together, never on an underpowered cell."""

from __future__ import annotations

import numpy as np
import pytest

from attesta_classifier.domain import alerts as a
from attesta_classifier.domain import metrics
from attesta_classifier.domain.alert_commands import CreateAlertRule

pytestmark = pytest.mark.unit


def counts(rates: list[float], answers: int, prefix: str = "p") -> dict[str, tuple[int, int]]:
    """Per-prompt counts with round(rate * answers) successes of ``answers`` each."""
    return {f"{prefix}{i}": (round(r * answers), answers) for i, r in enumerate(rates)}


def rule(**kw: object) -> a.AlertRule:
    return a.AlertRule(**{"brand_id": "b1", "metric": "citation_rate", **kw})  # type: ignore[arg-type]


def one(r: a.AlertRule, cell: a.Cell, correction: a.Correction = "bh") -> a.AlertDecision:
    (decision,) = a.evaluate([(r, cell)], correction)
    return decision


BIG_UP = a.Cell(before=counts([0.2] * 20, 10), after=counts([0.6] * 20, 10))


def sums(values: list[float], answers: int, prefix: str = "p", *,
         unit_interval: bool = False, after: list[float] | None = None) -> a.MeanCell:
    """A mean's cell: prompt i's ``answers`` answers all have the value ``values[i]`` in the
    period before and ``after[i]`` (default: the same) in the period after."""
    def period(vs: list[float]) -> dict[str, tuple[float, float, int]]:
        return {f"{prefix}{i}": (v * answers, v * v * answers, answers) for i, v in enumerate(vs)}
    return a.MeanCell(period(values), period(values if after is None else after),
                      unit_interval=unit_interval)


def test_fires_on_a_large_real_change_and_carries_the_figures():
    d = one(rule(), BIG_UP)
    assert d.fired and d.reason == "fired"
    assert d.before.value == pytest.approx(0.2) and d.after.value == pytest.approx(0.6)
    assert d.change == pytest.approx(0.4)
    assert (d.before.n, d.before.prompts, d.after.n, d.after.prompts) == (200, 20, 200, 20)
    for period in (d.before, d.after):
        assert period.wilson.low < period.value < period.wilson.high
        assert period.by_prompt.n == period.n and period.by_prompt.low is not None
    assert d.p_value is not None and d.p_value < 1e-6
    assert d.p_adjusted == pytest.approx(d.p_value)  # a family of one


def test_underpowered_cell_never_fires_however_large_the_change():
    few_answers = a.Cell(before=counts([0.0] * 5, 4), after=counts([1.0] * 5, 4))  # n = 20
    few_prompts = a.Cell(before=counts([0.0] * 3, 50), after=counts([1.0] * 3, 50))
    assert a.underpowered(few_answers, min_n=30, min_prompts=5)
    assert a.underpowered(few_prompts, min_n=30, min_prompts=5)
    assert not a.underpowered(BIG_UP, min_n=30, min_prompts=5)
    # Prompts without answers do not count as prompts.
    padded = a.Cell(before={**counts([0.0] * 3, 50), "x": (0, 0), "y": (0, 0)},
                    after=counts([1.0] * 5, 50))
    assert a.underpowered(padded, min_n=30, min_prompts=5)
    for cell in (few_answers, few_prompts, padded):
        d = one(rule(), cell)
        assert not d.fired and d.reason == "underpowered" and d.p_value is None
    # The same change with enough prompts and answers fires.
    assert one(rule(), a.Cell(before=counts([0.0] * 5, 10), after=counts([1.0] * 5, 10))).fired


def test_identical_distributions_never_fire():
    cell = a.Cell(before=counts([0.1, 0.5, 0.9, 0.3] * 5, 10), after=counts([0.1, 0.5, 0.9, 0.3] * 5, 10))
    d = one(rule(), cell)
    assert not d.fired and d.reason == "not_significant"
    assert d.change == 0 and d.p_value == pytest.approx(1.0)


def test_no_false_alerts_on_seeded_noise():
    # 300 rules whose two periods come from the same prompts' rates (Beta), 10 answers each:
    # no real change anywhere, so BH at 0.05 should fire (almost) never.
    rng = np.random.default_rng(7)
    items = []
    for _ in range(300):
        base = rng.beta(2, 5, size=15)
        before = {f"p{i}": (int(rng.binomial(10, q)), 10) for i, q in enumerate(base)}
        after = {f"p{i}": (int(rng.binomial(10, q)), 10) for i, q in enumerate(base)}
        items.append((rule(), a.Cell(before, after)))
    decisions = a.evaluate(items, "bh")
    assert sum(d.fired for d in decisions) <= 1
    raw = sum((d.p_value or 1) <= 0.05 for d in decisions)
    assert raw <= 0.1 * len(decisions)  # uncorrected: close to the nominal 5%


def test_prompt_clustering_gives_a_larger_p_value_than_counting_answers():
    # Same answer totals (50/100 -> 70/100) both ways. Clustered: every prompt answers the same
    # way all ten times (2 of 10 prompts switched). Spread: every prompt moved a little.
    clustered = a.Cell(before=counts([1.0] * 5 + [0.0] * 5, 10),
                       after=counts([1.0] * 7 + [0.0] * 3, 10))
    spread = a.Cell(before=counts([0.5] * 10, 10), after=counts([0.7] * 10, 10))
    naive = a.answer_level_test(clustered)
    assert naive.p_value == pytest.approx(a.answer_level_test(spread).p_value)
    assert naive.p_value < 0.01  # the answer-level test would call it real
    test = a.prompt_unit_test(clustered)
    # By hand: influence 0.08 on the 2 switched prompts, -0.02 on the 8 others; Var(D) =
    # 10/9 * 0.016, se = 0.1333 (above the answer-level 0.0693), t = 0.2 / 0.1333 = 1.5 on 9 df.
    assert test.std_error == pytest.approx(0.133333, abs=1e-6) and test.statistic == pytest.approx(1.5)
    assert test.df == 9 and test.p_value == pytest.approx(0.167851, abs=1e-6)
    clustered_p = test.p_value
    assert clustered_p > 10 * naive.p_value and clustered_p > 0.05
    assert not one(rule(), clustered).fired
    # With no clustering the prompt test is no stricter than it needs to be: it still fires.
    assert one(rule(), spread).fired


def test_the_correction_raises_p_values_when_many_rules_are_evaluated():
    moderate = a.Cell(before=counts([0.3] * 6 + [0.5] * 6, 10), after=counts([0.5] * 6 + [0.6] * 6, 10))
    alone = one(rule(), moderate)
    assert alone.fired and alone.p_value is not None and alone.p_value < 0.05
    flat = a.Cell(before=counts([0.3] * 12, 10), after=counts([0.3] * 11 + [0.4], 10))
    for correction in a.CORRECTIONS:
        decisions = a.evaluate([(rule(), moderate)] + [(rule(), flat)] * 49, correction)
        first = decisions[0]
        assert first.p_value == pytest.approx(alone.p_value)  # raw p unchanged
        assert first.p_adjusted is not None and first.p_adjusted > 10 * alone.p_value
        assert not first.fired and first.reason == "not_significant"
    # Underpowered rules are not tested and do not enlarge the family.
    tiny = a.Cell(before=counts([0.0] * 2, 2), after=counts([1.0] * 2, 2))
    with_tiny = a.evaluate([(rule(), moderate)] + [(rule(), tiny)] * 49, "holm")
    assert with_tiny[0].fired and with_tiny[0].p_adjusted == pytest.approx(alone.p_value)


def test_holm_and_bh_adjusted_values():
    ps = [0.01, 0.04, 0.03, 0.005]
    assert a.adjust(ps, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert a.adjust(ps, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert a.adjust([], "bh") == []


def test_direction_is_respected():
    down = a.Cell(before=BIG_UP.after, after=BIG_UP.before)
    assert one(rule(direction="up"), BIG_UP).fired
    assert one(rule(direction="either"), BIG_UP).fired
    d = one(rule(direction="down"), BIG_UP)
    assert not d.fired and d.reason == "direction" and d.p_adjusted is not None and d.p_adjusted < 1e-6
    assert one(rule(direction="down"), down).fired
    assert one(rule(direction="up"), down).reason == "direction"


def test_per_prompt_pairing_and_prompts_in_one_period_only():
    # Prompts asked in only one period still count: each contributes its own term.
    before = counts([0.2] * 10, 10, "old")
    after = {**counts([0.2] * 5, 10, "old"), **counts([0.8] * 5, 10, "new")}
    d = one(rule(), a.Cell(before, after))
    assert d.fired and d.after.prompts == 10 and d.change == pytest.approx(0.3)
    assert a.prompt_unit_test(a.Cell(before, after)).df == 14


def test_invalid_rules_and_cells_are_refused():
    with pytest.raises(ValueError):
        rule(metric="reach")
    for metric in a.METRICS:  # every figure of the metrics rows a rule may watch
        assert rule(metric=metric).metric == metric
    # A proportion's rule needs a Cell, a mean's a MeanCell (with the score's [0, 1] flag).
    with pytest.raises(ValueError):
        a.evaluate([(rule(metric="score"), BIG_UP)])
    with pytest.raises(ValueError):
        a.evaluate([(rule(metric="share_of_voice"), sums([1.0] * 5, 10))])
    with pytest.raises(ValueError):
        a.evaluate([(rule(metric="score"), sums([0.5] * 5, 10))])  # not flagged [0, 1]
    with pytest.raises(ValueError):  # no real values have these sums (sum**2 > n * squares)
        a.MeanCell(before={"p": (10.0, 20.0, 2)}, after={})
    with pytest.raises(ValueError):  # a value above 1 in a [0, 1] mean
        a.MeanCell(before={"p": (3.0, 9.0, 2)}, after={}, unit_interval=True)
    with pytest.raises(ValueError):
        rule(direction="sideways")
    with pytest.raises(ValueError):
        rule(min_prompts=1)
    with pytest.raises(ValueError):
        rule(alpha=0)
    with pytest.raises(ValueError):
        a.Cell(before={"p": (3, 2)}, after={})
    with pytest.raises(ValueError):
        a.evaluate([], "bonferroni")  # type: ignore[arg-type]
    r = rule(segment={"engine": "chatgpt"})
    with pytest.raises(TypeError):
        r.segment["engine"] = "x"  # type: ignore[index]


def test_a_rules_default_minimums_are_the_metrics_own():
    """One definition: a rule created without minimums uses the cells' underpowered limits."""
    rule, command = a.AlertRule("b", "citation_rate"), CreateAlertRule("w", "b", "citation_rate")
    assert (rule.min_n, rule.min_prompts) == (metrics.DEFAULT_MIN_N, metrics.DEFAULT_MIN_PROMPTS)
    assert (command.min_n, command.min_prompts, command.alpha) == (
        metrics.DEFAULT_MIN_N, metrics.DEFAULT_MIN_PROMPTS, a.DEFAULT_ALPHA)


# -- means: the score and the mean position ----------------------------------------------------

def test_a_proportion_is_the_mean_of_a_0_1_outcome_one_test_for_both():
    """A Cell and the MeanCell of the same 0/1 answers get the same statistic, p and figures."""
    cells = [BIG_UP, a.Cell(before=counts([1.0] * 5 + [0.0] * 5, 10),
                            after=counts([1.0] * 7 + [0.0] * 3, 10))]
    for cell in cells:
        as_mean = a.MeanCell({p: (s, s, n) for p, (s, n) in cell.before.items()},
                             {p: (s, s, n) for p, (s, n) in cell.after.items()},
                             unit_interval=True)
        assert a.prompt_unit_test(as_mean) == a.prompt_unit_test(cell)
        rate, mean = one(rule(), cell), one(rule(metric="score"), as_mean)
        assert (mean.fired, mean.p_value, mean.change) == (rate.fired, rate.p_value, rate.change)
        assert mean.before == rate.before and mean.after == rate.after


def test_mean_position_by_hand_prompt_clustered():
    # 10 prompts x 10 answers; each prompt puts the brand at the same place every time: 1st on
    # five prompts and 3rd on five (mean 2.0), then two of the first move to 3rd (mean 2.4).
    # By hand: influence -0.04 on 8 prompts, +0.16 on the 2 that moved; Var = 10/9 * 0.064,
    # se = 0.26667 (answer-level floor: pooled variance 0.96 * 2/100, se 0.139); t = 0.4 /
    # 0.26667 = 1.5 on 9 df -- the 0/1 example above with places 1 and 3 (the test does not
    # depend on the scale of the values).
    cell = sums([1.0] * 5 + [3.0] * 5, 10, after=[1.0] * 3 + [3.0] * 7)
    test = a.prompt_unit_test(cell)
    assert test.change == pytest.approx(0.4) and test.std_error == pytest.approx(0.266667, abs=1e-6)
    assert test.statistic == pytest.approx(1.5) and test.df == 9
    assert test.p_value == pytest.approx(0.167851, abs=1e-6)
    d = one(rule(metric="position_mean"), cell)
    assert not d.fired and d.reason == "not_significant"
    assert (d.before.value, d.after.value) == pytest.approx((2.0, 2.4))
    # A place is not a proportion: no Wilson interval, the bootstrap over prompts only.
    assert d.before.wilson.low is None and d.before.wilson.high is None
    assert d.before.by_prompt.low is not None and d.before.by_prompt.low <= 2.0
    # Every prompt a little further down the list: a real change, and "up" is the way it went.
    spread = sums([1.0, 1.5, 2.0, 2.5, 1.0, 1.5, 2.0, 2.5, 1.0, 1.5], 10,
                  after=[2.0, 2.5, 3.0, 3.5, 2.0, 2.5, 3.0, 3.5, 2.0, 2.5])
    assert one(rule(metric="position_mean", direction="up"), spread).fired
    assert one(rule(metric="position_mean", direction="down"), spread).reason == "direction"


def test_mean_test_agrees_with_welch_when_every_answer_is_its_own_prompt():
    """With one answer per prompt and no prompt in both periods, the prompt as the unit is the
    answer, and the test is the textbook unequal-variance comparison of two means: scipy's
    Welch t-test. Near no change they agree within 10 %; the test is never (beyond 2 %) more
    confident than Welch's (the floor at the variance pooled over both periods, as the pooled two-proportion
    test's, makes it more cautious as the change grows)."""
    from scipy import stats  # noqa: PLC0415 - test-only cross-check against the library

    rng = np.random.default_rng(3)
    for shift in (0.0, 0.05, 0.15, 0.3, 0.6, 1.0) * 5:
        x, y = rng.normal(2.0, 0.6, 25), rng.normal(2.0 + shift, 1.2, 30)
        cell = a.MeanCell({f"b{i}": (v, v * v, 1) for i, v in enumerate(x)},
                          {f"a{i}": (v, v * v, 1) for i, v in enumerate(y)})
        ours, welch = a.prompt_unit_test(cell), stats.ttest_ind(y, x, equal_var=False)
        assert ours.change == pytest.approx(y.mean() - x.mean())
        assert np.sign(ours.statistic) == np.sign(welch.statistic)
        # (1-2 % apart at no change: the CR1 factor k/(k-1) against Welch's 1/(n-1).)
        assert abs(ours.statistic) <= 1.02 * abs(welch.statistic)
        assert ours.p_value >= 0.98 * welch.pvalue
        if abs(welch.statistic) < 2:
            assert abs(ours.statistic) >= 0.9 * abs(welch.statistic)


def test_means_never_fire_on_noise_or_an_underpowered_cell():
    rng = np.random.default_rng(11)
    items = []
    for _ in range(200):  # the score: each prompt's class mix drawn once, answers redrawn
        weights = rng.choice([0.0, 0.25, 0.75, 1.0], size=(15, 4), replace=True)
        def week() -> dict[str, tuple[float, float, int]]:
            out = {}
            for i, w in enumerate(weights):
                v = rng.choice(w, size=8)
                out[f"p{i}"] = (float(v.sum()), float((v * v).sum()), 8)
            return out
        items.append((rule(metric="score"), a.MeanCell(week(), week(), unit_interval=True)))
    decisions = a.evaluate(items, "bh")
    assert sum(d.fired for d in decisions) <= 1
    assert sum((d.p_value or 1) <= 0.05 for d in decisions) <= 0.1 * len(decisions)
    # Places 1 -> 3 on every prompt, but four prompts only (or too few answers): never tested.
    few_prompts = sums([1.0] * 4, 20, after=[3.0] * 4)
    few_answers = sums([1.0] * 6, 4, after=[3.0] * 6)
    for cell in (few_prompts, few_answers):
        d = one(rule(metric="position_mean"), cell)
        assert a.underpowered(cell, 30, 5) and not d.fired and d.reason == "underpowered"
        assert d.p_value is None
    assert one(rule(metric="position_mean"), sums([1.0] * 6, 5, after=[3.0] * 6)).fired
