"""claims-judge-2026.12.15 (issue #28): a century, or a part of one, is a span of years.

Before 2026.12.15 "founded in the 19th century" was the count 19 and "desde o século XIX" no
number at all: a correct founding century stayed pending, a wrong one could not be contradicted.
Now a century (English "19th century", Portuguese "século XIX", Spanish "siglo XIX", Roman or
Arabic numerals) is its hundred years, and the decades' part words ("early", "meados",
"finales") narrow it to overlapping thirds (0-49, 30-79, 60-99), as ``decades`` does for ten
years: a fact's year inside supports the claim, one outside the whole century (the year closing
it included) contradicts it, one between leaves it undecided.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain import checks
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


MILL = Brand("torvane", "ws", "Torvane Mills", ("Torvane",), ("torvane.example",))
MILL_FACTS = facts_of("torvane", [
    "Torvane Mills — headquarters: Halifax, England",
    "Torvane Mills — founded: 1872",
    "Torvane Mills weaves woollen blankets.",
])
POTTERY = Brand("lousera", "ws", "Louseira Cerâmica", ("Louseira",), ("louseira.example",))
POTTERY_FACTS = facts_of("lousera", [
    "Louseira Cerâmica — sede: Coimbra, Portugal",
    "A Louseira foi fundada em 1921.",
])


@pytest.mark.parametrize(("text", "lang", "first", "last"), [
    ("founded in the 19th century", "en", 1800.0, 1899.0),
    ("founded in the late 19th century", "en", 1860.0, 1899.0),
    ("fundada no início do século XX", "pt", 1900.0, 1949.0),
    ("fundada a mediados del siglo XIX", "pt", 1830.0, 1879.0),
    ("desde o século 18", "pt", 1700.0, 1799.0),
])
def test_centuries_are_spans_of_years(text: str, lang: str, first: float, last: float) -> None:
    [(q, _)] = checks.numbers(text, lang, frozenset()).years
    assert (q.value, q.until) == (first, last)


def test_a_number_outside_a_century_is_still_read() -> None:
    n = checks.numbers("In the 20th century it opened 12 shops.", "en", frozenset())
    assert [q.value for q, _ in n.years] == [1900.0]
    assert [s.quantity.value for s, _ in n.quantities] == [12.0]


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (MILL, MILL_FACTS, "Torvane Mills was founded in the late 19th century.", CitationClass.DESCRIPTIVE),
    (MILL, MILL_FACTS, "Torvane Mills was founded in the 18th century.", CitationClass.CONFABULATED),
    (MILL, MILL_FACTS, "Torvane Mills was founded in the early 19th century.", None),
    (POTTERY, POTTERY_FACTS, "A Louseira foi fundada no início do século XX.", CitationClass.DESCRIPTIVE),
    (POTTERY, POTTERY_FACTS, "A Louseira foi fundada no século XIX.", CitationClass.CONFABULATED),
])
def test_centuries_in_answers(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected
