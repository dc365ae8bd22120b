"""Ranking metrics, and the reranker's training data: train split only, hard negatives are
really not relevant, deterministic for a seed."""

from __future__ import annotations

import math

import pytest

from attesta_retrieval.domain.metrics import ndcg_at, recall_at, sigmoid
from attesta_retrieval.service_layer.reranker_training import (
    TrainingConfig, build_pairs, default_reranker_dir, fingerprint)

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


def test_training_pairs_come_from_the_train_split_only():
    from attesta_kb import load_queries

    pairs, stats = build_pairs(TrainingConfig())
    questions = {q for q, _, _ in pairs}
    train = {q["question"] for q in load_queries("train")}
    held_out = {q["question"] for s in ("dev", "test") for q in load_queries(s)} - train
    assert not questions & held_out
    assert train <= questions
    assert stats["generated_questions"] > 0 and stats["pairs"] == len(pairs)


def test_hard_negatives_are_not_relevant_and_pairs_are_deterministic():
    from attesta_kb import load_cards, load_queries

    config = TrainingConfig(max_queries=40)
    pairs, _ = build_pairs(config)
    assert pairs == build_pairs(config)[0]
    passage_of = {f"{c['title']}\n{c['text']}": c["card_id"] for c in load_cards()}
    relevant = {q["question"]: q["relevant"] for q in load_queries("train")[:40]}
    for question, passage, label in pairs:
        if question in relevant and label == 0.0:
            assert passage_of[passage] not in relevant[question]


def test_the_cache_folder_is_keyed_by_data_and_config(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTESTA_CACHE_DIR", str(tmp_path))
    assert default_reranker_dir().parent == tmp_path / "reranker"
    assert fingerprint(TrainingConfig()) != fingerprint(TrainingConfig(seed=14))
