"""The one URL-safety rule, Python side: the answer service's `source_url_from` against the
cases the web app's `safeHttpUrl` is tested with (tests/data/url_safety_cases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attesta_answer.domain.citations import source_url_from

CASES = json.loads((Path(__file__).parent / "data" / "url_safety_cases.json").read_text())["cases"]


@pytest.mark.unit
@pytest.mark.parametrize("case", CASES, ids=[repr(c["input"])[:50] for c in CASES])
def test_source_url_from_follows_the_shared_cases(case):
    assert source_url_from(case["input"]) == case["href"]


@pytest.mark.unit
def test_the_shared_cases_cover_both_outcomes():
    assert len(CASES) >= 50
    assert any(c["href"] is None for c in CASES) and any(c["href"] for c in CASES)
