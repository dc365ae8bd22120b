"""Alerts that fire only on real changes (issue #25): a seeded simulation with known true changes,
and the evaluation time for 1,000 rules over 90 days of daily metrics.

Model (all drawn from one numpy Generator with a fixed seed):

* ``--rules`` rules, each on its own cell; a rule has k prompts (uniform in
  ``--prompts-min``..``--prompts-max``), each prompt a base citation rate from
  Beta(``--beta-a``, ``--beta-b``) (prompt-level heterogeneity).
* ``--weeks`` weekly periods. In week w a prompt's rate is its base rate moved by a
  prompt-by-week effect on the log-odds scale, N(0, ``--jitter``): the engine's answer to one
  question drifts from week to week, so the answers of one prompt in one week agree more than
  independent draws would (the correlation the prompt-as-unit test is for). ``--jitter 0`` is
  the textbook case, independent answers around fixed per-prompt rates.
* Each prompt gets ``--answers`` answers per week (Binomial on that week's rate).
* A known subset (``--changed`` of the rules) has a true step change of ``--effect`` (absolute,
  up or down at random, clipped to [0.001, 0.999]) at a random week; it stays. One scenario per
  (jitter, effect) pair, each from the same seed.
* At every week's close all rules are evaluated together (this week vs the previous one). An
  evaluation is a *true change* when the step falls in that week, *no change* otherwise.
* ``--metric position_weighted_visibility`` (the position-weighted visibility, a mean in
  [0, 1]): the per-prompt rate above is instead the chance that an answer names the brand
  *first* (weight 1); otherwise it names it 2nd (weight 0.9) with probability 0.6, 3rd (0.81)
  with 0.25, and not at all (0) with 0.15 (Multinomial per prompt and week). A true change moves
  the first-place chance by ``--effect``, so the weighted visibility moves by 0.2575 x effect
  (1 - 0.6 x 0.9 - 0.25 x 0.81). Cells are ``MeanCell`` (per-prompt sum, sum of squares,
  answers); "answer raw" is then Welch's z over answers (the mean's naive test).

Printed side by side, per scenario: the false-alert rate (alerts among no-change evaluations) and
the detection rate (alerts among true-change evaluations) of
  prompt+BH    attesta_classifier.domain.alerts.evaluate(..., "bh")   (what fires)
  prompt+Holm  the same with Holm
  prompt raw   the prompt-as-unit test, no correction (to separate the two effects)
  answer raw   the naive pooled two-proportion z-test over answers, no correction
with min_n / min_prompts applied to all four (underpowered cells never fire).

``--looks L [L ...]`` (the repeated looks, docs/alerts.md "Looking many times") runs, instead,
one scenario per (jitter, L) on the citation rate: every answer of a week lands in one of L
schedule slots at random (L = 24: a slot every 7 hours; 168: hourly), and after each slot all
rules are evaluated on the open week so far against the last closed week (cells from the answers
of the slots done), then once more at the week's close; the changed rules' steps are the
``--effect`` sizes, one drawn per changed rule, so both sizes are measured in one run. Per
rule-week, side by side: fired once a week (the close only, at alpha: the table above), fired at
any look testing every look at alpha (uncorrected for the looks), and fired at any look held to
the look's share of alpha (``alerts.look``: the correction), each with Benjamini-Hochberg over
the rules ("BH") and for a rule alone ("raw", a family of one); detection per step size and the
share of detections made before the close.

Then the evaluation time: ``--timing-rules`` rules (every other one on the position-weighted
visibility, the others on the citation rate), each with 90 days of daily per-prompt counts,
evaluated at one week's close (the last 7 days vs the 7 before, cells built from the
daily counts) and at all 12 weekly closes of the 90 days, wall and CPU time.

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/alert_simulation.py
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attesta_classifier.domain import alerts


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


@dataclass
class Tally:
    alerts_null: int = 0
    alerts_true: int = 0

    def add(self, fired: bool, true_change: bool) -> None:
        if fired and true_change:
            self.alerts_true += 1
        elif fired:
            self.alerts_null += 1


def expit(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# The position-weighted visibility's model: after first place, named 2nd / 3rd / not named.
LATER = np.array([0.6, 0.25, 0.15])
WEIGHTS = np.array([1.0, 0.9, 0.81, 0.0])


def weighted_cell(counts: np.ndarray) -> dict[str, tuple[float, float, int]]:
    """prompt -> (sum, sum of squares, answers) of the weights, from per-prompt place counts
    (k x 4: first, second, third, not named)."""
    return {f"p{i}": (float(c @ WEIGHTS), float(c @ WEIGHTS ** 2), int(c.sum()))
            for i, c in enumerate(counts)}


def naive_mean_p(cell: alerts.MeanCell) -> float:
    """Welch's z over answers (every answer independent): the mean's answer-level baseline."""
    from scipy.stats import norm  # noqa: PLC0415 - only this baseline needs it

    def moments(sums: dict[str, tuple[float, float, int]]) -> tuple[float, float, int]:
        s = sum(v[0] for v in sums.values())
        q = sum(v[1] for v in sums.values())
        n = sum(v[2] for v in sums.values())
        mean = s / n
        return mean, max(q / n - mean * mean, 0.0), n

    m1, v1, n1 = moments(dict(cell.before))
    m2, v2, n2 = moments(dict(cell.after))
    se = (v1 / n1 + v2 / n2) ** 0.5
    return 1.0 if se == 0 else float(2 * norm.sf(abs(m2 - m1) / se))


def simulate(args: argparse.Namespace, jitter: float, effect: float,
             metric: str = "citation_rate") -> None:
    weighted = metric == "position_weighted_visibility"
    rng = np.random.default_rng(args.seed)
    weeks, n_rules = args.weeks, args.rules
    ks = rng.integers(args.prompts_min, args.prompts_max + 1, size=n_rules)
    changed = rng.random(n_rules) < args.changed
    change_week = rng.integers(1, weeks, size=n_rules)  # the step lands between week-1 and week
    sign = np.where(rng.random(n_rules) < 0.5, -1.0, 1.0)
    succ: list[np.ndarray] = []  # per rule: weeks x k successes
    realized: list[float] = []
    for r in range(n_rules):
        k = int(ks[r])
        base = rng.beta(args.beta_a, args.beta_b, size=k)
        logit = np.log(base / (1 - base))
        rate = expit(logit[None, :] + jitter * rng.standard_normal((weeks, k)))
        if changed[r]:
            w0 = int(change_week[r])
            shifted = np.clip(rate[w0:] + sign[r] * effect, 0.001, 0.999)
            realized.append(float(np.mean(np.abs(shifted[0] - rate[w0]))))
            rate[w0:] = shifted
        if weighted:  # weeks x k x (first, second, third, not named)
            probs = np.concatenate([rate[..., None], (1 - rate)[..., None] * LATER], axis=-1)
            succ.append(rng.multinomial(args.answers, probs))
        else:
            succ.append(rng.binomial(args.answers, rate))
    rule = alerts.AlertRule("brand", metric, min_n=args.min_n,  # type: ignore[arg-type]
                            min_prompts=args.min_prompts, alpha=args.alpha)
    tallies = {name: Tally() for name in ("prompt+BH", "prompt+Holm", "prompt raw", "answer raw")}
    null_evals = true_evals = underpowered_null = underpowered_true = 0
    started = time.process_time()
    for w in range(1, weeks):
        items = []
        truth = []
        for r in range(n_rules):
            cell: alerts.AnyCell
            if weighted:
                cell = alerts.MeanCell(weighted_cell(succ[r][w - 1]), weighted_cell(succ[r][w]),
                                       unit_interval=True)
            else:
                prompts = [f"p{i}" for i in range(int(ks[r]))]
                cell = alerts.Cell(
                    {p: (int(s), args.answers) for p, s in zip(prompts, succ[r][w - 1], strict=True)},
                    {p: (int(s), args.answers) for p, s in zip(prompts, succ[r][w], strict=True)})
            items.append((rule, cell))
            truth.append(bool(changed[r] and change_week[r] == w))
        bh = alerts.evaluate(items, "bh")
        holm = alerts.evaluate(items, "holm")
        for (_, cell), t, d_bh, d_holm in zip(items, truth, bh, holm, strict=True):
            weak = d_bh.reason == "underpowered"
            if t:
                true_evals += 1
                underpowered_true += weak
            else:
                null_evals += 1
                underpowered_null += weak
            tallies["prompt+BH"].add(d_bh.fired, t)
            tallies["prompt+Holm"].add(d_holm.fired, t)
            tallies["prompt raw"].add(not weak and d_bh.p_value is not None
                                      and d_bh.p_value <= args.alpha, t)
            naive = naive_mean_p(cell) if isinstance(cell, alerts.MeanCell) \
                else alerts.answer_level_test(cell).p_value
            tallies["answer raw"].add(not weak and naive <= args.alpha, t)
    cpu = time.process_time() - started
    print(f"\n-- {metric}, jitter {jitter} (prompt-by-week SD on the log-odds scale), seed {args.seed}: "
          f"{n_rules} rules x {weeks - 1} weekly closes; {int(changed.sum())} rules with a true "
          f"change of {effect:+.2f}/-{effect:.2f} (mean realized |change| "
          f"{np.mean(realized) if realized else 0:.3f})")
    print(f"   evaluations: {null_evals} without a change ({underpowered_null} underpowered), "
          f"{true_evals} with a true change ({underpowered_true} underpowered); "
          f"min_n {args.min_n}, min_prompts {args.min_prompts}, alpha {args.alpha}; CPU {cpu:.1f} s")
    print(f"   {'test':<12} {'false-alert rate':>18} {'detection rate':>16} {'(powered only)':>15} "
          f"{'false share of alerts':>22}")
    for name, t in tallies.items():
        fa = t.alerts_null / null_evals if null_evals else float("nan")
        det = t.alerts_true / true_evals if true_evals else float("nan")
        powered = true_evals - underpowered_true
        det_p = t.alerts_true / powered if powered else float("nan")
        total = t.alerts_null + t.alerts_true
        fdp = t.alerts_null / total if total else 0.0
        print(f"   {name:<12} {fa:>10.4f} ({t.alerts_null:>4}) {det:>9.3f} ({t.alerts_true:>3}) "
              f"{det_p:>15.3f} {fdp:>22.3f}")


def _week_counts(slots: np.ndarray, hits: np.ndarray, looks: int) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative per-prompt (answers, successes) after each slot: ``slots`` (k x answers) is
    the slot each answer lands in, ``hits`` whether it is a success; both k x looks."""
    landed = slots[..., None] == np.arange(looks)  # k x answers x looks
    return (np.cumsum(landed.sum(axis=1), axis=1),
            np.cumsum((landed & hits[..., None]).sum(axis=1), axis=1))


LOOK_METHODS = ("weekly BH", "looks BH", "looks BH+spend", "weekly raw", "looks raw",
                "looks raw+spend")


def simulate_looks(args: argparse.Namespace, jitter: float, looks: int) -> None:
    """The repeated looks at a growing week (module docstring, ``--looks``)."""
    rng = np.random.default_rng(args.seed)
    weeks, n_rules, answers, alpha = args.weeks, args.rules, args.answers, args.alpha
    ks = rng.integers(args.prompts_min, args.prompts_max + 1, size=n_rules)
    changed = rng.random(n_rules) < args.changed
    change_week = rng.integers(1, weeks, size=n_rules)
    sign = np.where(rng.random(n_rules) < 0.5, -1.0, 1.0)
    effect = rng.choice(np.asarray(args.effect, dtype=float), size=n_rules)
    succ: list[np.ndarray] = []  # per rule: weeks x k successes
    slots: list[np.ndarray] = []  # per rule: weeks x k x answers, the slot of each answer
    for r in range(n_rules):
        k = int(ks[r])
        base = rng.beta(args.beta_a, args.beta_b, size=k)
        rate = expit(np.log(base / (1 - base))[None, :] + jitter * rng.standard_normal((weeks, k)))
        if changed[r]:
            w0 = int(change_week[r])
            rate[w0:] = np.clip(rate[w0:] + sign[r] * effect[r], 0.001, 0.999)
        succ.append(rng.binomial(answers, rate))
        slots.append(rng.integers(0, looks, size=(weeks, k, answers)).astype(np.int16))
    fired_null = {m: 0 for m in LOOK_METHODS}
    fired_true = {m: {e: 0 for e in args.effect} for m in LOOK_METHODS}
    early_true = {m: 0 for m in LOOK_METHODS}
    true_by_effect = {e: 0 for e in args.effect}
    null_weeks = tests = 0
    started = time.process_time()
    for w in range(1, weeks):
        prompts = [[f"p{i}" for i in range(int(k))] for k in ks]
        before = [{p: (int(s), answers) for p, s in zip(prompts[r], succ[r][w - 1], strict=True)}
                  for r in range(n_rules)]
        counts = [_week_counts(slots[r][w], np.arange(answers)[None, :] < succ[r][w][:, None],
                               looks) for r in range(n_rules)]
        truth = changed & (change_week == w)
        state = [alerts.Spending(alpha) for _ in range(n_rules)]
        last_n = [-1] * n_rules
        p_of: list[float | None] = [None] * n_rules
        info = [0.0] * n_rules
        fired = {m: np.zeros(n_rules, dtype=bool) for m in LOOK_METHODS}
        first_at = {m: np.full(n_rules, -1) for m in LOOK_METHODS}
        for j in range(looks + 1):
            closing = j == looks
            col = min(j, looks - 1)  # the close sees what the last slot saw: the whole week
            for r in range(n_rules):
                n_cum, s_cum = counts[r]
                total = int(n_cum[:, col].sum())
                if total == last_n[r]:
                    continue  # no new answer since the last look: same cell, same p
                last_n[r] = total
                cell = alerts.Cell(before[r], {p: (int(s_cum[i, col]), int(n_cum[i, col]))
                                               for i, p in enumerate(prompts[r])})
                if alerts.underpowered(cell, args.min_n, args.min_prompts):
                    p_of[r] = None
                    continue
                tests += 1
                p_of[r] = alerts.prompt_unit_test(cell).p_value
                info[r] = alerts.information(cell)
            powered = [r for r in range(n_rules) if p_of[r] is not None]
            adjusted = dict(zip(powered, alerts.adjust([p_of[r] for r in powered], "bh"),  # type: ignore[misc]
                                strict=True))
            look_id = alerts.CLOSE if closing else f"slot:{j}"
            for r in powered:
                step = alerts.look(state[r], look_id, info[r], closing=closing)
                state[r] = step.spending
                p, p_adj, level = p_of[r], adjusted[r], step.level
                assert p is not None
                hits = {"looks BH": p_adj <= alpha, "looks BH+spend": 0 < level and p_adj <= level,
                        "looks raw": p <= alpha, "looks raw+spend": 0 < level and p <= level,
                        "weekly BH": closing and p_adj <= alpha,
                        "weekly raw": closing and p <= alpha}
                for m, hit in hits.items():
                    if hit and not fired[m][r]:
                        fired[m][r], first_at[m][r] = True, j
        for r in range(n_rules):
            if truth[r]:
                true_by_effect[float(effect[r])] += 1
            else:
                null_weeks += 1
            for m in LOOK_METHODS:
                if not fired[m][r]:
                    continue
                if truth[r]:
                    fired_true[m][float(effect[r])] += 1
                    early_true[m] += bool(first_at[m][r] < looks)
                else:
                    fired_null[m] += 1
    cpu = time.process_time() - started
    print(f"\n-- repeated looks: citation_rate, jitter {jitter}, seed {args.seed}: {n_rules} rules x "
          f"{weeks - 1} weeks, {looks} slot looks + the close per week; {int(changed.sum())} rules "
          f"with a step of one of {', '.join(f'±{e:.2f}' for e in args.effect)}; min_n {args.min_n}, "
          f"min_prompts {args.min_prompts}, alpha {alpha}, interim share "
          f"{alerts.INTERIM_SHARE}; {tests} tests, CPU {cpu:.1f} s")
    print(f"   rule-weeks: {null_weeks} without a change, "
          + ", ".join(f"{n} with a ±{e:.2f} step" for e, n in true_by_effect.items()))
    header = "".join(f"{f'detect ±{e:.2f}':>16}" for e in args.effect)
    print(f"   {'fired when':<16} {'false alerts per rule-week':>28}{header} {'before the close':>17}")
    for m in LOOK_METHODS:
        dets = "".join(f"{fired_true[m][e] / n if n else float('nan'):>9.3f} ({fired_true[m][e]:>3})"
                       for e, n in true_by_effect.items())
        total_true = sum(fired_true[m].values())
        print(f"   {m:<16} {fired_null[m] / null_weeks:>20.4f} ({fired_null[m]:>4}){dets} "
              f"{early_true[m]:>10} of {total_true:<3}")


def timing(args: argparse.Namespace) -> None:
    """1,000 rules, 90 days of daily per-prompt counts each; cells built from the days."""
    rng = np.random.default_rng(args.seed + 1)
    days = 90
    daily_s: list[np.ndarray] = []
    daily_n: list[np.ndarray] = []
    for _ in range(args.timing_rules):
        k = int(rng.integers(args.prompts_min, args.prompts_max + 1))
        n = rng.integers(0, 3, size=(days, k))  # 0-2 answers per prompt per day
        daily_n.append(n)
        daily_s.append(rng.binomial(n, rng.beta(args.beta_a, args.beta_b, size=k)[None, :]))
    rule = alerts.AlertRule("brand", "citation_rate", min_n=args.min_n, min_prompts=args.min_prompts)
    # Every other rule watches the position-weighted visibility: its daily per-prompt answers
    # are split into first / second / third / not named (the simulation's model).
    wrule = alerts.AlertRule("brand", "position_weighted_visibility", min_n=args.min_n,
                             min_prompts=args.min_prompts)
    daily_places = [rng.multinomial(n, np.concatenate([[q], (1 - q) * LATER]))
                    if i % 2 else None
                    for i, (n, q) in enumerate((n, float(rng.beta(args.beta_a, args.beta_b)))
                                               for n in daily_n)]

    def close(end: int) -> list[alerts.AlertDecision]:
        items: list[tuple[alerts.AlertRule, alerts.AnyCell]] = []
        for s, n, places in zip(daily_s, daily_n, daily_places, strict=True):
            if places is not None:
                items.append((wrule, alerts.MeanCell(
                    weighted_cell(places[end - 14:end - 7].sum(axis=0)),
                    weighted_cell(places[end - 7:end].sum(axis=0)), unit_interval=True)))
                continue
            prompts = [f"p{i}" for i in range(s.shape[1])]
            cur_s, cur_n = s[end - 7:end].sum(axis=0), n[end - 7:end].sum(axis=0)
            prev_s, prev_n = s[end - 14:end - 7].sum(axis=0), n[end - 14:end - 7].sum(axis=0)
            items.append((rule, alerts.Cell(
                {p: (int(a), int(b)) for p, a, b in zip(prompts, prev_s, prev_n, strict=True)},
                {p: (int(a), int(b)) for p, a, b in zip(prompts, cur_s, cur_n, strict=True)})))
        return alerts.evaluate(items, "bh")

    close(days)  # warm-up (imports, scipy's first calls)
    rounds = []
    for _ in range(5):
        w, c = time.perf_counter(), time.process_time()
        decided = close(days)
        rounds.append((time.perf_counter() - w, time.process_time() - c))
    wall = sorted(x for x, _ in rounds)[2]
    cpu = sorted(x for _, x in rounds)[2]
    w, c = time.perf_counter(), time.process_time()
    ends = list(range(days, 13, -7))  # every weekly close with two full weeks behind it
    for end in ends:
        close(end)
    all_wall, all_cpu = time.perf_counter() - w, time.process_time() - c
    # The same round without the intervals (test + correction only), to show where time goes.
    w = time.perf_counter()
    for s, n in zip(daily_s, daily_n, strict=True):
        cell = alerts.Cell({str(i): (int(a), int(b)) for i, (a, b) in
                            enumerate(zip(s[days - 14:days - 7].sum(axis=0), n[days - 14:days - 7].sum(axis=0), strict=True))},
                           {str(i): (int(a), int(b)) for i, (a, b) in
                            enumerate(zip(s[days - 7:].sum(axis=0), n[days - 7:].sum(axis=0), strict=True))})
        if not alerts.underpowered(cell, args.min_n, args.min_prompts):
            alerts.prompt_unit_test(cell)
    tests_only = time.perf_counter() - w
    print(f"\n-- evaluation time: {args.timing_rules} rules (half on the citation rate, half on "
          f"the position-weighted visibility), 90 days of daily per-prompt counts "
          f"({args.prompts_min}-{args.prompts_max} prompts, 0-2 answers per prompt per day)")
    print(f"   one weekly close (cells from the daily counts + test + BH + both periods' intervals): "
          f"median of 5 {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU "
          f"({sum(d.reason == 'underpowered' for d in decided)} underpowered, "
          f"{sum(d.fired for d in decided)} fired)")
    print(f"   all {len(ends)} weekly closes of the 90 days: {all_wall:.2f} s wall, {all_cpu:.2f} s CPU")
    print(f"   of one close, cells + underpowered check + prompt test alone (no intervals, no "
          f"correction): {tests_only * 1000:.0f} ms wall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules", type=int, default=1000)
    ap.add_argument("--weeks", type=int, default=13, help="weekly periods (closes = weeks - 1)")
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--changed", type=float, default=0.1, help="share of rules with a true change")
    ap.add_argument("--effect", type=float, nargs="+", default=[0.10, 0.20],
                    help="absolute size of the true change (one scenario each)")
    ap.add_argument("--prompts-min", type=int, default=3)
    ap.add_argument("--prompts-max", type=int, default=30)
    ap.add_argument("--answers", type=int, default=7, help="answers per prompt per week")
    ap.add_argument("--beta-a", type=float, default=2.0)
    ap.add_argument("--beta-b", type=float, default=5.0)
    ap.add_argument("--jitter", type=float, nargs="+", default=[0.0, 0.6])
    ap.add_argument("--min-n", type=int, default=alerts.DEFAULT_MIN_N)
    ap.add_argument("--min-prompts", type=int, default=alerts.DEFAULT_MIN_PROMPTS)
    ap.add_argument("--alpha", type=float, default=alerts.DEFAULT_ALPHA)
    ap.add_argument("--timing-rules", type=int, default=1000)
    ap.add_argument("--metric", nargs="+", default=["citation_rate", "position_weighted_visibility"],
                    choices=["citation_rate", "position_weighted_visibility"],
                    help="the simulated rules' metric (one set of scenarios each)")
    ap.add_argument("--looks", type=int, nargs="+", default=[],
                    help="slot looks per week (e.g. 24 168): run the repeated-looks scenarios "
                         "(citation rate; one per jitter and L) instead of the weekly ones")
    args = ap.parse_args()
    print(f"loadavg at start: {loadavg()}")
    if args.looks:
        for jitter in args.jitter:
            for looks in args.looks:
                simulate_looks(args, jitter, looks)
        print(f"\nloadavg at end: {loadavg()}")
        return
    for metric in args.metric:
        for jitter in args.jitter:
            for effect in args.effect:
                simulate(args, jitter, effect, metric)
    if args.timing_rules:
        timing(args)
    print(f"\nloadavg at end: {loadavg()}")


if __name__ == "__main__":
    main()
