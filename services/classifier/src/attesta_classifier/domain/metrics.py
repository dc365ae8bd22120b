"""Published aggregate formulas (docs/metrics.md), pure functions.

Inputs are the *current* class of each (run, brand) pair in a bucket (brand, engine, period);
refused and pending pairs are not classified and are counted apart, never in n.
Every figure is a proportion with its n and a 95% Wilson score interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile

CITED = ("STRONG", "DESCRIPTIVE")
# Per-pair weights of the Attesta score: a verified link is worth most, a correct description
# almost as much, a bare echo of the name a little; absence and confabulation earn nothing.
SCORE_WEIGHTS = {"STRONG": 1.0, "DESCRIPTIVE": 0.75, "ECHO": 0.25, "ABSENT": 0.0, "CONFABULATED": 0.0}


@dataclass(frozen=True)
class Proportion:
    successes: float
    n: int
    value: float | None
    low: float | None
    high: float | None


def wilson(successes: float, n: int, z: float = Z95) -> Proportion:
    """Wilson score interval for ``successes`` out of ``n``.

    ``successes`` may be fractional (the score's weighted sum): for a per-pair outcome bounded
    in [0, 1] with mean p, the variance is at most p(1-p), so the Bernoulli interval is a
    conservative choice there.
    """
    if n <= 0:
        return Proportion(successes, 0, None, None, None)
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside [0, {n}]")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Proportion(successes, n, p, low, high)


def cited(counts: Mapping[str, int]) -> int:
    return sum(counts.get(c, 0) for c in CITED)


def classified(counts: Mapping[str, int]) -> int:
    return sum(counts.values())


def citation_rate(counts: Mapping[str, int]) -> Proportion:
    """(STRONG + DESCRIPTIVE) / n, n = classified pairs."""
    return wilson(cited(counts), classified(counts))


def confabulation_rate(counts: Mapping[str, int]) -> Proportion:
    """CONFABULATED / mentioned, mentioned = n - ABSENT (the brand came up at all)."""
    mentioned = classified(counts) - counts.get("ABSENT", 0)
    return wilson(counts.get("CONFABULATED", 0), mentioned)


def echo_rate(counts: Mapping[str, int]) -> Proportion:
    """ECHO / n."""
    return wilson(counts.get("ECHO", 0), classified(counts))


def absent_rate(counts: Mapping[str, int]) -> Proportion:
    """ABSENT / n."""
    return wilson(counts.get("ABSENT", 0), classified(counts))


def share_of_voice(own: Mapping[str, int], competitors: list[Mapping[str, int]]) -> Proportion:
    """cited(brand) / (cited(brand) + sum of cited(competitor)) in the same engine and period;
    n = all those citations."""
    total = cited(own) + sum(cited(c) for c in competitors)
    return wilson(cited(own), total)


def score(counts: Mapping[str, int]) -> Proportion:
    """Attesta score = sum(weight(class)) / n with SCORE_WEIGHTS, in [0, 1]."""
    weighted = sum(SCORE_WEIGHTS.get(c, 0.0) * k for c, k in counts.items())
    return wilson(weighted, classified(counts))


# --------------------------------------------------------------------------- prompt as the unit

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261204


def prompt_bootstrap(per_prompt: list[tuple[float, int]], resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED) -> Proportion:
    """95% percentile-bootstrap interval of a pooled rate, resampling *prompts* (with
    replacement), not pairs: samples of one prompt are correlated (the same question asked
    again tends to get the same kind of answer), so the Wilson interval, which assumes
    independent pairs, is too narrow when a bucket holds few prompts asked many times.

    ``per_prompt``: (successes, n) per prompt. Seeded, so the same data gives the same
    interval. With one prompt there is nothing to resample: the bounds are None."""
    per_prompt = [(s, n) for s, n in per_prompt if n > 0]
    total_s, total_n = sum(s for s, _ in per_prompt), sum(n for _, n in per_prompt)
    if total_n == 0:
        return Proportion(total_s, 0, None, None, None)
    value = total_s / total_n
    k = len(per_prompt)
    if k < 2:
        return Proportion(total_s, total_n, value, None, None)
    # All resamples at once: row i draws k prompts with replacement; its rate is
    # sum(successes) / sum(n) of the drawn prompts.
    draws = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    successes = np.array([s for s, _ in per_prompt], dtype=float)
    sizes = np.array([n for _, n in per_prompt], dtype=float)
    stats = np.sort(successes[draws].sum(axis=1) / sizes[draws].sum(axis=1))
    low = float(stats[int(0.025 * (resamples - 1))])
    high = float(stats[int(math.ceil(0.975 * (resamples - 1)))])
    return Proportion(total_s, total_n, value, low, high)


def intervals_overlap(a: Proportion, b: Proportion) -> bool | None:
    """None when either interval is unknown."""
    if None in (a.low, a.high, b.low, b.high):
        return None
    return not (a.high < b.low or b.high < a.low)  # type: ignore[operator]


# --------------------------------------------------------------------------- position (issue #25)

def mean_position(per_prompt: list[tuple[float, int]]) -> Proportion:
    """Mean place of the brand among the brands the answer names (1 = first), over the answers
    that name it, with the bootstrap over prompts. ``per_prompt``: (sum of places, answers
    naming the brand) per prompt. ``value`` is a place (>= 1), not a proportion."""
    return prompt_bootstrap(per_prompt)


def first_position_share(first: int, answers: int) -> Proportion:
    """Answers naming the brand before any competitor / answers, with Wilson."""
    return wilson(first, answers)


def weighted_visibility(per_prompt: list[tuple[float, int]]) -> Proportion:
    """Mean over answers of the position weight (``position.weight``: 0.9^(k-1) for the k-th
    named, 0 when not named), in [0, 1], with the bootstrap over prompts. ``per_prompt``:
    (sum of weights, answers) per prompt."""
    return prompt_bootstrap(per_prompt)


# --------------------------------------------------------------------------- model builds (issue #25)

Build = tuple[str | None, str | None]  # (model, system_fingerprint) an endpoint reported


def build_changes(days: Iterable[tuple[str, date, Build, int]]) -> list[tuple[str, date, Build, Build]]:
    """(engine, day, build, previous build) for each day an engine's answers came from another
    model build than on its previous day with a reported build. A day's build is the one most
    of its runs reported (ties: the first in (model, fingerprint) order), so one stray answer
    does not mark a change. ``days``: (engine, UTC day, build, runs)."""
    best: dict[tuple[str, date], tuple[int, Build]] = {}
    for engine, day, build, n in sorted(days, key=lambda d: (d[0], d[1], str(d[2]))):
        if (engine, day) not in best or n > best[(engine, day)][0]:
            best[(engine, day)] = (n, build)
    out: list[tuple[str, date, Build, Build]] = []
    last: dict[str, Build] = {}
    for (engine, day), (_, build) in sorted(best.items()):
        if engine in last and last[engine] != build:
            out.append((engine, day, build, last[engine]))
        last[engine] = build
    return out


# --------------------------------------------------------------------------- underpowered cells

# The minimum sample of a cell that is shown as a figure (and that an alert may test): answers
# (the figure's n) and distinct prompts. Why these defaults (docs/metrics.md, "Underpowered
# cells"): at n = 30 the 95 % Wilson interval of a rate near 50 % is still about ±17 points, the
# widest that reads as a figure rather than a guess; 5 prompts is the fewest for which the
# prompt bootstrap has more than a handful of distinct resamples and the alerts' t test has
# 4 degrees of freedom. Settings: ATTESTA_METRICS_MIN_N, ATTESTA_METRICS_MIN_PROMPTS.
DEFAULT_MIN_N = 30
DEFAULT_MIN_PROMPTS = 5


def underpowered(n: int, prompts: int, min_n: int = DEFAULT_MIN_N,
                 min_prompts: int = DEFAULT_MIN_PROMPTS) -> bool:
    """True when a cell has fewer than ``min_n`` answers or fewer than ``min_prompts`` distinct
    prompts with answers: it is too small to be read as a figure (an empty cell is too)."""
    return n < min_n or prompts < min_prompts
