"""The prompt-level interval (seeded bootstrap over prompts) and the period-change rule."""

from __future__ import annotations

import pytest

from attesta_classifier.domain import metrics as m

pytestmark = pytest.mark.unit


def test_bootstrap_is_seeded_and_pools_the_rate():
    data = [(3, 3), (0, 3), (2, 3), (3, 3), (0, 3), (1, 3)]
    a, b = m.prompt_bootstrap(data), m.prompt_bootstrap(data)
    assert a == b and a.value == pytest.approx(9 / 18) and a.n == 18
    assert 0 <= a.low < a.value < a.high <= 1


def test_correlated_samples_widen_the_interval_against_wilson():
    # Ten prompts asked ten times each; every prompt is always or never cited (perfectly
    # correlated samples): 100 pairs but only 10 independent units.
    data = [(10, 10)] * 5 + [(0, 10)] * 5
    boot, wil = m.prompt_bootstrap(data), m.wilson(50, 100)
    assert (boot.high - boot.low) > 1.5 * (wil.high - wil.low)
    # Independent-looking data (every prompt half cited) gives a narrow prompt interval.
    even = m.prompt_bootstrap([(5, 10)] * 10)
    assert even.low == even.high == 0.5


def test_one_prompt_has_no_prompt_interval_and_empty_is_null():
    one = m.prompt_bootstrap([(2, 5)])
    assert one.value == 0.4 and one.low is None and one.high is None
    assert m.prompt_bootstrap([]).value is None


def test_change_flag_needs_non_overlapping_intervals():
    assert m.intervals_overlap(m.wilson(5, 10), m.wilson(6, 10)) is True
    assert m.intervals_overlap(m.wilson(1, 50), m.wilson(45, 50)) is False
    assert m.intervals_overlap(m.wilson(0, 0), m.wilson(1, 2)) is None
