"""Hybrid retrieval over real parts (the bundled MiniLM embedder, embedded Chroma, bm25s, a
cross-encoder trained in the session) and each fallback made to happen for real."""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
import time

import numpy as np
import pytest

from attesta_contracts.chat import HybridPath
from attesta_retrieval.adapters.dense_store import DenseStore, make_client
from attesta_retrieval.adapters.reranker import Reranker
from attesta_retrieval.adapters.sparse import SparseIndex
from attesta_retrieval.domain.model import Card
from attesta_retrieval.domain.passages import rerank_passage
from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex
from attesta_retrieval.service_layer.retrieval import HybridRetriever, RerankerSlot, RetrievalConfig

pytestmark = pytest.mark.unit
QUESTION = "What is the usual adult dose of Velnorex?"


async def test_full_path_reranks_and_keeps_the_raw_logit(built, loaded_reranker):
    retriever = HybridRetriever(built, loaded_reranker, RetrievalConfig(rerank_candidates=8,
                                                                        rerank_budget_ms=60_000))
    out = await retriever.retrieve(QUESTION, 5)
    assert out.hybrid_path is HybridPath.FULL and out.path_reason is None
    assert len(out.chunks) == 5
    logits = [c.scores.rerank_logit for c in out.chunks]
    assert all(isinstance(x, float) and math.isfinite(x) for x in logits)
    # Ordered by logit - ln(fused rank): the fused rank of each card is its RRF position.
    fused = await retriever.retrieve(QUESTION, 8, force_path=HybridPath.RRF_ONLY)
    rank = {h.card_id: i + 1 for i, h in enumerate(fused.hits[:8])}
    combined = [c.scores.rerank_logit - math.log(rank[c.card_id]) for c in out.chunks]
    assert combined == sorted(combined, reverse=True)
    # Raw logit, not a probability: the same pair, read as the service reads it, gives the
    # same number when scored directly.
    top = out.chunks[0]
    direct = loaded_reranker.model.logits(QUESTION, [rerank_passage(QUESTION, top.title, top.text)])[0]
    assert top.scores.rerank_logit == pytest.approx(float(direct), abs=1e-4)
    for ch in out.chunks:
        assert ch.id == ch.card_id  # dedup by parent: one chunk per card, id = card id
        assert ch.source and ch.source.startswith("https://") and isinstance(ch.metadata, dict)
        assert ch.scores.rrf is not None
    assert {"embed", "dense", "sparse", "fuse", "rerank", "total"} <= set(out.timings_ms)
    assert len({c.card_id for c in out.chunks}) == len(out.chunks)


async def test_full_path_with_no_rank_prior_orders_by_the_cross_encoder_alone(built, loaded_reranker):
    retriever = HybridRetriever(built, loaded_reranker, RetrievalConfig(
        rerank_candidates=8, rerank_budget_ms=60_000, rank_prior_weight=0.0))
    out = await retriever.retrieve(QUESTION, 8)
    assert out.hybrid_path is HybridPath.FULL
    logits = [c.scores.rerank_logit for c in out.chunks]
    assert logits == sorted(logits, reverse=True)


async def test_rrf_only_when_no_reranker_can_be_loaded(built, tmp_path):
    slot = RerankerSlot()
    with pytest.raises(FileNotFoundError):
        Reranker(tmp_path / "no-model-here")
    slot.unset(f"no CrossEncoder model at {tmp_path / 'no-model-here'}")
    out = await HybridRetriever(built, slot).retrieve(QUESTION, 5)
    assert out.hybrid_path is HybridPath.RRF_ONLY
    assert "reranker not loaded" in out.path_reason
    assert out.chunks and all(c.scores.rerank_logit is None for c in out.chunks)
    assert all(c.scores.rrf is not None for c in out.chunks)
    assert {"med-velnorex", "product-velnorex"} & {c.card_id for c in out.chunks}


async def test_rrf_only_when_the_reranker_is_over_its_time_budget(built, loaded_reranker):
    retriever = HybridRetriever(built, loaded_reranker, RetrievalConfig(rerank_budget_ms=0.01))
    out = await retriever.retrieve(QUESTION, 5)
    assert out.hybrid_path is HybridPath.RRF_ONLY
    assert "time budget" in out.path_reason
    assert all(c.scores.rerank_logit is None for c in out.chunks)


async def test_dense_only_when_the_sparse_index_cannot_be_built(tmp_path, embedder, kb_slice, as_cards,
                                                               loaded_reranker):
    blocker = tmp_path / "bm25"
    blocker.write_text("a file where the index folder should be")  # the build fails for real
    dense = DenseStore(make_client(tmp_path / "chroma", None), "kb-dense-only")
    index = KbIndex(dense, embedder, SparseIndex(blocker), chunk_words=60, overlap_words=15)
    cards = as_cards(kb_slice[:25])
    index.apply([CardEvent(c.card_id, 0, i, c) for i, c in enumerate(cards)])
    index.rebuild_sparse()  # logs the failure, does not raise
    assert "build failed" in index.sparse.unavailable_reason
    out = await HybridRetriever(index, loaded_reranker).retrieve(QUESTION, 5)
    assert out.hybrid_path is HybridPath.DENSE_ONLY
    assert "sparse index unavailable" in out.path_reason
    assert out.chunks and all(c.scores.bm25 is None and c.scores.rrf is None
                              and c.scores.rerank_logit is None for c in out.chunks)
    dense_scores = [c.scores.dense for c in out.chunks]
    assert dense_scores == sorted(dense_scores, reverse=True)


async def test_dense_only_when_sparse_is_switched_off(built, loaded_reranker, tmp_path):
    off = KbIndex(built.dense, built.embedder, SparseIndex(tmp_path, enabled=False))
    off.cards = built.cards
    out = await HybridRetriever(off, loaded_reranker).retrieve(QUESTION, 3)
    assert out.hybrid_path is HybridPath.DENSE_ONLY and "disabled" in out.path_reason


async def test_blank_question_runs_no_retrieval_and_has_no_label(built, loaded_reranker):
    out = await HybridRetriever(built, loaded_reranker).retrieve("  \n\t ", 5)
    assert out.hybrid_path is None and out.chunks == []
    assert "blank" in out.path_reason


async def test_a_long_card_split_in_chunks_comes_back_once(tmp_path, embedder):
    long_text = " ".join(["Quorvane tablets treat Zelmar syndrome at 30 mg daily."] * 40)
    cards = [Card("med-quorvane", "Quorvane", long_text, "https://kb.example/q", {}, "0" * 64),
             Card("med-other", "Other", "Unrelated text about knees.", "https://kb.example/o", {},
                  "1" * 64)]
    dense = DenseStore(make_client(tmp_path, None), "kb-long")
    index = KbIndex(dense, embedder, SparseIndex(None), chunk_words=40, overlap_words=10)
    index.apply([CardEvent(c.card_id, 0, i, c) for i, c in enumerate(cards)])
    index.rebuild_sparse()
    assert dense.count() > 5  # many chunks of the same parent
    out = await HybridRetriever(index, RerankerSlot()).retrieve("Quorvane dose", 5)
    assert [c.id for c in out.chunks] == ["med-quorvane", "med-other"]


async def test_each_chunk_carries_its_sentences_scored_by_meaning(built, embedder):
    """The answer service's evidence: every sentence of each returned card, verbatim, with its
    cosine similarity to the question; the dose sentence is the closest for a dose question
    even when worded as people do ("how many pills a day")."""
    from attesta_retrieval.service_layer.evidence import SentenceEvidence

    evidence = SentenceEvidence(embedder)
    retriever = HybridRetriever(built, RerankerSlot(), RetrievalConfig(), evidence=evidence)
    out = await retriever.retrieve("my doctor put me on velnorex, how many pills do i take a day?", 3)
    assert out.hybrid_path is HybridPath.RRF_ONLY and "evidence" in out.timings_ms
    for chunk in out.chunks:
        assert chunk.sentences
        assert all(s.text in chunk.text and -1.0 <= s.similarity <= 1.0 for s in chunk.sentences)
    best_chunk, best = max(((c, s) for c in out.chunks for s in c.sentences), key=lambda p: p[1].similarity)
    assert best_chunk.card_id in ("med-velnorex", "product-velnorex")
    assert " mg " in best.text and "daily" in best.text  # a dosing sentence
    # Cached per card and content: the second question embeds no card sentence again.
    calls = []
    real = embedder.embed
    embedder.embed = lambda texts: calls.append(len(texts)) or real(texts)
    try:
        await retriever.retrieve("velnorex pregnancy", 3)
    finally:
        embedder.embed = real
    cached = {c.card_id for c in out.chunks}
    again = await retriever.retrieve("velnorex pregnancy", 3)
    if {c.card_id for c in again.chunks} <= cached:
        assert calls == [1]  # only the question itself


class _SlowCrossEncoder:
    """A cross-encoder that takes ``seconds`` a pass and counts the passes it ran."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.passes = seconds, 0

    def logits(self, question, passages):
        self.passes += 1
        time.sleep(self.seconds)
        return np.zeros(len(passages), dtype=np.float32)


async def test_a_burst_skips_the_reranker_once_its_queue_is_over_the_limit(built):
    model = _SlowCrossEncoder(0.15)
    slot = RerankerSlot()
    slot.set(model)
    retriever = HybridRetriever(built, slot, RetrievalConfig(rerank_candidates=8, rerank_budget_ms=60_000,
                                                             rerank_queue_ms=200))
    assert (await retriever.retrieve(QUESTION, 5)).hybrid_path is HybridPath.FULL  # learns a pass's time
    burst = await asyncio.gather(*(retriever.retrieve(QUESTION, 5) for _ in range(8)))
    paths = [out.hybrid_path for out in burst]
    busy = [out.path_reason for out in burst if out.hybrid_path is HybridPath.RRF_ONLY]
    assert HybridPath.FULL in paths and busy, paths
    assert all(reason.startswith("reranker busy: ~") for reason in busy), busy
    assert model.passes == 1 + paths.count(HybridPath.FULL) < 9  # skipped questions cost no pass
    assert all(c.scores.rerank_logit is None for out in burst if out.path_reason in busy for c in out.chunks)
    assert slot.queued_ms() == 0
    assert (await retriever.retrieve(QUESTION, 5)).hybrid_path is HybridPath.FULL  # the queue drained


async def test_a_pass_over_its_budget_that_has_not_started_is_cancelled_not_run(built):
    model = _SlowCrossEncoder(0.4)
    slot = RerankerSlot()
    slot.set(model)
    retriever = HybridRetriever(built, slot, RetrievalConfig(rerank_budget_ms=50, rerank_queue_ms=0))
    outs = await asyncio.gather(*(retriever.retrieve(QUESTION, 5) for _ in range(4)))
    assert all(out.hybrid_path is HybridPath.RRF_ONLY and "time budget" in out.path_reason for out in outs)
    await asyncio.sleep(0.6)  # the one pass that started finishes
    assert model.passes == 1  # the three queued behind it were cancelled by their callers' timeout
    assert slot.queued_ms() == 0


def test_questions_are_embedded_at_once_while_a_long_encode_runs_on_another_thread():
    """Chats are retrieved concurrently beside the start-up sentence warm-up, all on threads:
    a question does not wait for another thread's long encode (behind a lock every chat waited
    for the warm-up's batches, 3-9 s a chat in the bounds test, session 2026-12-06 #12), and a
    model shared by threads from its first use (tokenizer set up when it is built) gives each
    the vector it gives alone."""
    from attesta_retrieval.adapters.embedder import Embedder

    embedder = Embedder()  # fresh: no encode has run on it but its own
    questions = [f"{QUESTION} ({i})" for i in range(3)]
    long_encode = threading.Thread(
        target=embedder.embed, args=([f"{QUESTION} sentence {i}" for i in range(3000)],))
    long_encode.start()
    time.sleep(0.3)  # the long encode is under way (it takes seconds)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        together = list(pool.map(lambda q: embedder.embed([q])[0], questions))
    assert long_encode.is_alive(), "the questions waited for the long encode"
    long_encode.join()
    alone = [embedder.embed([q])[0] for q in questions]
    np.testing.assert_allclose(np.stack(together), np.stack(alone), atol=1e-5)


class _RecordingCrossEncoder:
    """A cross-encoder that remembers the questions it was asked."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    def logits(self, question, passages):
        self.questions.append(question)
        return np.zeros(len(passages), dtype=np.float32)


async def test_a_name_spelled_letter_by_letter_reaches_the_embedder_and_the_reranker_whole(built):
    model = _RecordingCrossEncoder()
    slot = RerankerSlot()
    slot.set(model)
    retriever = HybridRetriever(built, slot, RetrievalConfig(rerank_candidates=8, rerank_budget_ms=60_000))
    spelled = await retriever.retrieve("What is the usual adult dose of V-E-L-N-O-R-E-X?", 5)
    plain = await retriever.retrieve(QUESTION, 5)
    assert set(model.questions) == {QUESTION}  # every pass (cards, then sentences) read the name whole
    assert [c.card_id for c in spelled.chunks] == [c.card_id for c in plain.chunks]
