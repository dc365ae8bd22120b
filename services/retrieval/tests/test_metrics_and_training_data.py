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
    return training_items(TrainingConfig(), progress=False)


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
    config = TrainingConfig()
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
                assert cid in pool or len(pool - set(item.grades)) < config.group_size // 2


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
