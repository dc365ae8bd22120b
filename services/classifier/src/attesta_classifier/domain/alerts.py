"""Alerts that fire only on real changes (issue #25): the pure statistical core.

No I/O, no framework. A caller (the service that owns the metrics, when a period closes)
builds one :class:`Cell` (or :class:`MeanCell`) per :class:`AlertRule` -- the rule's metric per
prompt in the period before and the period after -- and calls :func:`evaluate` on all the rules it evaluates
together. Each :class:`AlertDecision` carries both periods' values, n, distinct prompts and 95%
intervals, the raw and the adjusted p-value, and whether the rule fired or why not.

Metrics covered (``METRICS``), each with the test its per-answer outcome calls for:

* **Proportions** (``PROPORTIONS``: a 0/1 outcome per trial, the cell holds per-prompt
  ``(successes, trials)``): ``citation_rate`` (cited / classified pairs), ``confabulation_rate``
  (confabulated / mentioned pairs), ``share_of_voice`` (the brand's citations / the citations of
  the brand and its competitors), ``source_share_owned``/``_competitor``/``_third_party``
  (answers citing at least one such source / answers) and ``position_first`` (answers naming the
  brand before any competitor / answers with a position). Tested as a change of the pooled rate.
* **Means** (``MEANS``: a number per answer, the cell -- :class:`MeanCell` -- holds per-prompt
  ``(sum, sum of squares, answers)``): ``score`` (the Attesta score's weight of each classified
  pair, in [0, 1]) and ``position_mean`` (the brand's place among the brands an answer names, 1 =
  first, over the answers naming it; lower is better, so ``up`` means it moved down the list)
  and ``position_weighted_visibility`` (the position weight of each answer with a position:
  0.9^(k-1) for the k-th named, 0 when not named; in [0, 1], higher is better).
  Tested as a change of the pooled mean.

Both are one test (:func:`prompt_unit_test`): a proportion is the mean of a 0/1 outcome, and
for 0/1 outcomes the mean test below is exactly the two-proportion test. The caller puts the
metric's per-prompt figures in the cell (``service_layer/metrics.py``'s ``prompt_counts`` and
``prompt_sums``, from the same buckets the metrics API reads).

The test, and why
-----------------
Answers to one prompt are correlated (the same question asked again tends to get the same kind
of answer; see "The prompt as the unit" in docs/metrics.md), so a pooled two-proportion z-test
that counts every answer as an independent trial is anti-conservative: 10 prompts asked 10 times
are not 100 independent observations. The unit here is the **prompt**:

* The statistic is the change of the pooled figure, ``D = Y2/N2 - Y1/N1`` (the figure the
  charts show; Y the sum of the per-answer values, the successes for a proportion), over its
  **cluster-robust (sandwich) standard error with the prompt as the cluster**. Each prompt's
  contribution (influence) to ``D`` is ``u_i = (y2_i - m2*n2_i)/N2 - (y1_i - m1*n1_i)/N1`` (m the
  pooled figure of the period; a prompt asked in only one period has a zero term for the
  other), and ``Var(D) = k/(k-1) * sum(u_i**2)`` over the k distinct prompts (the CR1
  small-sample factor). This is the usual linearisation of a ratio estimator; it equals the
  cluster-robust variance of the period coefficient in a linear (probability) model clustered
  by prompt. It allows any correlation between the answers of one prompt, within a period and
  across the two periods (the same prompts asked again: the pairing is used).
* The variance is never taken below the answer-level one, ``v(1/N1 + 1/N2)`` with ``v`` the
  variance of the per-answer values of both periods pooled (``v = p(1-p)`` for a proportion): a
  design effect of at least 1. Sandwich variances are biased low with few clusters and are 0
  when every prompt moved by exactly the same amount, and an alert should never claim more
  certainty than if the answers were independent. The cost is that a change the pairing of the
  prompts could have shown more sharply is judged as if unpaired; alerts prefer silence.
* The reference distribution is Student's t with ``k - 1`` degrees of freedom (k = distinct
  prompts), not the normal (``scipy.stats.t``): the number of prompts, not of answers, limits
  what is known.
* Why not Welch's t-test on per-prompt means (``scipy.stats.ttest_ind``) for the means: it tests
  the unweighted mean of the prompts' means, not the pooled figure the alert reports (a prompt
  asked once would weigh as much as one asked fifty times, and the two can move in opposite
  directions), it drops the pairing of a prompt asked in both weeks, and it has no answer when
  every prompt's mean is the same within each week. With one answer per prompt and no prompt
  in both periods the two agree (``tests/test_alerts_domain.py`` checks it against scipy).
* The p-value is always two-sided. A rule's direction (``up`` / ``down`` / ``either``) filters
  afterwards: a significant change the wrong way does not fire and says ``direction``.

Assumptions: prompts are independent of each other (they are the sampled units, "questions like
these"); each prompt's answers may be correlated in any way; the statistic is roughly normal,
which needs a handful of prompts with answers in both periods (``min_prompts``) and a pooled rate
not pinned at 0 or 1 by a tiny n (``min_n``). A permutation or bootstrap over prompts would avoid
the normal approximation but cannot produce p-values small enough for a correction over
hundreds of rules (Holm at alpha 0.05 over 1,000 rules needs p < 5e-5) without millions of
resamples per rule; the analytic test gives exact small p-values in microseconds.

Multiplicity: the p-values of the rules evaluated together (the powered ones; an underpowered
cell is not tested and is not counted) are adjusted with Benjamini-Hochberg
(``scipy.stats.false_discovery_control``; controls the expected share of false alerts among the
alerts) or Holm (controls the chance of any false alert at all; stricter). A rule fires when its
*adjusted* p-value is at most its own ``alpha`` and the change goes its way.

Intervals: each period carries the Wilson interval over answers and the seeded percentile
bootstrap over prompts (``metrics.prompt_bootstrap``), the same two intervals the metrics rows
carry; read the prompt one when prompts were asked several times. A mean that is not in [0, 1]
(``position_mean``) has no Wilson interval (its bounds are None), as in the metrics rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

import numpy as np
from scipy import special, stats  # type: ignore[import-untyped]

from attesta_classifier.domain import metrics
from attesta_classifier.domain.metrics import (
    DEFAULT_MIN_N, DEFAULT_MIN_PROMPTS, Proportion, prompt_bootstrap, wilson)

Metric = Literal["citation_rate", "confabulation_rate", "share_of_voice", "source_share_owned",
                 "source_share_competitor", "source_share_third_party", "position_first",
                 "position_mean", "position_weighted_visibility", "score"]
Direction = Literal["up", "down", "either"]
Correction = Literal["bh", "holm"]
Reason = Literal["fired", "underpowered", "direction", "not_significant"]

PROPORTIONS: tuple[Metric, ...] = (
    "citation_rate", "confabulation_rate", "share_of_voice", "source_share_owned",
    "source_share_competitor", "source_share_third_party", "position_first")
MEANS: tuple[Metric, ...] = ("score", "position_mean", "position_weighted_visibility")
METRICS: tuple[Metric, ...] = (*PROPORTIONS, *MEANS)
# Means whose per-answer value lies in [0, 1]: their period figures carry a Wilson interval, as
# in the metrics rows (the score's is conservative there; docs/metrics.md).
UNIT_INTERVAL_MEANS: tuple[Metric, ...] = ("score", "position_weighted_visibility")
DIRECTIONS: tuple[Direction, ...] = ("up", "down", "either")
CORRECTIONS: tuple[Correction, ...] = ("bh", "holm")

# Defaults of a rule's minimum sample (answers in each period and distinct prompts with answers
# in each period) are the metrics' own (``metrics.DEFAULT_MIN_N``/``DEFAULT_MIN_PROMPTS``, one
# definition): below either, the cell is underpowered and the rule never fires.
DEFAULT_ALPHA = 0.05

Counts = Mapping[str, tuple[int, int]]  # prompt_id -> (successes, trials)
Sums = Mapping[str, tuple[float, float, int]]  # prompt_id -> (sum, sum of squares, answers)


@dataclass(frozen=True)
class AlertRule:
    """What to watch: one brand's metric in one segment (e.g. ``{"engine": "chatgpt",
    "branded": "false"}``), which way of change matters, and the minimum sample."""

    brand_id: str
    metric: Metric
    segment: Mapping[str, str] = field(default_factory=dict)
    direction: Direction = "either"
    min_n: int = DEFAULT_MIN_N
    min_prompts: int = DEFAULT_MIN_PROMPTS
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"metric {self.metric!r} not one of {METRICS}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r} not one of {DIRECTIONS}")
        if self.min_n < 1:
            raise ValueError("min_n must be at least 1")
        if self.min_prompts < 2:
            raise ValueError("min_prompts must be at least 2 (one prompt has no variance)")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be in (0, 1)")
        object.__setattr__(self, "segment", MappingProxyType(dict(self.segment)))


@dataclass(frozen=True)
class Cell:
    """The rule's metric in two periods, as per-prompt counts: prompt_id -> (successes, trials),
    e.g. (cited pairs, classified pairs) for the citation rate."""

    before: Counts
    after: Counts

    def __post_init__(self) -> None:
        for period in (self.before, self.after):
            for prompt, (s, n) in period.items():
                if n < 0 or not 0 <= s <= n:
                    raise ValueError(f"prompt {prompt!r}: successes {s} outside [0, {n}]")
        object.__setattr__(self, "before", MappingProxyType(dict(self.before)))
        object.__setattr__(self, "after", MappingProxyType(dict(self.after)))


@dataclass(frozen=True)
class MeanCell:
    """A mean metric in two periods, per prompt: prompt_id -> (sum of the per-answer values,
    sum of their squares, answers), e.g. (sum of places, sum of squared places, answers naming
    the brand) for ``position_mean``. ``unit_interval``: every value lies in [0, 1] (the score),
    so a Wilson interval is shown as for a rate."""

    before: Sums
    after: Sums
    unit_interval: bool = False

    def __post_init__(self) -> None:
        for period in (self.before, self.after):
            for prompt, (total, squares, n) in period.items():
                # Cauchy-Schwarz: total**2 <= n * squares for real values (with rounding room).
                if n < 0 or squares < 0 or total * total > n * squares * (1 + 1e-9) + 1e-9:
                    raise ValueError(f"prompt {prompt!r}: sums ({total}, {squares}, {n}) are not "
                                     "those of real values")
                if self.unit_interval and not (0 <= total <= n and squares <= total + 1e-9):
                    raise ValueError(f"prompt {prompt!r}: values outside [0, 1]")
        object.__setattr__(self, "before", MappingProxyType(dict(self.before)))
        object.__setattr__(self, "after", MappingProxyType(dict(self.after)))


AnyCell = Cell | MeanCell


@dataclass(frozen=True)
class PeriodSummary:
    value: float | None
    n: int
    prompts: int
    wilson: Proportion  # 95% Wilson interval over answers
    by_prompt: Proportion  # 95% seeded bootstrap over prompts


@dataclass(frozen=True)
class Significance:
    change: float  # after - before, pooled rates
    statistic: float  # change / standard error
    std_error: float
    df: int  # degrees of freedom of the t reference (answer-level test: 0, the normal)
    p_value: float  # two-sided


@dataclass(frozen=True)
class AlertDecision:
    rule: AlertRule
    before: PeriodSummary
    after: PeriodSummary
    fired: bool
    reason: Reason  # "fired", or why not
    change: float | None  # after - before; None when a period is empty
    p_value: float | None  # raw two-sided; None when underpowered (not tested)
    p_adjusted: float | None  # over the powered rules evaluated together
    correction: Correction
    # The level the adjusted p-value was held to: the rule's ``alpha`` for a single look (a
    # weekly close with no look before it, a test alert), or what the week's alpha spending
    # gives this look (:func:`look`, :func:`at_level`); None when not tested.
    level: float | None = None


def _used(period: Mapping[str, tuple[float, float, int]]) -> dict[str, tuple[float, float, int]]:
    return {p: v for p, v in period.items() if v[2] > 0}


def _periods(cell: AnyCell) -> tuple[dict[str, tuple[float, float, int]],
                                     dict[str, tuple[float, float, int]]]:
    """Both periods as (sum, sum of squares, answers) per prompt with answers (a 0/1 outcome's
    square is itself)."""
    if isinstance(cell, Cell):
        return _used(_as_sums(cell.before)), _used(_as_sums(cell.after))
    return _used(cell.before), _used(cell.after)


def _as_sums(counts: Counts) -> dict[str, tuple[float, float, int]]:
    return {p: (float(s), float(s), n) for p, (s, n) in counts.items()}


def underpowered(cell: AnyCell, min_n: int, min_prompts: int) -> bool:
    """True when either period has fewer than ``min_n`` answers or fewer than ``min_prompts``
    distinct prompts with answers: such a cell is not tested and never fires."""
    return any(metrics.underpowered(sum(v[2] for v in used.values()), len(used), min_n,
                                    min_prompts)
               for used in _periods(cell))


def prompt_unit_test(cell: AnyCell) -> Significance:
    """Two-sided test of a change of the pooled figure (a rate, or a mean) with the prompt as
    the unit: the cluster-robust statistic against t(k - 1), its variance floored at the
    answer-level one (module docstring). Needs answers in both periods and at least two
    distinct prompts."""
    before, after = _periods(cell)
    prompts = sorted(before.keys() | after.keys())
    k = len(prompts)
    empty = (0.0, 0.0, 0)
    # Columns: sum, sum of squares, answers of each prompt (zeros where it was not asked).
    y1, q1, n1 = np.array([before.get(p, empty) for p in prompts], dtype=float).reshape(-1, 3).T
    y2, q2, n2 = np.array([after.get(p, empty) for p in prompts], dtype=float).reshape(-1, 3).T
    big_n1, big_n2 = float(n1.sum()), float(n2.sum())
    if k < 2 or big_n1 == 0 or big_n2 == 0:
        raise ValueError("the test needs answers in both periods and at least two prompts")
    m1, m2 = float(y1.sum()) / big_n1, float(y2.sum()) / big_n2
    influence = (y2 - m2 * n2) / big_n2 - (y1 - m1 * n1) / big_n1
    var_cluster = k / (k - 1) * float(np.dot(influence, influence))
    # The per-answer values' variance, both periods pooled (p(1-p) for a 0/1 outcome); clipped
    # at 0 against rounding when every value is the same.
    big_n = big_n1 + big_n2
    pooled = (float(y1.sum()) + float(y2.sum())) / big_n
    spread = max(0.0, (float(q1.sum()) + float(q2.sum())) / big_n - pooled * pooled)
    var_answers = spread * (1 / big_n1 + 1 / big_n2)
    se = math.sqrt(max(var_cluster, var_answers))
    change = m2 - m1
    if se == 0.0:  # every answer the same in both periods: no change at all
        return Significance(change, 0.0, 0.0, k - 1, 1.0)
    statistic = change / se
    # Student's t CDF as scipy's ufunc (``stats.t.sf`` gives the same number through a slower
    # generic path; the repeated looks of benchmarks/alert_simulation.py call this millions of
    # times).
    p_value = float(min(1.0, 2 * float(special.stdtr(k - 1, -abs(statistic)))))
    return Significance(change, statistic, se, k - 1, p_value)


def answer_level_test(cell: Cell) -> Significance:
    """The naive baseline, NOT used to fire: the pooled two-proportion z-test that counts every
    answer as an independent trial. Kept to show (tests, benchmarks/alert_simulation.py) how
    much it over-fires on prompt-clustered data."""
    s1 = sum(s for s, _ in cell.before.values())
    n1 = sum(n for _, n in cell.before.values())
    s2 = sum(s for s, _ in cell.after.values())
    n2 = sum(n for _, n in cell.after.values())
    if n1 == 0 or n2 == 0:
        raise ValueError("the test needs answers in both periods")
    change = s2 / n2 - s1 / n1
    pooled = (s1 + s2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0.0:
        return Significance(change, 0.0, 0.0, 0, 1.0)
    statistic = change / se
    return Significance(change, statistic, se, 0, float(min(1.0, 2 * float(stats.norm.sf(abs(statistic))))))


def holm(p_values: Iterable[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): sorted ascending,
    adj_(j) = max over i <= j of min(1, (m - i + 1) * p_(i))."""
    ps = list(p_values)
    m = len(ps)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[index]))
        adjusted[index] = running
    return adjusted


def adjust(p_values: list[float], correction: Correction) -> list[float]:
    """Adjusted p-values for the family ``p_values`` (Benjamini-Hochberg or Holm)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} not one of {CORRECTIONS}")
    if not p_values:
        return []
    if correction == "holm":
        return holm(p_values)
    return [float(x) for x in stats.false_discovery_control(np.asarray(p_values, dtype=float), method="bh")]


def summarize(period: Mapping[str, tuple[float, float, int]], wilson_interval: bool = True
              ) -> PeriodSummary:
    """One period's figure, n, prompts and intervals, from (sum, sum of squares, answers) per
    prompt. ``wilson_interval`` False (a mean outside [0, 1]): the Wilson bounds are None."""
    used = _used(period)
    s = sum(v[0] for v in used.values())
    n = sum(v[2] for v in used.values())
    w = wilson(s, n) if wilson_interval else Proportion(s, n, s / n if n else None, None, None)
    return PeriodSummary(w.value, n, len(used), w,
                         prompt_bootstrap([(v[0], v[2]) for v in used.values()]))


def _check_cell(rule: AlertRule, cell: AnyCell) -> None:
    if (rule.metric in MEANS) != isinstance(cell, MeanCell):
        raise ValueError(f"metric {rule.metric!r} needs a "
                         f"{'MeanCell' if rule.metric in MEANS else 'Cell'}")
    if isinstance(cell, MeanCell) and cell.unit_interval != (rule.metric in UNIT_INTERVAL_MEANS):
        raise ValueError(f"metric {rule.metric!r}: unit_interval is "
                         f"{rule.metric in UNIT_INTERVAL_MEANS}")


def evaluate(rules_with_cells: Iterable[tuple[AlertRule, AnyCell]],
             correction: Correction = "bh") -> list[AlertDecision]:
    """Decide every rule evaluated together (one decision each, same order): a proportion's
    rule with a :class:`Cell`, a mean's with a :class:`MeanCell` (else ValueError).

    Underpowered cells are not tested (``p_value`` None, reason ``underpowered``). The others
    are tested with :func:`prompt_unit_test`; their p-values form one family, adjusted with
    ``correction``. A rule fires when its adjusted p-value is at most its ``alpha`` and the
    change goes its ``direction`` (else reason ``direction``, or ``not_significant``)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} not one of {CORRECTIONS}")
    items = list(rules_with_cells)
    for rule, cell in items:
        _check_cell(rule, cell)
    results: list[Significance | None] = [
        None if underpowered(cell, rule.min_n, rule.min_prompts) else prompt_unit_test(cell)
        for rule, cell in items]
    tested = [(i, r.p_value) for i, r in enumerate(results) if r is not None]
    adjusted = dict(zip([i for i, _ in tested], adjust([p for _, p in tested], correction),
                        strict=True))
    decisions = []
    for i, (rule, cell) in enumerate(items):
        with_wilson = isinstance(cell, Cell) or cell.unit_interval
        before, after = (summarize(period, with_wilson) for period in _periods(cell))
        result = results[i]
        change = (after.value - before.value
                  if after.value is not None and before.value is not None else None)
        if result is None:
            decisions.append(AlertDecision(rule, before, after, False, "underpowered", change,
                                           None, None, correction))
            continue
        p_adj = adjusted[i]
        reason = _reason(rule, result.change, p_adj, rule.alpha)
        decisions.append(AlertDecision(rule, before, after, reason == "fired", reason,
                                       result.change, result.p_value, p_adj, correction,
                                       rule.alpha))
    return decisions


def _reason(rule: AlertRule, change: float, p_adjusted: float, level: float) -> Reason:
    if level <= 0 or p_adjusted > level:  # a look with nothing left to spend never fires
        return "not_significant"
    if (rule.direction == "up" and change <= 0) or (rule.direction == "down" and change >= 0):
        return "direction"
    return "fired"


# -- repeated looks at one week: alpha spending ----------------------------------------------
#
# A rule is evaluated after every schedule slot on the open week so far, and again when the week
# closes: with an hourly schedule, ~168 looks at one growing week. Testing each look at the
# rule's ``alpha`` would let noise fire it far more often than ``alpha`` per week (any one of
# many correlated chances). The looks of one (rule, week) therefore share the rule's ``alpha``:
#
# * **Spending function.** The looks of the *open* week may have spent, by information fraction
#   t (:func:`information`: the week's answers so far / the answers the schedules plan for it),
#   at most ``A(t) = 2 - 2*Phi(z_{1 - s*alpha/2} / sqrt(t))``: the Lan-DeMets spending function
#   of O'Brien-Fleming type (Lan & DeMets 1983) for a budget of ``s * alpha`` (``s`` =
#   ``INTERIM_SHARE``, 0.2). ``A`` is 0 at t = 0 and ``s * alpha`` at t = 1, and spends little
#   early, when the week holds few answers, and most late. The **closing look** spends what is
#   left, ``alpha - spent`` (at least ``(1 - s) * alpha``): the weekly figure users plan on keeps
#   most of its power, and the open week's looks catch large changes early.
# * **Each look's level** is the increment ``A(t_now) - spent``: a rule fires at a look when its
#   (Benjamini-Hochberg) adjusted p-value is at most that increment. The levels of one
#   (rule, week) add up to at most ``alpha``, so by the union bound the chance that noise fires
#   it at any look of the week is at most ``alpha``, *whatever* the correlation between looks
#   (the same closed week on one side, a growing open week on the other; clustered answers).
#   Exact group-sequential boundaries would use that correlation and spend less conservatively,
#   but need the joint law of the looks' statistics, which the prompt-clustered, floored
#   variance does not give; the union bound needs nothing (and neither scipy nor statsmodels
#   offers group-sequential boundaries).
# * **A look that does not test** (an underpowered cell) spends nothing: the next tested look's
#   increment includes it. A look seen before (a redelivered slot) or after the close spends
#   nothing. The state of a (rule, week) is :class:`Spending`.
INTERIM_SHARE = 0.2
CLOSE = "close"  # the look id of a week's closing evaluation


def information(cell: AnyCell) -> float:
    """The open week's information fraction: its answers so far over the answers the schedules
    plan for a week, estimated by the closed week's answers in the same cell (the schedules
    repeat weekly), capped at 1. 0 when the closed week had none (such a cell is underpowered
    and not tested)."""
    before, after = (sum(v[2] for v in period.values()) for period in _periods(cell))
    return 0.0 if before == 0 else min(1.0, after / before)


def interim_spending(t: float, alpha: float, share: float = INTERIM_SHARE) -> float:
    """How much of ``alpha`` the looks of an open week may have spent by information fraction
    ``t``: the O'Brien-Fleming-type Lan-DeMets function of the budget ``share * alpha``."""
    if not 0 < share <= 1:
        raise ValueError("share must be in (0, 1]")
    t = min(1.0, t)
    if t <= 0:
        return 0.0
    budget = share * alpha
    return min(budget, float(2 * special.ndtr(-float(special.ndtri(1 - budget / 2)) /
                                            math.sqrt(t))))


@dataclass(frozen=True)
class Spending:
    """One (rule, week)'s looks so far: the rule's ``alpha``, the alpha its looks have spent,
    the largest information fraction seen, the looks' ids, and whether the week closed."""

    alpha: float
    spent: float = 0.0
    information: float = 0.0
    looks: frozenset[str] = frozenset()
    closed: bool = False


@dataclass(frozen=True)
class Look:
    level: float  # the alpha this look may spend: fire when the adjusted p is at most this
    spending: Spending  # the state after it


def look(spending: Spending, look_id: str, t: float, *, closing: bool = False,
         share: float = INTERIM_SHARE) -> Look:
    """The level of one look at a (rule, week) and the state after it. A look already seen
    (``look_id`` in ``spending.looks``: a redelivered slot) or after the close spends nothing;
    the closing look spends the rest of ``alpha``; any other look spends
    ``interim_spending(t) - spent`` (never below 0: the information fraction seen only grows)."""
    if look_id in spending.looks or spending.closed:
        return Look(0.0, spending)
    if closing:
        level = max(0.0, spending.alpha - spending.spent)
        return Look(level, replace(spending, spent=spending.spent + level, information=1.0,
                                   looks=spending.looks | {look_id}, closed=True))
    t = max(t, spending.information)
    level = max(0.0, interim_spending(t, spending.alpha, share) - spending.spent)
    return Look(level, replace(spending, spent=spending.spent + level, information=t,
                               looks=spending.looks | {look_id}))


def at_level(decision: AlertDecision, level: float) -> AlertDecision:
    """The same decision held to another level (a look's share of the rule's alpha): fired only
    when the adjusted p-value is at most ``level`` and the change goes the rule's way. An
    untested (underpowered) decision is returned as it is."""
    if decision.p_adjusted is None or decision.change is None:
        return decision
    reason = _reason(decision.rule, decision.change, decision.p_adjusted, level)
    return replace(decision, fired=reason == "fired", reason=reason, level=level)
