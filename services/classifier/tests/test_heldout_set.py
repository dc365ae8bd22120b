"""The held-out sets (eval/classifier, issues #18 and #28) are what they claim to be: big enough, a
third in Portuguese, over brands that are neither in the knowledge base nor in the labelled set,
every label an ADR-031 class, and each file keeps its "never tune on this" marker; the three old
ones are marked CONTAMINATED, and the fresh one has the shape issue #28 asks for. They are
measured by ``benchmarks/classifier_accuracy.py --fresh`` (and ``--heldout`` for the old ones),
never tuned on: no test asserts their accuracy."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from attesta_classifier_eval import heldout
from attesta_classifier_eval.labeled import load_labeled_runs
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


def test_old_held_out_files_are_marked_contaminated() -> None:
    """Issue #28: rules were written from them; they are reported apart and no longer count."""
    for name in heldout.CONTAMINATED_FILES:
        assert heldout.load(name)["about"].startswith("CONTAMINATED (issue #28)")
    assert heldout.FRESH not in heldout.CONTAMINATED_FILES


def test_fresh_held_out_file_has_the_shape_issue_28_asks_for() -> None:
    """Written before the claim-checking judge: 200+ cases, a third in Portuguese, every class
    (30+ DESCRIPTIVE and CONFABULATED, 20+ of the others), seven or more brands that occur in no
    other file (three or more Brazilian or Portuguese), every failure kind the issue lists; and
    the loaders read it as they read the others."""
    doc = heldout.load(heldout.FRESH)
    assert "NEVER TUNE ON IT" in doc["about"] and "never opens" in doc["about"]
    assert "E-mail addresses on the brand's domain" in doc["labelling_rules"]
    cases, brands = doc["cases"], heldout.brands(doc)
    assert len(cases) >= 200 and sum(c["lang"] == "pt" for c in cases) * 3 >= len(cases)
    labels = Counter(c["label"] for c in cases)
    assert set(labels) == {"STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT"}
    assert labels["DESCRIPTIVE"] >= 30 and labels["CONFABULATED"] >= 30
    assert min(labels["STRONG"], labels["ECHO"], labels["ABSENT"]) >= 20
    assert {c["brand"] for c in cases} == set(brands) and len(brands) >= 7
    lusophone = [k for k, b in doc["brands"].items() if b["lang"] == "pt"]
    assert len(lusophone) >= 3
    assert all(b.domains[0].endswith((".com.br", ".pt")) for k, b in brands.items() if k in lusophone)
    kinds = {c["kind"] for c in cases}
    assert {"paraphrase", "number_format", "unit_conversion", "unit_wrong", "currency_words",
            "place_region", "place_wrong_city", "negation_true", "negation_false", "hedge_en_true",
            "hedge_en_false", "hedge_pt_true", "hedge_pt_false", "hedge_nonanswer_en",
            "hedge_nonanswer_pt", "common_word_as_word", "common_word_as_brand", "lookalike_hyphen",
            "lookalike_suffix_host", "lookalike_other_tld", "email_on_domain", "email_invented",
            "mailto_only", "mixed_true_false"} <= kinds
    assert sum(c["lang"] != doc["brands"][c["brand"]]["lang"] for c in cases) >= 20
    # new brands: in no other case file, no labelled run, not in the knowledge base
    others = [heldout.load(n) for n in (*heldout.CONTAMINATED_FILES, *heldout.DEV_FILES)]
    elsewhere = fold(" ".join(json.dumps(d, ensure_ascii=False) for d in others)
                     + " ".join(r["answer"] + " " + r["prompt"] for r in load_labeled_runs()))
    kb_names = {fold(n) for b in load_brands() for n in [b["name"], *b["aliases"]]}
    for b in brands.values():
        assert fold(b.name) not in elsewhere and fold(b.name) not in kb_names
        assert fold(b.domains[0]) not in elsewhere
    ids = [c["id"] for d in (doc, *others) for c in d["cases"]]
    assert len(ids) == len(set(ids))
    facts = heldout.facts(doc)
    assert all(len(f) >= 10 for f in facts.values())
    assert all(heldout.run_of(c).brand_ids == (c["brand"],) for c in cases)
