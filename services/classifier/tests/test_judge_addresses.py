"""claims-judge-2026.12.15 (issue #28): an e-mail address the facts do not give.

Addresses are taken out of the answer before its claims are read (the heuristic's business).
Before 2026.12.15 an answer that gave the brand a mailbox the facts do not have ("write to
orders@..." when the facts give "info@...") was judged on its other words alone: DESCRIPTIVE, or
ECHO when it said nothing else. Now, when the facts give an address of the brand and the answer
gives another one on the brand's name, that address is an item no fact has: the pair stays
pending (a person decides: a brand may have several mailboxes). When the facts give no address,
nothing changes.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.claims import unknown_addresses
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


BOATS = Brand("marrowind", "ws", "Marrowind Boats", ("Marrowind",), ("marrowind.example",))
BOAT_FACTS = facts_of("marrowind", [
    "Marrowind Boats — headquarters: Falmouth, England",
    "Marrowind Boats builds wooden sailing dinghies.",
    "Write to Marrowind Boats at info@marrowind.example.",
])
NO_ADDRESS_FACTS = BOAT_FACTS[:2]


def test_only_an_address_on_the_brand_that_the_facts_lack() -> None:
    answer = "Write to orders@marrowind.example, info@marrowind.example or help@elsewhere.example."
    assert unknown_addresses(answer, BOATS, BOAT_FACTS) == ["orders@marrowind.example"]
    assert unknown_addresses(answer, BOATS, NO_ADDRESS_FACTS) == []


@pytest.mark.parametrize(("facts", "answer", "expected"), [
    (BOAT_FACTS, "Marrowind Boats builds wooden sailing dinghies; write to orders@marrowind.example.", None),
    (BOAT_FACTS, "Marrowind Boats builds wooden sailing dinghies; write to info@marrowind.example.",
     CitationClass.DESCRIPTIVE),
    (NO_ADDRESS_FACTS, "Marrowind Boats builds wooden sailing dinghies; write to orders@marrowind.example.",
     CitationClass.DESCRIPTIVE),
])
def test_addresses_in_answers(facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(BOATS, facts, answer) is expected
