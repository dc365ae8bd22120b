"""Spelling correction against the KB's vocabulary (the sparse side survives typos) and the
restyled training questions (pure)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from attesta_retrieval.domain.question_styles import (
    keywords, look_alikes, misspell, rambling, reverse_lookups, with_typos)
from attesta_retrieval.domain.spelling import corrections, max_edits, vocabulary

pytestmark = pytest.mark.unit

VOCAB = vocabulary(["Zennequil is manufactured by Pellworth Laboratories.",
                    "Velnorex is a tablet; Velnorax is an injection.",
                    "Contraindications include pregnancy.", "The skin may itch."])


def test_a_misspelled_name_gets_the_kb_word_added():
    assert corrections("who makes zenequil", VOCAB) == ["zennequil"]
    assert corrections("velnoreks contraindicatons", VOCAB) == ["velnorex", "contraindications"]


def test_a_correct_question_and_short_words_are_left_alone():
    assert corrections("Zennequil contraindications pregnancy", VOCAB) == []
    assert corrections("skip the pill", VOCAB) == []  # "skip" is one edit from "skin": too short
    assert max_edits("abcd") == 0 and max_edits("abcdefg") == 1 and max_edits("abcdefgh") == 2


def test_an_unknown_word_far_from_every_kb_word_adds_nothing():
    assert corrections("ibuprofen paracetamol", VOCAB) == []


def test_the_sparse_index_keeps_the_card_of_a_misspelled_name(kb_slice):
    from attesta_retrieval.adapters.sparse import SparseIndex

    index = SparseIndex(None)
    index.rebuild([(c["card_id"], f"{c['title']}\n{c['text']}") for c in kb_slice])
    exact = index.search("velnorex usual dose", 5)
    assert "med-velnorex" in [cid for cid, _ in exact]
    # The slip is corrected to the KB's word: the same ranking as the right spelling (an
    # unknown word alone matches nothing in BM25).
    assert index.search("velnoreks usual dose", 5) == exact


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=5, max_size=14), st.integers(0, 999))
def test_misspell_makes_one_edit(word, seed):
    from rapidfuzz.distance import OSA

    slipped = misspell(word, random.Random(seed))
    assert slipped == misspell(word, random.Random(seed))
    assert OSA.distance(word, slipped) <= 1


def test_restyled_questions():
    rng = random.Random(5)
    typo = with_typos("What is the usual dose of Velnorex?", ["Velnorex"], rng)
    assert typo is not None and "velnorex" not in typo.lower() and typo.startswith("What is")
    assert with_typos("What is the dose?", ["Velnorex"], rng) is None
    long = rambling("How does velnorexant work?", rng)
    assert "How does velnorexant work?" in long and len(long.split()) >= 25
    short = keywords("What is the usual adult dose of Velnorex tablets?", frozenset({"what", "is", "the", "of"}), rng)
    assert 2 <= len(short.split()) <= 3 and "velnorex" in short


def test_reverse_lookups_name_one_card_each_and_look_alikes_pair_up():
    from attesta_kb import load_cards

    cards = load_cards()
    lookups = reverse_lookups(cards)
    assert len(lookups) > 300
    questions = [q for q, _ in lookups]
    assert len(questions) == len(set(questions))
    by_id = {c["card_id"]: c for c in cards}
    q, cid = next((q, c) for q, c in lookups if "points to which disorder" in q)
    level = q.split(" above ")[1].split(" on two")[0]
    assert level in by_id[cid]["text"]
    assert sum(level in c["text"] and q.split("A ")[1].split(" above")[0] in c["text"] for c in cards) == 1
    twins = look_alikes(cards)
    assert twins["med-velnorex"] == "med-velnorax" and twins["med-tamozal"] == "med-tamozol"
