"""claims-judge-2026.12.14 (issue #28): Spanish "no" negates, "sin" opens a negated tail.

The judge reads Spanish answers with the Portuguese lists, where "no" is "in the" (em + o) and
never a negator. So a correct Spanish "X no vende café en cápsulas" against "A X não vende café
em cápsulas" was read as affirmative: "the opposite of the fact", an exact contradiction
(CONFABULATED), and a false "X no embala el café en papel" agreed with "A X embala o café em
papel" (DESCRIPTIVE). Now "no" negates in a sentence that reads as Spanish
(``evidence.is_spanish``: more of its words, the brand's names left out, are in simplemma's
Spanish dictionary and not its Portuguese one than the other way round), and ", sin X" is a
negated tail like ", sem X". A Portuguese "no" still negates nothing. A sentence that reads as
either language is checked both ways, and decided only when both readings agree.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import negated, split_clauses
from attesta_classifier.domain.model import Brand
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


TEA = Brand("quintaral", "ws", "Quintaral Chás", ("Quintaral",), ("quintaral.example",))
TEA_FACTS = facts_of("quintaral", [
    "Quintaral Chás — sede: Recife, Pernambuco, Brasil",
    "A Quintaral não vende chá em cápsulas.",
    "A Quintaral embala o chá em latas de metal, sem plástico.",
])


def offline(answer: str) -> CitationClass | None:
    return judged_offline(TEA, TEA_FACTS, answer, f"Háblame de {TEA.name}")


@pytest.mark.parametrize(("text", "spanish"), [
    ("Quintaral no vende té en cápsulas.", True),
    ("La empresa no usa conservantes en sus productos.", True),
    ("A empresa vende chá no Brasil.", False),
    ("Quintaral no vende chá en cápsulas.", None),
    ("O chá é vendido no mercado de Recife.", False),
])
def test_which_sentences_read_as_spanish(text: str, spanish: bool | None) -> None:
    assert ev.is_spanish(text, frozenset({"quintaral"})) is spanish


def test_spanish_no_negates_only_in_spanish() -> None:
    assert negated("no vende té en cápsulas", "pt", spanish=True)
    assert not negated("vende chá no Brasil", "pt", spanish=False)
    assert negated("não vende chá", "pt")


def test_sin_opens_a_negated_tail() -> None:
    assert split_clauses("Quintaral embala el té en latas de metal, sin plástico.") == [
        "Quintaral embala el té en latas de metal", "sin plástico."]


@pytest.mark.parametrize(("answer", "expected"), [
    # agrees with a negated fact (before: "the opposite of the fact")
    ("Quintaral no vende té en cápsulas.", CitationClass.DESCRIPTIVE),
    # as much Portuguese as Spanish ("chá", "en"): its "no" may be either, so no exact verdict
    ("Quintaral no vende chá en cápsulas.", None),
    # denies what a fact affirms (before: agreed with it)
    ("Quintaral no embala el chá en latas de metal.", CitationClass.CONFABULATED),
    # a Portuguese "no" is still "in the"
    ("A Quintaral, com sede no Recife, embala o chá em latas de metal.", CitationClass.DESCRIPTIVE),
    # ", sin X" against ", sem X": the head affirmative, the tail agreeing
    ("Quintaral embala el chá en latas de metal, sin plástico.", CitationClass.DESCRIPTIVE),
])
def test_spanish_negations_in_answers(answer: str, expected: CitationClass | None) -> None:
    assert offline(answer) is expected


def test_the_models_backing_reads_spanish_no_too() -> None:
    # A model's verdict is backed or blocked by a fact that says the opposite of the claim
    # (judging.opposite_polarity): a Spanish "no" is a negation there as well.
    from attesta_classifier.domain.checks import assess
    from attesta_classifier.domain.claims import brand_claims

    index = judging.fact_index(TEA, TEA_FACTS)
    drop = index.names | index.products
    [claim] = brand_claims("Quintaral no embala el té en latas de metal.", TEA, TEA_FACTS)
    assert judging.opposite_polarity(assess(claim, index), TEA_FACTS, drop)
    [claim] = brand_claims("Quintaral embala el té en latas de metal.", TEA, TEA_FACTS)
    assert not judging.opposite_polarity(assess(claim, index), TEA_FACTS, drop)
