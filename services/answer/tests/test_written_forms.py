"""The question read as the cards write it (``attesta_kb.written_forms``): a name spelled letter by
letter is the name, a number in words is its digits, for the gate's features and its reader."""

from __future__ import annotations

import pytest

from attesta_answer.domain.extractive import choose_lead
from attesta_answer.domain.grounding import FEATURES, GateModel, Logistic, ReaderSpec, TermStatistics, features
from attesta_answer.domain.model import Card, visible_cards
from attesta_answer.domain.text import sentences
from attesta_contracts.chat import ChunkScores, ContextChunk, HybridPath, ScoredSentence
from attesta_kb.dataset import load_cards

pytestmark = pytest.mark.unit

STATS = TermStatistics(584, {"dose": 300, "tablet": 120, "40": 60, "mg": 200})


def velnorex(path: HybridPath) -> tuple[list[Card], int]:
    """The Velnorex card as retrieval sends it, its dose sentence the closest to the question."""
    card = next(c for c in load_cards() if c["card_id"] == "med-velnorex")
    texts = sentences(card["text"])
    dose = next(i for i, s in enumerate(texts) if "40 mg" in s)
    scored = [ScoredSentence(text=s, similarity=0.8 if i == dose else 0.1,
                             relevance_logit=2.0 if i == dose else None) for i, s in enumerate(texts)]
    chunk = ContextChunk(id=card["card_id"], card_id=card["card_id"], title=card["title"], text=card["text"],
                         source=card["source"], metadata=card["metadata"],
                         scores=ChunkScores(rerank_logit=2.0, dense=0.5, bm25=3.0), sentences=scored)
    return visible_cards([chunk], path), dose


def test_a_spelled_out_name_counts_as_named_and_a_number_in_words_meets_the_cards_digits():
    cards, dose = velnorex(HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None and lead.index == dose
    spelled = features("V-E-L-N-O-R-E-X, what dose?", cards, lead, STATS)
    assert spelled == features("Velnorex, what dose?", cards, lead, STATS)
    assert spelled["named"] == 1.0
    in_words = features("velnorex forty mg", cards, lead, STATS)
    assert in_words == features("velnorex 40 mg", cards, lead, STATS)
    assert in_words["card_coverage"] == 1.0 and in_words["unknown_share"] == 0.0


class _EchoReader:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def logits(self, question, passages):
        self.asked.append(question)
        return [0.0 for _ in passages]


def test_the_gates_reader_reads_the_question_as_the_cards_write_it():
    model = Logistic(0.0, (0.0,) * len(FEATURES), (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), 0.5)
    groups = {f"{lg}/{pg}": model for lg in ("en", "other") for pg in ("full", "fused")}
    reader = _EchoReader()
    gate = GateModel("test-1", STATS, groups, reader_spec=ReaderSpec("r", "x", 4, 64),
                     reader_models={"en/full": model}).with_reader(reader)
    cards, _ = velnorex(HybridPath.FULL)
    lead = choose_lead(cards)
    assert lead is not None
    gate.decide("V-E-L-N-O-R-E-X: is forty mg right?", cards, lead, "en")
    assert reader.asked == ["Velnorex: is 40 mg right?"]
