"""The held-out set (issue #18) is what it claims to be: big enough, a third in Portuguese, over
brands that are neither in the knowledge base nor in the labelled set, every label an ADR-031
class, and the file keeps its "never tune on this" marker. It is measured by
``benchmarks/classifier_accuracy.py --heldout``, never tuned on: no test asserts its accuracy."""

from __future__ import annotations

from collections import Counter

import pytest

from attesta_classifier.data import heldout
from attesta_classifier.data.labeled import load_labeled_runs
from attesta_classifier.domain.heuristic import fold
from attesta_kb import load_brands

pytestmark = pytest.mark.unit

DOC = heldout.load()
DOC2 = heldout.load(heldout.FILE_NAME_2)


def test_marked_never_tune_and_big_enough() -> None:
    assert "Do not look at its errors" in DOC["NEVER_TUNE_ON_THIS"]
    cases = DOC["cases"]
    assert len(cases) >= 150
    assert sum(c["lang"] == "pt" for c in cases) * 3 >= len(cases)
    assert len({c["id"] for c in cases}) == len(cases)
    assert set(Counter(c["label"] for c in cases)) == {"STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT"}


def test_brands_are_new_two_brazilian() -> None:
    brands = heldout.brands(DOC)
    assert len(brands) >= 6
    kb_names = {fold(n) for b in load_brands() for n in [b["name"], *b["aliases"]]}
    labelled_text = fold(" ".join(r["answer"] + " " + r["prompt"] for r in load_labeled_runs()))
    for b in brands.values():
        for n in b.names:
            assert fold(n) not in kb_names
            assert fold(n) not in labelled_text
    assert sum(any(d.endswith(".com.br") for d in b.domains) for b in brands.values()) >= 2
    facts = heldout.facts(DOC)
    assert all(len(f) >= 10 for f in facts.values())
    assert {c["brand"] for c in DOC["cases"]} == set(brands)


def test_second_held_out_file_is_new_too() -> None:
    assert "Do not look at its errors" in DOC2["NEVER_TUNE_ON_THIS"]
    assert len(DOC2["cases"]) >= 40 and sum(c["lang"] == "pt" for c in DOC2["cases"]) * 3 >= len(DOC2["cases"])
    first = {fold(n) for b in heldout.brands(DOC).values() for n in b.names}
    kb_names = {fold(n) for b in load_brands() for n in [b["name"], *b["aliases"]]}
    for b in heldout.brands(DOC2).values():
        assert not {fold(n) for n in b.names} & (first | kb_names)
    assert not {c["id"] for c in DOC2["cases"]} & {c["id"] for c in DOC["cases"]}


def test_third_held_out_file_is_new_too() -> None:
    """Written before the 2026-12-04 rule changes, in styles the labelled set's generators never
    produce; its brands are in no other file, and the dev cases' brands are in none of them."""
    doc3 = heldout.load(heldout.FILE_NAME_3)
    dev = heldout.load("judge_dev.json")
    assert "Do not look at its errors" in doc3["NEVER_TUNE_ON_THIS"]
    cases = doc3["cases"]
    assert len(cases) >= 60 and sum(c["lang"] == "pt" for c in cases) * 3 >= len(cases)
    assert set(Counter(c["label"] for c in cases)) == {"STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT"}
    kb_names = {fold(n) for b in load_brands() for n in [b["name"], *b["aliases"]]}
    earlier = {fold(n) for d in (DOC, DOC2) for b in heldout.brands(d).values() for n in b.names}
    dev_names = {fold(n) for b in heldout.brands(dev).values() for n in b.names}
    third = {fold(n) for b in heldout.brands(doc3).values() for n in b.names}
    assert not third & (earlier | kb_names | dev_names)
    assert not dev_names & (earlier | kb_names)
    ids = [c["id"] for d in (DOC, DOC2, doc3, dev) for c in d["cases"]]
    assert len(ids) == len(set(ids))
