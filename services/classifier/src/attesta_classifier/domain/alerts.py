"""Alerts that fire only on real changes (issue #25): the pure statistical core.

No I/O, no framework. A caller (later: the service that owns the metrics, when a period closes)
builds one :class:`Cell` per :class:`AlertRule` -- the rule's metric as per-prompt counts in the
period before and the period after -- and calls :func:`evaluate` on all the rules it evaluates
together. Each :class:`AlertDecision` carries both periods' values, n, distinct prompts and 95%
intervals, the raw and the adjusted p-value, and whether the rule fired or why not.

Metrics covered: the two proportions of ``domain.metrics`` whose per-pair outcome is 0/1,
``citation_rate`` (cited / classified pairs) and ``confabulation_rate`` (confabulated /
mentioned pairs). The caller puts the metric's numerator and denominator per prompt in the cell.
Not covered yet (issue #25 lists them): share of voice, source share, position and the score --
their per-answer outcome is not a single 0/1 trial of the brand (shares pool the competitors'
citations, the score is a weighted sum, position is not built), so they need their own test.

The test, and why
-----------------
Answers to one prompt are correlated (the same question asked again tends to get the same kind
of answer; see "The prompt as the unit" in docs/metrics.md), so a pooled two-proportion z-test
that counts every answer as an independent trial is anti-conservative: 10 prompts asked 10 times
are not 100 independent observations. The unit here is the **prompt**:

* The statistic is the change of the pooled rate, ``D = S2/N2 - S1/N1`` (the figure the charts
  show), over its **cluster-robust (sandwich) standard error with the prompt as the cluster**.
  Each prompt's contribution (influence) to ``D`` is
  ``u_i = (s2_i - p2*n2_i)/N2 - (s1_i - p1*n1_i)/N1`` (a prompt asked in only one period has a
  zero term for the other), and ``Var(D) = k/(k-1) * sum(u_i**2)`` over the k distinct prompts
  (the CR1 small-sample factor). This is the usual linearisation of a ratio estimator; it equals
  the cluster-robust variance of the period coefficient in a linear probability model
  clustered by prompt. It allows any correlation between the answers of one prompt, within a
  period and across the two periods (the same prompts asked again: the pairing is used).
* The variance is never taken below the answer-level one (pooled ``p(1-p)(1/N1 + 1/N2)``): a
  design effect of at least 1. Sandwich variances are biased low with few clusters and are 0
  when every prompt moved by exactly the same amount, and an alert should never claim more
  certainty than if the answers were independent. The cost is that a change the pairing of the
  prompts could have shown more sharply is judged as if unpaired; alerts prefer silence.
* The reference distribution is Student's t with ``k - 1`` degrees of freedom (k = distinct
  prompts), not the normal (``scipy.stats.t``): the number of prompts, not of answers, limits
  what is known.
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
carry; read the prompt one when prompts were asked several times.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from attesta_classifier.domain import metrics
from attesta_classifier.domain.metrics import (
    DEFAULT_MIN_N, DEFAULT_MIN_PROMPTS, Proportion, prompt_bootstrap, wilson)

Metric = Literal["citation_rate", "confabulation_rate"]
Direction = Literal["up", "down", "either"]
Correction = Literal["bh", "holm"]
Reason = Literal["fired", "underpowered", "direction", "not_significant"]

METRICS: tuple[Metric, ...] = ("citation_rate", "confabulation_rate")
DIRECTIONS: tuple[Direction, ...] = ("up", "down", "either")
CORRECTIONS: tuple[Correction, ...] = ("bh", "holm")

# Defaults of a rule's minimum sample (answers in each period and distinct prompts with answers
# in each period) are the metrics' own (``metrics.DEFAULT_MIN_N``/``DEFAULT_MIN_PROMPTS``, one
# definition): below either, the cell is underpowered and the rule never fires.
DEFAULT_ALPHA = 0.05

Counts = Mapping[str, tuple[int, int]]  # prompt_id -> (successes, trials)


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


def _used(period: Counts) -> dict[str, tuple[int, int]]:
    return {p: (s, n) for p, (s, n) in period.items() if n > 0}


def underpowered(cell: Cell, min_n: int, min_prompts: int) -> bool:
    """True when either period has fewer than ``min_n`` answers or fewer than ``min_prompts``
    distinct prompts with answers: such a cell is not tested and never fires."""
    return any(metrics.underpowered(sum(n for _, n in used.values()), len(used), min_n,
                                    min_prompts)
               for used in (_used(cell.before), _used(cell.after)))


def prompt_unit_test(cell: Cell) -> Significance:
    """Two-sided test of a change of the pooled rate with the prompt as the unit: the
    cluster-robust z statistic against t(k - 1), its variance floored at the answer-level one
    (module docstring). Needs answers in both periods and at least two distinct prompts."""
    before, after = _used(cell.before), _used(cell.after)
    prompts = sorted(before.keys() | after.keys())
    k = len(prompts)
    s1 = np.array([before.get(p, (0, 0))[0] for p in prompts], dtype=float)
    n1 = np.array([before.get(p, (0, 0))[1] for p in prompts], dtype=float)
    s2 = np.array([after.get(p, (0, 0))[0] for p in prompts], dtype=float)
    n2 = np.array([after.get(p, (0, 0))[1] for p in prompts], dtype=float)
    big_n1, big_n2 = float(n1.sum()), float(n2.sum())
    if k < 2 or big_n1 == 0 or big_n2 == 0:
        raise ValueError("the test needs answers in both periods and at least two prompts")
    p1, p2 = float(s1.sum()) / big_n1, float(s2.sum()) / big_n2
    influence = (s2 - p2 * n2) / big_n2 - (s1 - p1 * n1) / big_n1
    var_cluster = k / (k - 1) * float(np.dot(influence, influence))
    pooled = (float(s1.sum()) + float(s2.sum())) / (big_n1 + big_n2)
    var_answers = pooled * (1 - pooled) * (1 / big_n1 + 1 / big_n2)
    se = math.sqrt(max(var_cluster, var_answers))
    change = p2 - p1
    if se == 0.0:  # every answer the same in both periods: no change at all
        return Significance(change, 0.0, 0.0, k - 1, 1.0)
    statistic = change / se
    p_value = float(min(1.0, 2 * float(stats.t.sf(abs(statistic), k - 1))))
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


def summarize(period: Counts) -> PeriodSummary:
    used = _used(period)
    s = sum(x for x, _ in used.values())
    n = sum(x for _, x in used.values())
    w = wilson(s, n)
    return PeriodSummary(w.value, n, len(used), w, prompt_bootstrap(list(used.values())))


def evaluate(rules_with_cells: Iterable[tuple[AlertRule, Cell]],
             correction: Correction = "bh") -> list[AlertDecision]:
    """Decide every rule evaluated together (one decision each, same order).

    Underpowered cells are not tested (``p_value`` None, reason ``underpowered``). The others
    are tested with :func:`prompt_unit_test`; their p-values form one family, adjusted with
    ``correction``. A rule fires when its adjusted p-value is at most its ``alpha`` and the
    change goes its ``direction`` (else reason ``direction``, or ``not_significant``)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} not one of {CORRECTIONS}")
    items = list(rules_with_cells)
    results: list[Significance | None] = [
        None if underpowered(cell, rule.min_n, rule.min_prompts) else prompt_unit_test(cell)
        for rule, cell in items]
    tested = [(i, r.p_value) for i, r in enumerate(results) if r is not None]
    adjusted = dict(zip([i for i, _ in tested], adjust([p for _, p in tested], correction),
                        strict=True))
    decisions = []
    for i, (rule, cell) in enumerate(items):
        before, after = summarize(cell.before), summarize(cell.after)
        result = results[i]
        change = (after.value - before.value
                  if after.value is not None and before.value is not None else None)
        if result is None:
            decisions.append(AlertDecision(rule, before, after, False, "underpowered", change,
                                           None, None, correction))
            continue
        p_adj = adjusted[i]
        reason: Reason
        if p_adj > rule.alpha:
            reason = "not_significant"
        elif (rule.direction == "up" and result.change <= 0) or \
                (rule.direction == "down" and result.change >= 0):
            reason = "direction"
        else:
            reason = "fired"
        decisions.append(AlertDecision(rule, before, after, reason == "fired", reason,
                                       result.change, result.p_value, p_adj, correction))
    return decisions
