"""Ranking metrics, and the reranker's training data: train split only, hard negatives are
fused candidates that are really not relevant (look-alike names included), deterministic for a
seed."""

from __future__ import annotations

import math
import random

import pytest

from attesta_retrieval.domain.metrics import ndcg_at, recall_at, sigmoid
from attesta_retrieval.service_layer.reranker_training import (
    TrainingConfig, default_reranker_dir, fingerprint, sample_group, training_items)

pytestmark = pytest.mark.unit


def test_recall_and_ndcg():
    rel = {"a": 2, "b": 1}
    assert recall_at(["x", "a", "y", "b"], rel, 2) == 0.5
    assert recall_at(["x", "a", "y", "b"], rel, 4) == 1.0
    assert ndcg_at(["a", "b"], rel, 10) == pytest.approx(1.0)
    swapped = (1 / math.log2(2) + 3 / math.log2(3)) / (3 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at(["b", "a"], rel, 10) == pytest.approx(swapped)
    assert ndcg_at(["x"], {}, 10) == 0.0 and recall_at(["x"], {}, 5) == 0.0


def test_sigmoid_is_stable_at_the_extremes():
    assert sigmoid(0) == 0.5 and sigmoid(-1000) == 0.0 and sigmoid(1000) == 1.0


@pytest.fixture(scope="module")
def items_and_stats():
    """Every training item once per module: the fused candidates need the KB index (cached
    under the cache folder after the first run)."""
    return training_items(TrainingConfig(styled=False), progress=False)


def test_training_questions_come_from_the_train_split_only(items_and_stats):
    from attesta_kb import load_queries

    items, stats = items_and_stats
    questions = {it.question for it in items}
    train = {q["question"] for q in load_queries("train")}
    held_out = {q["question"] for s in ("dev", "test") for q in load_queries(s)} - train
    assert not questions & held_out
    assert train <= questions
    assert stats["generated_questions"] > 0 and stats["items"] == len(items)


def test_hard_negatives_are_fused_candidates_that_are_not_relevant(items_and_stats):
    from attesta_kb import load_queries

    items, _ = items_and_stats
    config = TrainingConfig(styled=False)
    relevant = {q["question"]: q["relevant"] for q in load_queries("train")}
    all_ids = sorted({c for it in items for c in it.candidates})
    for item in items[:120]:
        group = sample_group(item, config, random.Random(1), all_ids)
        assert group == sample_group(item, config, random.Random(1), all_ids)  # seeded
        assert len(group) == config.group_size and group[0][1] > 0
        pool = set(item.candidates[:config.negative_pool])
        for cid, grade in group:
            if grade == 0:
                assert cid not in relevant.get(item.question, {}) and cid not in item.grades
                assert (cid in pool or cid in item.forced_negatives  # a look-alike, always
                        or len(pool - set(item.grades)) < config.group_size // 2)


def test_hard_negatives_include_look_alike_names(items_and_stats):
    """What BM25-only negatives missed: the generic name of Velnorex ranks Velnorax high too,
    and that look-alike is a negative the reranker must learn to push down."""
    items, _ = items_and_stats
    item = next(it for it in items if it.question == "How does velnorexant work?")
    assert "med-velnorex" in item.grades
    assert "med-velnorax" in item.candidates[:TrainingConfig().negative_pool]
    assert "med-velnorax" not in item.grades


def test_generated_questions_count_every_card_about_their_subject_as_relevant(items_and_stats):
    from attesta_kb import load_cards

    items, _ = items_and_stats
    subject = {c["card_id"]: c["metadata"].get("subject") or c["title"] for c in load_cards()}
    generated = [it for it in items if it.generated]
    assert generated
    for it in generated:
        subjects = {subject[c] for c in it.grades}
        assert len(subjects) == 1 and set(it.grades.values()) == {2}
        assert {c for c, s in subject.items() if s in subjects} == set(it.grades)


def test_the_cache_folder_is_keyed_by_data_and_config(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTESTA_CACHE_DIR", str(tmp_path))
    assert default_reranker_dir().parent == tmp_path / "reranker"
    assert fingerprint(TrainingConfig()) != fingerprint(TrainingConfig(seed=14))


@pytest.fixture(scope="module")
def styled_items():
    """Restyled questions on a slice of the train split (the full set is what training uses;
    its fused candidates take minutes)."""
    return training_items(TrainingConfig(max_queries=60, reverse_lookups=40, comparisons=20),
                          progress=False)


def test_styled_questions_cover_the_styles_and_never_repeat_a_held_out_question(styled_items):
    import json
    from pathlib import Path

    from attesta_kb import load_queries

    items, stats = styled_items
    assert {"template", "typo", "reverse", "comparison"} <= set(stats["styles"])
    assert {"keywords", "rambling"} & set(stats["styles"])
    root = Path(__file__).resolve().parents[3]
    held = {q["question"].casefold() for name in ("assistant_heldout.json", "assistant_dev.json")
            for q in json.loads((root / "benchmarks" / "data" / name).read_text())["questions"]}
    held |= {q["question"].casefold() for s in ("dev", "test") for q in load_queries(s)}
    assert not {it.question.casefold() for it in items} & held
    for it in items:
        assert it.grades and all(g in (1, 2) for g in it.grades.values())


def test_calibration_items_are_kept_out_of_training_with_their_restyled_copies(styled_items):
    items, stats = styled_items
    calib = [it for it in items if it.calibration]
    assert calib and stats["calibration_items"] == len(calib)
    assert stats["training_items"] == len(items) - len(calib)
    held_grades = {tuple(sorted(it.grades)) for it in calib if it.style == "template"}
    for it in items:
        if it.style in ("typo", "keywords", "rambling") and tuple(sorted(it.grades)) in held_grades:
            # a restyled copy sits on its original's side of the split
            originals = [o for o in items if o.style == "template" and o.grades == it.grades]
            if len(originals) == 1:
                assert it.calibration == originals[0].calibration


def test_a_relevant_cards_look_alike_is_always_a_negative(styled_items):
    items, _ = styled_items
    config = TrainingConfig()
    with_twin = [it for it in items if it.forced_negatives]
    assert with_twin
    all_ids = sorted({c for it in items for c in it.candidates})
    for it in with_twin[:50]:
        group = sample_group(it, config, random.Random(3), all_ids)
        negatives = {c for c, g in group if g == 0}
        assert set(it.forced_negatives[:config.group_size // 2]) <= negatives
        assert not negatives & set(it.grades)


def test_calibration_is_folded_into_the_last_layer(embedder):
    """After ``calibrate`` the model itself emits a * logit + b: the served logit is the
    calibrated one (ADR-0024's round(100 * sigmoid(logit)) needs no extra step)."""
    import torch
    from sentence_transformers import CrossEncoder

    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import default_embedder_path
    from attesta_retrieval.service_layer.reranker_training import TrainingItem, calibrate

    cards = {c["card_id"]: c for c in load_cards()}
    ids = sorted(cards)[:6]
    held = [TrainingItem("Velnorex dose", {ids[0]: 2}, tuple(ids), False, "template", True),
            TrainingItem("Alvrator maker", {ids[1]: 2}, tuple(ids), False, "template", True)]
    model = CrossEncoder(str(default_embedder_path()), num_labels=1, max_length=64, device="cpu",
                         activation_fn=torch.nn.Identity(), local_files_only=True)
    model.model.eval()
    pairs = [("Velnorex dose", cards[ids[2]]["title"]), ("Alvrator maker", cards[ids[1]]["title"])]
    before = model.predict(pairs, convert_to_numpy=True).reshape(-1)
    result = calibrate(model, held, cards, TrainingConfig(max_length=64))
    after = model.predict(pairs, convert_to_numpy=True).reshape(-1)
    assert result["pairs"] == 12 and result["questions"] == 2
    assert after == pytest.approx(result["scale"] * before + result["bias"], abs=2e-3)
