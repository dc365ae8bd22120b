"""claims-judge-2026.12.15 (issue #28): taglines and tables.

- "Brand — a few words." with every word in the facts was DESCRIPTIVE: when the facts carry the
  brand's slogan, the answer only copies it (ECHO), and the words cannot tell a copied slogan
  from a short description. Such a tagline (the slogan's shape: at most six words after the
  brand's name and a colon or a dash, no number) is now a person's call, with or without a model.
- A markdown table's rule line ("|---|---|") broke the run of sentences about the brand, so the
  rows under a header naming it were never read: ECHO. A line made only of rule characters is
  now skipped and the rows go on about the brand.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


LAMPS = Brand("orlune", "ws", "Orlune Lamps", ("Orlune",), ("orlune.example",))
LAMP_FACTS = facts_of("orlune", [
    "Orlune Lamps — headquarters: Porto, Portugal",
    "Orlune Lamps — founded: 2011",
    "Orlune Lamps — slogan: light that lasts",
    "Orlune Lamps — employees: 34",
])

TABLE = "| | Orlune Lamps |\n|---|---|\n| Founded | 2011 |\n| Employees | 34 |"
TABLE_WRONG = "| | Orlune Lamps |\n|---|---|\n| Founded | 1987 |\n| Employees | 34 |"


@pytest.mark.parametrize(("facts", "answer", "expected"), [
    (LAMP_FACTS, "Orlune Lamps — light that lasts.", None),
    (LAMP_FACTS, "Orlune Lamps was founded in 2011 in Porto.", CitationClass.DESCRIPTIVE),
    (LAMP_FACTS, TABLE, CitationClass.DESCRIPTIVE),
    (LAMP_FACTS, TABLE_WRONG, CitationClass.CONFABULATED),
])
def test_taglines_and_tables(facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(LAMPS, facts, answer) is expected
