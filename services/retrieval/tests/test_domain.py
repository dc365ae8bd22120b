"""Pure domain rules: chunking, RRF, dedup by parent, the path label, the content hash."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from attesta_contracts.chat import HybridPath
from attesta_retrieval.domain.chunking import chunk_card, chunk_words
from attesta_retrieval.domain.fusion import RRF_K, dedup_by_parent, rrf
from attesta_retrieval.domain.model import card_content_sha256
from attesta_retrieval.domain.paths import decide_path

pytestmark = pytest.mark.unit


@given(n=st.integers(0, 600), size=st.integers(1, 200), data=st.data())
def test_chunk_windows_cover_every_word_and_overlap_exactly(n, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    windows = chunk_words([f"w{i}" for i in range(n)], size, overlap)
    assert windows[0][0] == 0 and windows[-1][1] == n
    for (a1, b1), (a2, b2) in zip(windows, windows[1:], strict=False):
        assert b1 - a1 == size  # only the last window may be short
        assert b1 - a2 == overlap
    assert all(b - a <= size for a, b in windows)


def test_chunk_card_ids_point_at_the_parent_and_carry_the_title():
    text = " ".join(f"w{i}" for i in range(250))
    chunks = chunk_card("med-x", "X monograph", text, size=120, overlap=30)
    assert [c.id for c in chunks] == ["med-x#0", "med-x#1", "med-x#2"]
    assert all(c.card_id == "med-x" and c.text.startswith("X monograph\n") for c in chunks)
    assert chunks[1].text.split()[2] == "w90"  # 120 - 30


def test_bad_chunk_config_is_refused():
    with pytest.raises(ValueError):
        chunk_words(["a"], 10, 10)


def test_rrf_sums_reciprocal_ranks_with_k_60_by_default():
    assert RRF_K == 60
    fused = dict(rrf([["a", "b", "c"], ["b", "d"]]))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 62)
    assert [d for d, _ in rrf([["a", "b", "c"], ["b", "d"]])][:2] == ["b", "a"]


def test_rrf_k_changes_how_much_the_top_rank_weighs():
    assert dict(rrf([["a"]], k=0))["a"] == 1.0
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), unique=True), max_size=4))
def test_rrf_is_deterministic_and_rank_ordered(rankings):
    once, twice = rrf(rankings), rrf(rankings)
    assert once == twice
    assert [s for _, s in once] == sorted((s for _, s in once), reverse=True)
    assert {d for d, _ in once} == {d for r in rankings for d in r}


def test_dedup_by_parent_keeps_the_best_chunk_per_card_in_order():
    assert dedup_by_parent([("a", 0.9), ("b", 0.8), ("a", 0.7), ("c", 0.5), ("b", 0.4)]) == [
        ("a", 0.9), ("b", 0.8), ("c", 0.5)]


@pytest.mark.parametrize(("ran", "sparse_ok", "reranked", "expected"), [
    (True, True, True, HybridPath.FULL),
    (True, True, False, HybridPath.RRF_ONLY),
    (True, False, False, HybridPath.DENSE_ONLY),
    (True, False, True, HybridPath.DENSE_ONLY),  # never "full" without the sparse side
    (False, True, True, None),
])
def test_path_label(ran, sparse_ok, reranked, expected):
    decision = decide_path(ran=ran, sparse_ok=sparse_ok, reranked=reranked)
    assert decision.path == expected
    assert (decision.reason is None) == (expected is HybridPath.FULL)


def test_content_hash_is_canonical():
    card = {"card_id": "c", "title": "T", "text": "x", "source": None, "metadata": {"b": 1, "a": 2}}
    same = {"metadata": {"a": 2, "b": 1}, "text": "x", "title": "T", "card_id": "c", "source": None}
    assert card_content_sha256(card) == card_content_sha256(same)
    assert card_content_sha256(card) != card_content_sha256({**card, "text": "y"})


def test_rerank_passage_reads_the_window_that_answers_the_question():
    from attesta_retrieval.domain.passages import WINDOW_WORDS, rerank_passage

    filler = " ".join(f"word{i}" for i in range(150))
    text = f"Achterberg syndrome is rare. {filler} Diagnosis requires a serum hemorin level above 383 ng/mL."
    passage = rerank_passage("Which condition uses a hemorin cut-off of 383 ng/mL?", "Achterberg", text)
    title, body = passage.split("\n")
    assert title == "Achterberg"
    assert "hemorin level above 383" in body and "Achterberg syndrome is rare" not in body
    assert len(body.split()) == WINDOW_WORDS


def test_rerank_passage_reads_a_card_from_its_start_when_nothing_in_particular_matches():
    from attesta_retrieval.domain.passages import WINDOW_WORDS, rerank_passage

    text = " ".join(f"w{i}" for i in range(200))
    assert rerank_passage("What is it for?", "T", text) == "T\n" + " ".join(text.split()[:WINDOW_WORDS])
    assert rerank_passage("anything", "T", "short card text") == "T\nshort card text"


def test_rerank_order_adds_a_log_prior_from_the_fused_rank():
    import math

    from attesta_retrieval.domain.fusion import rerank_order

    # Fused ranks 1..4. With the prior, rank 1 at logit 2.0 (2.0) beats rank 2 at 2.5
    # (2.5 - ln 2 = 1.81); without it, the higher logit wins.
    logits = [2.0, 2.5, -1.0, 0.0]
    assert rerank_order(logits, 1.0) == [0, 1, 3, 2]
    assert rerank_order(logits, 0.0) == [1, 0, 3, 2]
    # A missing or non-finite logit sorts last, in fused order; ties keep the fused order.
    assert rerank_order([None, math.nan, 1.0, math.inf], 1.0) == [2, 0, 1, 3]
    assert rerank_order([0.0, math.log(2)], 1.0) == [0, 1]
