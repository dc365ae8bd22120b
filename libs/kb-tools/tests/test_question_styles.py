"""The styled question generator (issue #24): questions worded the ways the first generators
never word them, each with the card sentence that answers it, built from the KB's own cards."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from attesta_kb import load_cards
from attesta_kb.text import card_sentences
from attesta_kb_tools.question_styles import descriptor, generate, interactions, name_of, sounds_like

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cards():
    return load_cards()


@pytest.fixture(scope="module")
def questions(cards):
    return generate(cards, 20, 5)


def test_every_style_is_there_answerable_and_not_and_seeded(cards, questions):
    kinds = Counter((q["style"], bool(q["relevant"])) for q in questions)
    styles = {"styled_lay", "styled_category", "styled_note", "styled_verse", "styled_sound", "styled_interaction"}
    assert {s for s, _ in kinds} == styles
    assert all(kinds[(s, True)] == 20 and kinds[(s, False)] == 5 for s in styles)
    assert generate(cards, 20, 5) == questions
    assert len({q["id"] for q in questions}) == len(questions)


def test_an_answerable_question_carries_a_sentence_of_its_card(cards, questions):
    sentences = {c["card_id"]: set(card_sentences(c["text"])) for c in cards}
    for q in questions:
        if q["relevant"]:
            (card_id, gold), = q["gold"].items()
            assert q["relevant"][card_id] == 2 and gold in sentences[card_id]


def test_a_category_question_does_not_name_its_card(cards, questions):
    by_id = {c["card_id"]: c for c in cards}
    for q in questions:
        if q["style"] == "styled_category" and q["relevant"]:
            (card_id,) = q["relevant"]
            assert name_of(by_id[card_id]).casefold() not in q["question"].casefold()


def test_the_class_and_a_detail_come_from_the_card():
    card = {"card_id": "med-x", "title": "t", "metadata": {"kind": "medicine"},
            "text": "Zorvex (zorvimab) is a lumen gate blocker supplied as an oral capsule. "
                    "Zorvex is manufactured by Acme Labs and was first approved in 2019."}
    got = descriptor(card, random.Random(1))
    assert got is not None and got.startswith("the lumen gate blocker ")
    assert got.endswith(("from Acme Labs", "approved in 2019"))


def test_an_interaction_names_both_medicines_and_answers_from_the_sentence(cards):
    found = interactions(cards)
    assert found
    for card, other, sentence in found:
        assert f"({name_of(other)})" in sentence and sentence in card_sentences(card["text"])


def test_a_name_spelled_by_sound_keeps_its_syllables_and_stresses_one():
    said = sounds_like("Quelmex", random.Random(3))
    assert said.replace("-", "").lower().startswith("kw") and "ks" in said.lower()
    assert sum(1 for part in said.split("-") if part.isupper()) == 1


def test_an_unanswerable_question_asks_what_no_card_of_its_medicine_states(cards, questions):
    texts = " ".join(c["text"] for c in cards).casefold()
    for q in questions:
        if not q["relevant"] and q["facet"] == "unstated-interaction":
            names = re.findall(r"[A-Z][a-z]+", q["question"])
            assert names  # two KB medicines no card mentions together
    assert "glass of wine" not in texts
