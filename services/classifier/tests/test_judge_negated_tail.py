"""claims-judge-2026.12.13 (issue #28): a negated tail is a clause of its own in the negation check.

A fact such as "A X faz pães de fermentação natural, sem conservantes" affirms the bread and
denies only the preservatives. Before 2026.12.13 the negation check read the whole clause as
negated, so the correct "A X faz pães de fermentação natural." was "the opposite of the fact"
(an exact contradiction: CONFABULATED without any model), and the false "A X não faz pães de
fermentação natural." agreed with it (DESCRIPTIVE). Now the tail ("..., sem X", "..., without
X") denies only what it names: a claim that says nothing of the tail's words is compared with
the rest of the clause (its head, affirmative); one that names them, with the whole clause and
the tail, as before ("com conservantes" is still the opposite of the fact). The claim's own
clauses are cut the same way (``split_clauses``).

The brands and facts are invented for these tests (a bakery, a rope maker); none comes from an
evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import CONTRADICTED, SUPPORTED, UNKNOWN, assess
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


BAKERY = Brand("torvelim", "ws", "Padaria Torvelim", ("Torvelim",), ("torvelim.example",))
BAKERY_FACTS = facts_of("torvelim", [
    "A Torvelim faz pães de fermentação natural, sem conservantes.",
    "Padaria Torvelim — sede: Évora, Portugal",
])
ROPES = Brand("quarnwick", "ws", "Quarnwick Ropes", ("Quarnwick",), ("quarnwick.example",))
ROPE_FACTS = facts_of("quarnwick", [
    "Quarnwick braids its climbing ropes from recycled nylon, without dyes.",
    "Quarnwick Ropes — headquarters: Kendal, England",
])


def negation_results(brand: Brand, facts: list[Fact], text: str) -> list[str]:
    [claim] = brand_claims(text, brand, facts)
    return [r.status for r in assess(claim, judging.fact_index(brand, facts)).results if r.check == "negation"]


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    # what the fact affirms, without its tail: correct, not "the opposite of the fact"
    (BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural.", CitationClass.DESCRIPTIVE),
    (BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural e sem conservantes.",
     CitationClass.DESCRIPTIVE),
    (ROPES, ROPE_FACTS, "Quarnwick Ropes braids climbing ropes from recycled nylon.", CitationClass.DESCRIPTIVE),
    # the affirmed part denied: the opposite of the fact (before: "agrees with the fact")
    (BAKERY, BAKERY_FACTS, "A Padaria Torvelim não faz pães de fermentação natural.", CitationClass.CONFABULATED),
    (ROPES, ROPE_FACTS, "Quarnwick Ropes does not braid climbing ropes from recycled nylon.",
     CitationClass.CONFABULATED),
    # the whole fact, tail included: as before
    (BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural, sem conservantes.",
     CitationClass.DESCRIPTIVE),
    # affirming what the tail denies: the opposite of the whole clause, as before
    (BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural, com conservantes.",
     CitationClass.CONFABULATED),
    (ROPES, ROPE_FACTS, "Quarnwick braids its climbing ropes from recycled nylon with dyes.", CitationClass.CONFABULATED),
])
def test_a_negated_tail_has_its_own_polarity(brand: Brand, facts: list[Fact], answer: str,
                                             expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected


def test_the_negation_check_reads_each_part_of_the_claim() -> None:
    # the affirmative part agrees with the fact's affirmative part; the tail alone is one word
    assert negation_results(BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural, "
                                                  "sem conservantes.") in ([], [SUPPORTED])
    assert negation_results(BAKERY, BAKERY_FACTS, "A Padaria Torvelim não faz pães de fermentação natural.") \
        == [CONTRADICTED]
    # nothing negated on either side: the description check's business, not the negation check's
    assert negation_results(BAKERY, BAKERY_FACTS, "A Padaria Torvelim faz pães de fermentação natural.") == []
    assert UNKNOWN not in negation_results(ROPES, ROPE_FACTS, "Quarnwick braids climbing ropes from recycled nylon.")


def test_the_version_says_the_verdicts_changed() -> None:
    assert judging.PIPELINE_VERSION == "claims-judge-2026.12.18"
    assert judging.OFFLINE_RULES_VERSION == "claims-judge-2026.12.18+judge-words-2026.12.16"
