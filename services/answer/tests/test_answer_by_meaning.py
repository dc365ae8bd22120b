"""The offline generator on retrieval's sentence evidence: it answers only when the grounding
gate says so, leads with the sentence the reader's model scores best, quotes the card exactly
(spans reconcile), and never trusts a malformed similarity."""

from __future__ import annotations

import math

import pytest

from attesta_answer.domain.extractive import MAX_SENTENCES, choose_lead, draft_answer
from attesta_answer.domain.grounding import FEATURES, GateModel, Logistic, TermStatistics, asked_terms
from attesta_answer.domain.model import visible_cards
from attesta_answer.domain.text import sentences
from attesta_answer.service_layer.answering import build_answer
from attesta_answer.domain.extractive import OfflineGenerator
from attesta_contracts.chat import (
    AnswerStatus, ChunkScores, ContextChunk, HybridPath, RetrievalCompleted, ScoredSentence)
from attesta_kb.dataset import load_cards

pytestmark = pytest.mark.unit

CARDS = {c["card_id"]: c for c in load_cards()}


def similarity_gate(threshold: float) -> GateModel:
    """A gate that answers when the lead sentence's similarity reaches ``threshold`` (a steep
    logistic on that one feature), to test the generator apart from the trained artefact."""
    coef = tuple(200.0 if f == "lead_similarity" else 0.0 for f in FEATURES)
    mean = tuple(threshold if f == "lead_similarity" else 0.0 for f in FEATURES)
    model = Logistic(0.0, coef, mean, (1.0,) * len(FEATURES), 0.5)
    return GateModel("test", TermStatistics(584, {}), {f"{lg}/{pg}": model for lg in ("en", "other")
                                                        for pg in ("full", "fused")})


GATE = similarity_gate(0.7)


def chunk(cid: str, sims: dict[int, float], default: float = 0.1) -> ContextChunk:
    card = CARDS[cid]
    scored = [ScoredSentence(text=s, similarity=sims.get(i, default))
              for i, s in enumerate(sentences(card["text"]))]
    return ContextChunk(id=cid, card_id=cid, title=card["title"], text=card["text"],
                        source=card["source"], metadata=card["metadata"],
                        scores=ChunkScores(rerank_logit=1.0), sentences=scored)


def test_leads_with_the_closest_sentence_and_quotes_it_verbatim():
    dose = sentences(CARDS["med-velnorex"]["text"])
    at = next(i for i, s in enumerate(dose) if "40 mg" in s)
    cards = visible_cards([chunk("med-velnorax", {0: 0.6}), chunk("med-velnorex", {at: 0.8, at + 1: 0.75})])
    draft = draft_answer("how many pills a day on velnorex?", cards, GATE)
    assert draft.grounded and draft.citations[0] == {"card_id": "med-velnorex", "span": dose[at]}
    assert draft.answer.startswith(dose[at])
    assert [c["span"] for c in draft.citations] == [dose[at], dose[at + 1]]
    assert len(draft.citations) <= MAX_SENTENCES
    assert all(c["card_id"] == "med-velnorex" for c in draft.citations)  # one card reads as one answer


def test_nothing_close_enough_means_no_answer():
    cards = visible_cards([chunk("med-velnorex", {}, default=0.69)])
    assert not draft_answer("What is the dose of velnorex?", cards, GATE).grounded
    assert draft_answer("What is the dose of velnorex?", visible_cards([chunk("med-velnorex", {}, default=0.71)]),
                        GATE).grounded


def test_what_is_asked_leaves_the_name_out_even_misspelt():
    title = CARDS["med-velnorex"]["title"]
    assert asked_terms("velnorex", title) == []
    assert asked_terms("velnorexx dose", title) == ["dose"]
    assert asked_terms("Is velnorex gluten free?", title) == ["gluten", "free"]


def test_relevance_counts_only_on_the_full_path_and_is_the_displayed_score():
    c = chunk("med-velnorex", {0: 0.9})
    assert visible_cards([c], HybridPath.FULL)[0].relevance == 0.73  # round(100 * sigmoid(1))
    assert visible_cards([c], HybridPath.RRF_ONLY)[0].relevance is None
    assert visible_cards([c])[0].relevance is None
    lead = choose_lead(visible_cards([c], HybridPath.FULL))
    assert lead is not None and lead.card.relevance == 0.73 and lead.card.sentences[0][1] == 0.9


def test_a_lead_that_says_it_names_its_subject():
    text = sentences(CARDS["med-velnorax"]["text"])
    at = next(i for i, s in enumerate(text) if s.startswith("It is marketed by"))
    draft = draft_answer("who sells velnorax", visible_cards([chunk("med-velnorax", {at: 0.9})]), GATE)
    assert draft.answer.startswith("Velnorax: it is marketed by")
    assert draft.citations[0]["span"] == text[at]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1.5, -3.0])
def test_malformed_similarities_are_dropped(bad):
    c = chunk("med-velnorex", {0: bad}, default=bad)
    assert visible_cards([c])[0].sentences is None  # falls back to the lexical draft


def test_links_never_reach_a_span():
    c = chunk("med-velnorex", {0: 0.9})
    c.sentences[0] = ScoredSentence(text="See https://evil.example/x for the dose.", similarity=0.95)
    cards = visible_cards([c])
    assert "https://" not in cards[0].sentences[0][0]


async def test_spans_reconcile_and_enrich_on_the_full_path():
    text = sentences(CARDS["med-velnorex"]["text"])
    at = next(i for i, s in enumerate(text) if "40 mg" in s)
    retrieval = RetrievalCompleted(request_id="r1", question="velnorex how much a day",
                                   chunks=[chunk("med-velnorex", {at: 0.82})], hybrid_path=HybridPath.FULL)
    built = await build_answer(retrieval, OfflineGenerator(GATE))
    reply = built.reply
    assert reply.status is AnswerStatus.ANSWERED and not built.dropped
    assert reply.citations[0].span == text[at] and reply.citations[0].retrieved_score == 73.0


async def test_no_close_sentence_is_no_context():
    retrieval = RetrievalCompleted(request_id="r2", question="what does velnorex cost",
                                   chunks=[chunk("med-velnorex", {}, default=0.2)], hybrid_path=HybridPath.RRF_ONLY)
    reply = (await build_answer(retrieval, OfflineGenerator(GATE))).reply
    assert reply.status is AnswerStatus.NO_CONTEXT and reply.citations == []
