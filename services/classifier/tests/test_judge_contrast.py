"""claims-judge-2026.12.14 (issue #28): "X rather than Y" says X and denies Y.

"rather than", "instead of", "em vez de", "ao invés de", "en lugar de" (the lexicon's
``negators.contrast``) were no negators, so "packs its tea in tins rather than plastic" read as
affirming the plastic a fact denies ("..., without plastic"): the opposite of the fact, an exact
contradiction (CONFABULATED). Now a contrast opens a negated tail of its own, with or without
a comma (``checks.split_clauses``): the head is compared as an affirmative clause, the tail as a
negated one. A contrast tail can agree with a fact (a fact that says its words and denies one
of them), never contradict one on its own: the words after "rather than Y" may be the claim's
affirmed context ("rather than down *in its sleeping bags*"). In the description check, a word
the claim denies next to what it affirms is supported only by what a fact denies, and an
affirmed word never by it.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import split_clauses
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


JACKETS = Brand("harrowdene", "ws", "Harrowdene Jackets", ("Harrowdene",), ("harrowdene.example",))
JACKET_FACTS = facts_of("harrowdene", [
    "Harrowdene Jackets — headquarters: York, England",
    "Harrowdene fills its jackets with recycled polyester wadding, not feathers.",
])
OIL = Brand("cravelha", "ws", "Cravelha Conservas", ("Cravelha",), ("cravelha.example",))
OIL_FACTS = facts_of("cravelha", [
    "Cravelha Conservas — sede: Peniche, Portugal",
    "A Cravelha usa azeite nas conservas, não óleo de girassol.",
])


@pytest.mark.parametrize(("text", "parts"), [
    ("Harrowdene uses wadding rather than feathers.", ["Harrowdene uses wadding", "rather than feathers."]),
    ("A Cravelha usa azeite em vez de óleo de girassol.", ["A Cravelha usa azeite", "em vez de óleo de girassol."]),
    ("Cravelha usa aceite de oliva, en lugar de aceite de girasol.",
     ["Cravelha usa aceite de oliva", "en lugar de aceite de girasol."]),
])
def test_a_contrast_opens_a_tail(text: str, parts: list[str]) -> None:
    assert split_clauses(text) == parts


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    # says what the fact says (before: "the opposite of the fact")
    (OIL, OIL_FACTS, "A Cravelha usa azeite em vez de óleo de girassol nas conservas.", CitationClass.DESCRIPTIVE),
    (JACKETS, JACKET_FACTS, "Harrowdene fills its jackets with recycled polyester wadding instead of feathers.",
     CitationClass.DESCRIPTIVE),
    # the other way round: never DESCRIPTIVE
    (OIL, OIL_FACTS, "A Cravelha usa óleo de girassol em vez de azeite nas conservas.", CitationClass.CONFABULATED),
    (JACKETS, JACKET_FACTS, "Harrowdene fills its jackets with feathers rather than recycled polyester wadding.", None),
])
def test_contrasts_in_answers(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected


def test_a_contrast_tail_does_not_block_or_back_a_models_verdict() -> None:
    # judging.opposite_polarity: "rather than feathers in its jackets" is no opposite of "makes
    # jackets" (its last words are the claim's affirmed context)
    from attesta_classifier.domain.checks import assess
    from attesta_classifier.domain.claims import brand_claims

    facts = [*JACKET_FACTS, *facts_of("harrowdene-b", ["Harrowdene makes rain jackets for hikers."])]
    index = judging.fact_index(JACKETS, facts)
    [claim] = brand_claims("Harrowdene uses recycled wadding rather than feathers in its rain jackets.", JACKETS, facts)
    assert not judging.opposite_polarity(assess(claim, index), facts, index.names | index.products)
