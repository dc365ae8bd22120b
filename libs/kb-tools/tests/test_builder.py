"""The KB's generator: the committed data files are exactly what it builds, and the test
fixture it writes is the broken cards it promises."""

from __future__ import annotations

import pytest

from attesta_kb import load_cards, load_queries
from attesta_kb_tools import builder
from attesta_kb_tools.fixtures import load_degraded_cards

pytestmark = pytest.mark.unit


def test_degraded_cards_fixture():
    cards = load_cards()
    deg = load_degraded_cards()
    by = {c["card_id"]: c for c in deg}
    assert "source" not in by["degraded-missing-source"]
    assert by["degraded-empty-source"]["source"] == ""
    assert by["degraded-null-source"]["source"] is None
    assert by["degraded-javascript-source"]["source"] == "javascript:alert(1)"
    assert by["degraded-ftp-source"]["source"].startswith("ftp://")
    assert by["degraded-license-int"]["metadata"]["license"] == 42
    assert "license" not in by["degraded-license-missing"]["metadata"]
    assert not isinstance(by["degraded-metadata-not-dict"]["metadata"], dict)
    assert not set(by) & {c["card_id"] for c in cards}


def test_splits_are_recomputed_from_the_ids_alone():
    qs = load_queries()
    again = [{"query_id": q["query_id"], "kind": q["kind"]} for q in qs]
    builder.assign_splits(again)
    assert [q["split"] for q in again] == [q["split"] for q in qs]


def test_committed_data_matches_a_fresh_build():
    fresh = builder.render()
    assert {path.parent for path in fresh} == {builder.KB_DATA_DIR, builder.FIXTURE_DIR}
    for path, content in fresh.items():
        assert path.read_text(encoding="utf-8") == content, f"{path.name} is stale"
    assert builder.render() == fresh
