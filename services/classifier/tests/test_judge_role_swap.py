"""claims-judge-2026.12.15 (issue #28): a person of the facts in another person's role.

Before 2026.12.15 a name the facts give in one role, claimed in a role the facts give to
someone else ("the CEO is <their CTO>"), was only "the facts give another role": undecided,
while an unknown name in that role was already contradicted. Now both are contradicted: the
facts name who holds the role. A person in a role the facts do not give anyone stays undecided.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


TOOLS = Brand("kelvray", "ws", "Kelvray Tools", ("Kelvray",), ("kelvray.example",))
TOOL_FACTS = facts_of("kelvray", [
    "Kelvray Tools — founded: 2015",
    "Kelvray Tools — CEO: Annika Thorsby",
    "Kelvray Tools — co-founder and CTO: Pieter Maas",
])


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (TOOLS, TOOL_FACTS, "I believe the CEO of Kelvray Tools is Pieter Maas.", CitationClass.CONFABULATED),
    (TOOLS, TOOL_FACTS, "Acho que a CEO da Kelvray Tools é a Annika Thorsby.", CitationClass.DESCRIPTIVE),
    (TOOLS, TOOL_FACTS, "Kelvray Tools is run by CEO Annika Thorsby.", CitationClass.DESCRIPTIVE),
    # the facts' CTO, also its co-founder: no fact says who founded it, so since 2026.12.16 the
    # second role is undecided (a person's call), like an unknown name in that role
    (TOOLS, TOOL_FACTS, "Kelvray Tools was co-founded by Pieter Maas, its CTO.", None),
    # each name next to its own role: the CTO's role word near the next name gives that name no role
    (TOOLS, TOOL_FACTS, "Pieter Maas is the CTO of Kelvray Tools; Annika Thorsby is its CEO.", CitationClass.DESCRIPTIVE),
])
def test_role_swaps(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected
