"""The styled question generator (issue #24): questions worded the ways the first generators
never word them, each with the card sentence that answers it, built from the KB's own cards."""

from __future__ import annotations

import random
import re
from collections import Counter
from difflib import SequenceMatcher

import pytest

from attesta_kb import load_cards
from attesta_kb.text import card_sentences
from attesta_kb_tools.question_styles import (
    SHORTHAND,
    class_initials,
    descriptor,
    generate,
    interactions,
    invented_name,
    name_of,
    sounds_like,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cards():
    return load_cards()


@pytest.fixture(scope="module")
def questions(cards):
    return generate(cards, 20, 6)


STYLES = {"styled_lay", "styled_category", "styled_note", "styled_verse", "styled_sound", "styled_abbrev",
          "styled_interaction"}


def test_every_style_is_there_answerable_and_not_and_seeded(cards, questions):
    kinds = Counter((q["style"], bool(q["relevant"])) for q in questions)
    assert {s for s, _ in kinds} == STYLES
    assert all(kinds[(s, True)] == 20 for s in STYLES)
    # 6 unstated facts per style; per naming style (all but category) 2 more about an invented
    # medicine (a third of 6); interaction: 6 never together + 2 with an invented one
    assert kinds[("styled_category", False)] == 6
    assert all(kinds[(s, False)] == 8 for s in STYLES - {"styled_category"})
    assert generate(cards, 20, 6) == questions
    assert len({q["id"] for q in questions}) == len(questions)


def test_the_invented_medicine_count_can_be_set_apart(cards):
    none = generate(cards, 2, 3, unknown_per_style=0)
    assert not [q for q in none if q["facet"].startswith("unknown-")]
    four = generate(cards, 2, 3, unknown_per_style=4)
    assert Counter(q["facet"].startswith("unknown-") for q in four)[True] == 4 * 6  # five naming styles + together


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


def test_an_invented_name_is_in_no_card_and_resembles_no_name_of_the_kb(cards):
    r = random.Random(5)
    text = " ".join(c["text"] for c in cards).casefold()
    names = {name_of(c).casefold() for c in cards}
    for _ in range(30):
        made = invented_name(cards, r)
        assert made.casefold() not in text
        # a one-letter slip of a real name would be answerable: never near one
        assert all(SequenceMatcher(None, made.casefold(), n).ratio() < 0.6 for n in names)


def test_a_question_about_an_invented_medicine_names_no_kb_medicine(cards, questions):
    kb_names = {name_of(c).casefold() for c in cards if c["metadata"]["kind"] == "medicine"}
    asked = [q for q in questions if q["facet"].startswith("unknown-") and q["style"] != "styled_interaction"]
    assert asked
    for q in asked:
        low = q["question"].casefold()
        assert not any(re.search(rf"\b{re.escape(n)}\b", low) for n in kb_names), q["question"]


def test_an_abbreviated_question_names_its_card_in_a_short_form_of_its_fact(cards, questions):
    by_id = {c["card_id"]: c for c in cards}
    shorts = {q for v in SHORTHAND.values() for q in v}
    for q in questions:
        if q["style"] == "styled_abbrev" and q["relevant"]:
            (card_id,) = q["gold"]
            name = name_of(by_id[card_id])
            assert name.casefold() in q["question"].casefold()
            assert any(re.fullmatch(re.escape(s).replace(r"\{n\}", ".+"), q["question"]) for s in shorts)


def test_class_initials_are_read_from_the_first_sentence():
    card = {"card_id": "med-x", "title": "t", "metadata": {"kind": "medicine"},
            "text": "Zorvex (zorvimab) is a lumen gate blocker supplied as an oral capsule."}
    assert class_initials(card) == "LGB"
    assert class_initials({**card, "metadata": {"kind": "medicine", "invented": True}}) is None
