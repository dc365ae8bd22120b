"""claims-judge-2026.12.14 (issue #28): a decade, or a part of one, is a span of years.

Before 2026.12.14 "founded in the late 1990s" was read as the year 1990 (so a brand founded in
1998 was "contradicted": CONFABULATED by an exact check), "fim dos anos 90" and "a finales de
los 90" as the count 90, and "na década de 1950" as 1950. Now a decade is its ten years and
"early" / "mid" / "late" (início / meados / fim, principios / mediados / finales: the lexicon's
``decade_parts``) narrow it to overlapping thirds: a fact's year inside them supports the
claim, one outside the whole decade contradicts it, one inside the decade but outside the part
leaves it undecided.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain.checks import CONTRADICTED, SUPPORTED, UNKNOWN, year_relation
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


BINDERY = Brand("lumarel", "ws", "Lumarel Encadernação", ("Lumarel",), ("lumarel.example",))
BINDERY_FACTS = facts_of("lumarel", [
    "Lumarel Encadernação — data de fundação: 1998",
    "Lumarel Encadernação — sede: Coimbra, Portugal",
    "A Lumarel encaderna livros à mão.",
])
KITES = Brand("dunmerrow", "ws", "Dunmerrow Kites", ("Dunmerrow",), ("dunmerrow.example",))
KITE_FACTS = facts_of("dunmerrow", [
    "Dunmerrow Kites — founded: 1984",
    "Dunmerrow Kites — headquarters: Aberdeen, Scotland",
])


@pytest.mark.parametrize(("text", "span", "decade"), [
    ("founded in the late 1990s", (1996, 1999), (1990, 1999)),
    ("since the mid-1980s", (1983, 1987), (1980, 1989)),
    ("in the early 2010s", (2010, 2014), (2010, 2019)),
    ("back in the '70s", (1970, 1979), (1970, 1979)),
    ("fundada no fim dos anos 90", (1996, 1999), (1990, 1999)),
    ("em meados dos anos 80", (1983, 1987), (1980, 1989)),
    ("na década de 1950", (1950, 1959), (1950, 1959)),
    ("nos anos 2000", (2000, 2009), (2000, 2009)),
    ("a finales de los 90", (1996, 1999), (1990, 1999)),
    ("a principios de los años 50", (1950, 1954), (1950, 1959)),
])
def test_a_decade_is_a_span_of_years(text: str, span: tuple[int, int], decade: tuple[int, int]) -> None:
    [q] = ev.quantities(ev.numbers_to_digits(text, "pt"), "pt")
    assert q.unit == "calendar" and (q.value, q.until) == span and q.outer == decade


def test_numbers_that_are_no_decade_stay_what_they_were() -> None:
    found = ev.quantities(ev.numbers_to_digits("tem 90 lojas e foi fundada em 1998", "pt"), "pt")
    assert [(q.value, q.unit, q.until) for q in found] == [(90.0, "count", None), (1998.0, "calendar", None)]


def test_year_relation_reads_spans_both_ways() -> None:
    late_90s = ev.decades("the late 1990s")[0]
    year = ev.Quantity
    assert year_relation(late_90s, year(1998.0, "calendar", 0, 4, "1998")) == SUPPORTED
    assert year_relation(late_90s, year(1994.0, "calendar", 0, 4, "1994")) == UNKNOWN  # the decade, not its end
    assert year_relation(late_90s, year(2003.0, "calendar", 0, 4, "2003")) == CONTRADICTED
    assert year_relation(late_90s, year(1988.0, "calendar", 0, 4, "1988")) == CONTRADICTED
    # an exact year against a fact that gives only a decade: undecided, not "another year"
    assert year_relation(year(1995.0, "calendar", 0, 4, "1995"), ev.decades("in the 1990s")[0]) == UNKNOWN
    assert year_relation(year(1998.0, "calendar", 0, 4, "1998"), year(1997.0, "calendar", 0, 4, "1997")) \
        == CONTRADICTED


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (BINDERY, BINDERY_FACTS, "Lumarel Encadernação was founded in the late 1990s in Coimbra.", CitationClass.DESCRIPTIVE),
    (BINDERY, BINDERY_FACTS, "A Lumarel Encadernação foi fundada no fim dos anos 90 em Coimbra.",
     CitationClass.DESCRIPTIVE),
    (BINDERY, BINDERY_FACTS, "Fundada na década de 1990, a Lumarel encaderna livros à mão.", CitationClass.DESCRIPTIVE),
    (KITES, KITE_FACTS, "Dunmerrow Kites was founded in the mid-1980s in Aberdeen.", CitationClass.DESCRIPTIVE),
    # outside the decade: false
    (BINDERY, BINDERY_FACTS, "A Lumarel Encadernação foi fundada nos anos 70 em Coimbra.", CitationClass.CONFABULATED),
    (KITES, KITE_FACTS, "Dunmerrow Kites, based in Aberdeen, was founded in the early 2000s.",
     CitationClass.CONFABULATED),
    # the right decade, another part of it: nothing exact decides it (a person or the model does)
    (BINDERY, BINDERY_FACTS, "Lumarel Encadernação was founded in the early 1990s in Coimbra.", None),
    # exact years: as before
    (BINDERY, BINDERY_FACTS, "A Lumarel Encadernação foi fundada em 1998 em Coimbra.", CitationClass.DESCRIPTIVE),
    (BINDERY, BINDERY_FACTS, "A Lumarel Encadernação foi fundada em 1997 em Coimbra.", CitationClass.CONFABULATED),
])
def test_decades_in_answers(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected
