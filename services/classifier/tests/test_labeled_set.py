"""The labelled set: in sync with its builder, big enough, covering every class and edge case,
and the heuristic is never wrong on it (a machine decision is not a guess)."""

from __future__ import annotations

from collections import Counter

import pytest

from attesta_classifier_eval.labeled import (
    DEV_BRANDS,
    TEST_BRANDS,
    brand_facts,
    brand_of,
    build_rows,
    load_labeled_runs,
    main,
    render,
    run_of,
)
from attesta_classifier.domain.heuristic import decide
from attesta_classifier.domain.model import ground_truth_hash
from attesta_kb import load_brands

pytestmark = pytest.mark.unit

ROWS = load_labeled_runs()
BRANDS = {b["id"]: brand_of(b) for b in load_brands()}
# Known, documented limit: "Kestrel Ridge Analytics" contains the alias "Kestrel" as a whole
# word, so the heuristic cannot call it ABSENT and passes it to the judge.
KNOWN_HEURISTIC_MISSES = {"lab-kestrel-35-absent_lookalike_company",
                          "hw4-kestrel-06-hw4_absent_lookalike_alias_word"}


def test_committed_file_matches_the_builder() -> None:
    assert main(["--check"]) == 0
    assert render(build_rows()) == render(ROWS)


def test_size_classes_and_splits() -> None:
    assert len(ROWS) >= 150
    assert len({r["run_id"] for r in ROWS}) == len(ROWS)
    labels = Counter(r["label"] for r in ROWS)
    assert set(labels) == {"STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT"}
    assert min(labels.values()) >= 20
    templated = [r for r in ROWS if not r["split"].startswith("handwritten")]
    for r in templated:
        assert r["split"] == ("dev" if r["brand_id"] in DEV_BRANDS else "test")
    assert set(DEV_BRANDS).isdisjoint(TEST_BRANDS)
    handwritten = Counter(r["label"] for r in ROWS if r["split"] == "handwritten")
    assert len(handwritten) == 5 and min(handwritten.values()) >= 4
    dev_categories = {r["category"] for r in ROWS if r["split"] == "dev"}
    test_categories = {r["category"] for r in ROWS if r["split"] == "test"}
    assert dev_categories == test_categories  # every edge case is in both splits


@pytest.mark.parametrize("row", ROWS, ids=[r["run_id"] for r in ROWS])
def test_heuristic_is_exact_on_the_labelled_set(row: dict) -> None:
    d = decide(run_of(row), BRANDS[row["brand_id"]])
    if d is not None:
        assert d.citation_class.value == row["label"], d.reason
    elif row["run_id"] not in KNOWN_HEURISTIC_MISSES:
        # the machine classes are always decided by the machine
        assert row["label"] not in ("STRONG", "ABSENT")


def test_every_brand_has_ground_truth_and_it_is_stable() -> None:
    for b in load_brands():
        facts = brand_facts(b)
        assert len(facts) >= 50
        assert ground_truth_hash(facts) == ground_truth_hash(brand_facts(b))
        assert len({f.fact_id for f in facts}) == len(facts)
