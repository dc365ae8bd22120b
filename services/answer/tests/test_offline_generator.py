"""The offline extractive generator on the shipped KB: it answers the question asked, leads with
the most direct sentence, cites what it quotes, and says so when nothing relevant was retrieved."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attesta_answer.domain.extractive import MAX_SENTENCES, OfflineGenerator, draft_answer
from attesta_answer.domain.model import NO_CONTEXT_ANSWER, visible_cards
from attesta_answer.service_layer.answering import build_answer
from attesta_contracts.chat import (
    AnswerStatus,
    ChatAnswered,
    ChunkScores,
    ContextChunk,
    HybridPath,
    RetrievalCompleted,
)
from attesta_kb.dataset import load_cards

pytestmark = pytest.mark.unit

CARDS = {c["card_id"]: c for c in load_cards()}


def chunks(*card_ids: str) -> list[ContextChunk]:
    return [ContextChunk(id=cid, card_id=cid, title=CARDS[cid]["title"], text=CARDS[cid]["text"],
                         source=CARDS[cid]["source"], metadata=CARDS[cid]["metadata"],
                         scores=ChunkScores(rerank_logit=3.0 - i)) for i, cid in enumerate(card_ids)]


CONTEXT = ("med-velnorex", "med-velnorax", "product-velnorex")


@pytest.mark.parametrize(("question", "card", "lead_contains"), [
    ("What is the usual adult dose of Velnorex?", "med-velnorex", "recommended adult dose is one 40 mg"),
    ("Which company makes Velnorex?", "med-velnorex", "Lumora"),
    ("What are the side effects of Velnorax?", "med-velnorax", "adverse effects"),
    ("What is Velnorex?", "med-velnorex", "Velnorex is the brand name"),
    ("Can I take Velnorex if I am pregnant?", "med-velnorex", "pregnancy"),
    ("How does Velnorex work?", "med-velnorex", "Mechanism"),
])
def test_leads_with_the_sentence_that_answers(question, card, lead_contains):
    draft = draft_answer(question, visible_cards(chunks(*CONTEXT)))
    assert draft.grounded
    assert lead_contains in draft.citations[0]["span"]
    assert draft.citations[0]["card_id"] == card
    lead = draft.citations[0]["span"]
    assert draft.answer.startswith(lead) or (  # "It is ..." names its subject first
        lead.startswith(("It", "Its", "They", "Their", "This")) and f": {lead[0].lower()}{lead[1:]}" in draft.answer)
    assert 1 <= len(draft.citations) <= MAX_SENTENCES
    for cited in draft.citations:  # every quoted sentence is the card's own text, verbatim
        assert cited["span"] in CARDS[cited["card_id"]]["text"]
        assert cited["span"][1:] in draft.answer


def test_a_lead_that_says_it_names_its_subject():
    draft = draft_answer("Who makes Velnorax?", visible_cards(chunks(*CONTEXT)))
    assert draft.citations[0]["span"].startswith("It is marketed by Kestrel")
    assert draft.answer.startswith("Velnorax: it is marketed by Kestrel")


def test_keeps_look_alike_drugs_apart():
    draft = draft_answer("What is the dose of Velnorax?", visible_cards(chunks(*CONTEXT)))
    assert {c["card_id"] for c in draft.citations} == {"med-velnorax"}


@pytest.mark.parametrize("question", [
    "What is the capital of France?", "Who won the football world cup in 2018?",
    "How do I bake sourdough bread?", "What is the weather tomorrow?", "?", "the of and",
])
def test_nothing_relevant_is_ungrounded(question):
    assert not draft_answer(question, visible_cards(chunks(*CONTEXT))).grounded


async def test_through_answer_building_no_context_says_so_and_cites_nothing():
    r = RetrievalCompleted(request_id="r", question="What is the capital of France?",
                           chunks=chunks(*CONTEXT), hybrid_path=HybridPath.FULL)
    reply = (await build_answer(r, OfflineGenerator())).reply
    assert reply.status == AnswerStatus.NO_CONTEXT
    assert reply.answer == NO_CONTEXT_ANSWER and reply.citations == []
    assert reply.generator.startswith("offline-extractive-v2+gate-")  # the gate's version (#24)


async def test_through_answer_building_answered_with_enriched_citations():
    r = RetrievalCompleted(request_id="r", question="What is the usual adult dose of Velnorex?",
                           chunks=chunks(*CONTEXT), hybrid_path=HybridPath.FULL)
    reply = (await build_answer(r, OfflineGenerator())).reply
    assert reply.status == AnswerStatus.ANSWERED
    first = reply.citations[0].model_dump(mode="json")
    assert first["source_url"] == CARDS["med-velnorex"]["source"]
    assert first["source_license"] == CARDS["med-velnorex"]["metadata"]["license"]
    assert first["retrieved_score"] == 95.0  # logit 3.0


def test_answers_most_dev_questions_from_a_card_that_answers_them():
    """A floor, not a benchmark: with the labelled relevant cards plus distractors as context,
    the lead sentence comes from a card graded 2 for at least 80% of the dev questions."""
    from attesta_kb.dataset import load_queries

    ids = sorted(CARDS)
    queries = load_queries("dev")
    hits = 0
    for n, q in enumerate(queries):
        relevant = [cid for cid, grade in q["relevant"].items() if grade == 2]
        distractors = [ids[(n * 7 + k * 13) % len(ids)] for k in range(3)]
        context = list(dict.fromkeys(distractors[:1] + relevant + distractors[1:]))
        draft = draft_answer(q["question"], visible_cards(chunks(*context)))
        hits += bool(draft.grounded and q["relevant"].get(draft.citations[0]["card_id"]) == 2)
    assert hits / len(queries) >= 0.8, hits / len(queries)


# -- never a crash: arbitrary retrieval results through the whole answer building -----------------
_any_chunk = st.builds(
    ContextChunk, id=st.text(max_size=8), card_id=st.text(max_size=8), title=st.text(max_size=30),
    text=st.one_of(st.text(max_size=300), st.sampled_from([c["text"] for c in list(CARDS.values())[:20]])),
    source=st.one_of(st.none(), st.text(max_size=40), st.integers(), st.just("https://a.example/x")),
    metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), st.text(max_size=8) | st.integers())),
    scores=st.builds(ChunkScores, rerank_logit=st.one_of(st.none(), st.floats())))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=st.text(min_size=1, max_size=120), context=st.lists(_any_chunk, max_size=6),
       path=st.one_of(st.none(), st.sampled_from(list(HybridPath))))
async def test_answer_building_never_raises_and_always_replies_consistently(question, context, path):
    reply = (await build_answer(RetrievalCompleted(request_id="r", question=question, chunks=context,
                                                   hybrid_path=path), OfflineGenerator())).reply
    assert reply.status in (AnswerStatus.ANSWERED, AnswerStatus.NO_CONTEXT)
    assert (reply.status == AnswerStatus.ANSWERED) == bool(reply.citations)
    retrieved = {c.card_id for c in context}
    for citation in reply.citations:
        assert citation.card_id in retrieved
        assert "://" not in citation.span
        if citation.retrieved_score is not None:
            assert path == HybridPath.FULL
    ChatAnswered.model_validate_json(reply.model_dump_json())
