"""The learned grounding gate (issue #24): its features, its artefact (loaded from disk,
refused when missing or built for other features), the reader's choice of the sentence that
answers, and the note a question in another language gets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from attesta_answer.adapters.gate_artefact import load_gate, shipped_path
from attesta_answer.bootstrap import build_generator
from attesta_answer.domain.extractive import OfflineGenerator, choose_lead, draft_answer
from attesta_answer.domain.grounding import (
    FEATURES, GateArtefactInvalid, GateModel, Lead, Logistic, TermStatistics, features,
    content_sha256, language_group, path_group, weighted_coverage)
from attesta_answer.domain.language import NOT_IN_KB, SOURCES_IN_ENGLISH
from attesta_answer.domain.model import NO_CONTEXT_ANSWER, visible_cards
from attesta_answer.domain.text import content_terms, sentences
from attesta_answer.service_layer.answering import build_answer
from attesta_answer.settings import AnswerSettings
from attesta_contracts.chat import (
    AnswerStatus, ChunkScores, ContextChunk, HybridPath, RetrievalCompleted, ScoredSentence)
from attesta_kb.dataset import load_cards

pytestmark = pytest.mark.unit

CARDS = {c["card_id"]: c for c in load_cards()}
STATS = TermStatistics(584, {"dose": 300, "recommend": 250, "adult": 280, "tablet": 120})


def chunk(cid: str, sims: dict[int, float] | None = None, logits: dict[int, float] | None = None,
          default: float = 0.1, dense: float | None = 0.5, bm25: float | None = 3.0,
          rerank_logit: float | None = 1.0) -> ContextChunk:
    card = CARDS[cid]
    sims, logits = sims or {}, logits or {}
    scored = [ScoredSentence(text=s, similarity=sims.get(i, default), relevance_logit=logits.get(i))
              for i, s in enumerate(sentences(card["text"]))]
    return ContextChunk(id=cid, card_id=cid, title=card["title"], text=card["text"],
                        source=card["source"], metadata=card["metadata"],
                        scores=ChunkScores(rerank_logit=rerank_logit, dense=dense, bm25=bm25),
                        sentences=scored)


def gate(threshold: float = 0.5, intercept: float = 0.0,
         weights: dict[str, float] | None = None, version: str = "test-1") -> GateModel:
    coef = tuple((weights or {}).get(f, 0.0) for f in FEATURES)
    model = Logistic(intercept, coef, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), threshold)
    return GateModel(version, STATS, {f"{lg}/{pg}": model for lg in ("en", "other") for pg in ("full", "fused")})


def index_of(cid: str, needle: str) -> int:
    return next(i for i, s in enumerate(sentences(CARDS[cid]["text"])) if needle in s)


# -- features ---------------------------------------------------------------------------------
def test_coverage_weighs_each_asked_word_by_how_rare_it_is_in_the_kb():
    present = frozenset(content_terms("dose"))
    # "dose" is in 300 of 584 cards, "price" in none: the missing rare word weighs far more
    # than half of what was asked.
    assert weighted_coverage(content_terms("dose price"), present, STATS) < 0.2
    assert weighted_coverage(content_terms("dose"), present, STATS) == 1.0
    assert weighted_coverage([], present, STATS) == 1.0


def test_features_leave_the_card_name_out_even_misspelt_and_flag_words_no_card_has():
    cards = visible_cards([chunk("med-velnorex", {index_of("med-velnorex", "40 mg"): 0.8})], HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None
    named = features("velnorexx dose", cards, lead, STATS)
    assert named["card_coverage"] == 1.0 and named["missing_idf"] == 0.0 and named["unknown_share"] == 0.0
    priced = features("velnorex dose price", cards, lead, STATS)
    assert priced["card_coverage"] < 0.2
    assert priced["missing_idf"] == pytest.approx(1.0)  # "price": no card has it
    assert priced["unknown_share"] == 0.5
    assert named["lead_similarity"] == 0.8 and named["best_similarity"] == 0.8
    assert set(named) == set(FEATURES)
    # A misspelt word of the card is the card's word, not a fact the card lacks.
    typo = features("velnorex recomended dose", cards, lead, STATS)
    assert typo["card_coverage"] == 1.0 and typo["unknown_share"] == 0.0
    assert named["lead_margin"] == pytest.approx(0.8 - 0.1)  # the lead against the card's median


def test_reranker_features_only_on_the_full_path():
    ctx = [chunk("med-velnorex", {0: 0.7}, {0: 2.0}, rerank_logit=2.0),
           chunk("med-velnorax", {0: 0.6}, {0: -1.0}, rerank_logit=-1.0)]
    full = visible_cards(ctx, HybridPath.FULL)
    lead = choose_lead(full)
    assert lead is not None and path_group(full) == "full"
    f = features("velnorex", full, lead, STATS)
    assert f["top_card_prob"] == 0.88 and f["runner_up_prob"] == 0.27  # displayed score / 100
    assert f["lead_sentence_prob"] == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert f["lead_card_prob"] == 0.88
    fused = visible_cards(ctx, HybridPath.RRF_ONLY)
    lead = choose_lead(fused)
    assert lead is not None and path_group(fused) == "fused"
    f = features("velnorex", fused, lead, STATS)
    assert f["top_card_prob"] == f["runner_up_prob"] == 0.0


def test_agreement_and_rank_of_the_lead_card():
    ctx = [chunk("med-velnorax", {0: 0.5}, dense=0.9, bm25=1.0),
           chunk("med-velnorex", {0: 0.8}, dense=0.6, bm25=9.0)]
    cards = visible_cards(ctx, HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None and lead.card.card_id == "med-velnorex"
    f = features("velnorex", cards, lead, STATS)
    assert f["agreement"] == 0.5  # first by BM25 only
    assert f["lead_rank"] == 0.25


def test_spec2_features_say_whether_the_lead_card_stands_out_and_states_what_is_asked():
    dose = index_of("med-velnorex", "40 mg")
    ctx = [chunk("med-velnorex", {dose: 0.8, 0: 0.5}, dense=0.7, bm25=6.0),
           chunk("med-velnorax", {0: 0.6}, dense=0.5, bm25=2.0)]
    cards = visible_cards(ctx, HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None and lead.index == dose
    f = features("velnorex dose price", cards, lead, STATS)
    assert f["card_gap"] == pytest.approx(0.8 - 0.6)  # its best sentence against the other card's
    assert f["sentence_gap"] == pytest.approx(0.8 - 0.5)  # against its own next best sentence
    assert f["dense_margin"] == pytest.approx(0.2) and f["bm25_share"] == pytest.approx(0.75)
    assert f["named"] == 1.0  # the question names the card
    assert features("dose price", cards, lead, STATS)["named"] == 0.0
    # "price" is in no card: the summed rarity of what the card lacks, and what is asked at all
    assert f["missing_idf_sum"] == pytest.approx(1.0)
    assert f["best_sentence_coverage"] < 0.2
    assert features("velnorex dose", cards, lead, STATS)["missing_idf_sum"] == 0.0
    assert f["asked_count"] == pytest.approx(math.log(3) / math.log(30))


def test_groups_by_language_and_path():
    assert language_group(None) == language_group("en") == "en"
    assert language_group("pt") == language_group("es") == "other"
    assert gate().model_for("pt", visible_cards([chunk("med-velnorex")], HybridPath.RRF_ONLY)) == "other/fused"


def test_the_logistic_model_and_its_threshold():
    g = gate(threshold=0.6, intercept=-1.0, weights={"lead_similarity": 2.0})
    cards = visible_cards([chunk("med-velnorex", {0: 0.9})], HybridPath.RRF_ONLY)
    lead = Lead(cards[0], 0)
    decision = g.decide("velnorex", cards, lead)
    assert decision.probability == pytest.approx(1 / (1 + math.exp(-(-1.0 + 2.0 * 0.9))))
    assert decision.grounded and decision.model == "en/fused"
    low = visible_cards([chunk("med-velnorex", {0: 0.2}, default=0.2)], HybridPath.RRF_ONLY)
    assert not g.decide("velnorex", low, Lead(low[0], 0)).grounded


# -- the artefact -----------------------------------------------------------------------------
def test_the_shipped_artefact_loads_and_names_the_generator():
    shipped = load_gate()
    assert set(shipped.models) == {"en/full", "en/fused", "other/full", "other/fused"}
    data = json.loads(shipped_path().read_text())
    assert data["version"] == shipped.version and data["training"]["data_sha256"]
    assert data["sha256"] == content_sha256(data)  # the digest docs/answer-quality.md quotes
    assert shipped.stats.n_docs == len(CARDS)
    assert OfflineGenerator().name == f"offline-extractive-v2+gate-{shipped.version}"
    assert build_generator(AnswerSettings()).name == OfflineGenerator().name


def test_the_shipped_full_path_model_was_fitted_with_a_trained_reranker():
    # The full-path model reads the reranker's probabilities: one carried over from a gate
    # trained without a reranker, or fitted on no full-path rows, would judge them uncalibrated.
    data = json.loads(shipped_path().read_text())
    training = data["training"]
    # (fused-path models may be carried from an earlier gate: benchmarks/carry_gate_models.py)
    assert not [g for g in training["carried"] if g.endswith("/full")]
    assert training["reranker"] and training["reranker"]["steps"] > 0
    assert training["rows"]["en/full"] >= 200 and not training["pooled"]["en/full"]
    full = data["models"]["en/full"]
    names = data["features"]
    # The reranker's features carry weight there (they are constant 0 on the fused path).
    assert any(abs(full["coef"][names.index(f)]) > 0.05 for f in
               ("lead_sentence_prob", "best_sentence_prob", "top_card_prob", "lead_card_prob"))
    assert 0.0 < full["threshold"] < 1.0


def test_a_missing_artefact_stops_the_service_at_start_up(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(GateArtefactInvalid, match="train_grounding_gate.py"):
        load_gate(missing)
    with pytest.raises(GateArtefactInvalid):
        build_generator(AnswerSettings(answer_gate_path=missing))


@pytest.mark.parametrize("damage", ["feature_spec", "features", "nan", "model", "scale", "json", "kind",
                                    "sha256"])
def test_a_mismatched_or_damaged_artefact_is_refused(tmp_path, damage):
    data = json.loads(shipped_path().read_text())
    if damage == "feature_spec":
        data["feature_spec"] += 1
    elif damage == "features":
        data["features"] = data["features"][:-1]
    elif damage == "nan":
        data["models"]["en/full"]["coef"][0] = math.nan
    elif damage == "model":
        del data["models"]["other/fused"]
    elif damage == "scale":
        data["models"]["en/fused"]["scale"][0] = 0.0
    elif damage == "kind":
        data["kind"] = "something-else"
    elif damage == "sha256":  # a threshold edited by hand, the recorded digest left as it was
        data["models"]["en/fused"]["threshold"] = 0.01
    if damage in ("nan", "model", "scale"):  # the damage alone, not the digest, must be refused
        data.pop("sha256", None)
    path: Path = tmp_path / "gate.json"
    path.write_text("{not json" if damage == "json" else json.dumps(data))
    with pytest.raises(GateArtefactInvalid):
        load_gate(path)


# -- the reader -------------------------------------------------------------------------------
def test_the_cross_encoder_breaks_the_embedders_near_ties_on_the_full_path():
    cid = "med-velnorex"
    dose, maker = index_of(cid, "40 mg"), index_of(cid, "Lumora")
    # The embedder slightly prefers the dose sentence; the cross-encoder is sure the maker
    # sentence answers, and its probability (weighted) breaks the near-tie.
    ctx = [chunk(cid, {dose: 0.8, maker: 0.7}, {dose: -5.0, maker: 5.0})]
    draft = draft_answer("who is behind velnorex", visible_cards(ctx, HybridPath.FULL), gate(0.0))
    assert draft.grounded
    assert draft.citations[0] == {"card_id": cid, "span": sentences(CARDS[cid]["text"])[maker]}
    # Without the cross-encoder's scores (rrf_only), the reader goes by similarity.
    plain = [chunk(cid, {dose: 0.8, maker: 0.7})]
    draft = draft_answer("who is behind velnorex", visible_cards(plain, HybridPath.RRF_ONLY), gate(0.0))
    assert draft.citations[0]["span"] == sentences(CARDS[cid]["text"])[dose]


def test_the_gate_refuses_what_it_is_not_sure_of():
    ctx = [chunk("med-velnorex", {0: 0.9})]
    draft = draft_answer("velnorex", visible_cards(ctx, HybridPath.RRF_ONLY), gate(threshold=0.99))
    assert not draft.grounded and draft.citations == ()


# -- other languages --------------------------------------------------------------------------
async def test_a_portuguese_question_is_answered_from_the_english_cards_and_told_so():
    cid = "med-velnorex"
    dose = index_of(cid, "40 mg")
    retrieval = RetrievalCompleted(request_id="r-pt", question="Qual é a dose de Velnorex?",
                                   chunks=[chunk(cid, {dose: 0.9}, {dose: 2.0})],
                                   hybrid_path=HybridPath.FULL, language="pt")
    built = await build_answer(retrieval, OfflineGenerator(gate(0.0)))
    reply = built.reply
    assert reply.status is AnswerStatus.ANSWERED and not built.dropped
    assert reply.answer.startswith(SOURCES_IN_ENGLISH["pt"])
    assert reply.citations[0].span == sentences(CARDS[cid]["text"])[dose]
    assert reply.citations[0].span in CARDS[cid]["text"]  # quoted exactly: it reconciles
    assert reply.citations[0].source_url == CARDS[cid]["source"]


async def test_other_languages_are_told_in_their_language_when_the_kb_does_not_say():
    for language, expected in (("es", NOT_IN_KB["es"]), ("pt", NOT_IN_KB["pt"]), ("en", NO_CONTEXT_ANSWER),
                               (None, NO_CONTEXT_ANSWER)):
        retrieval = RetrievalCompleted(request_id="r-x", question="?", chunks=[chunk("med-velnorex")],
                                       hybrid_path=HybridPath.RRF_ONLY, language=language)
        reply = (await build_answer(retrieval, OfflineGenerator(gate(threshold=0.99)))).reply
        assert reply.status is AnswerStatus.NO_CONTEXT and reply.answer == expected


async def test_an_english_answer_carries_no_note():
    cid = "med-velnorex"
    retrieval = RetrievalCompleted(request_id="r-en", question="velnorex dose",
                                   chunks=[chunk(cid, {0: 0.9})], hybrid_path=HybridPath.RRF_ONLY, language="en")
    reply = (await build_answer(retrieval, OfflineGenerator(gate(0.0)))).reply
    assert reply.status is AnswerStatus.ANSWERED
    assert reply.answer.startswith(sentences(CARDS[cid]["text"])[0][:20])

