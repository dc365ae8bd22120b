"""claims-judge-2026.12.14 (issue #28): a temperature is a quantity.

Before 2026.12.14 "-5 °C" was not read at all (a number after a minus sign never was), "23 °F"
and "210 graus" were counts about nothing, so a correct conversion stayed pending and a false
temperature next to a true weight was DESCRIPTIVE. Now °C / °F (and "graus" / "grados", which
are Celsius in Portuguese and Spanish; bare English "degrees" is no unit) are pint's offset
units: signed, converted, compared with the facts' temperatures about the same subject (a
temperature is about temperature, whatever the words around it), with the tolerances of any
quantity measured on both sides of zero.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


BAGS = Brand("skelbrook", "ws", "Skelbrook Gear", ("Skelbrook",), ("skelbrook.example",))
BAG_FACTS = facts_of("skelbrook", [
    "Skelbrook Gear — headquarters: Leeds, England",
    "Skelbrook Drift — comfort rating: -5 °C",
    "Skelbrook Drift — weight: 1.1 kg",
])
BAKERY = Brand("farnela", "ws", "Farnela Pães", ("Farnela",), ("farnela.example",))
BAKERY_FACTS = facts_of("farnela", [
    "Farnela Pães — sede: Aveiro, Portugal",
    "A Farnela assa os pães a 230 ºC em fornos a lenha.",
])


@pytest.mark.parametrize(("text", "value", "unit"), [
    ("rated to -5 °C", -5.0, "degree_Celsius"),
    ("rated to −5 °C", -5.0, "degree_Celsius"),
    ("down to 23 °F", 23.0, "degree_Fahrenheit"),
    ("assa a 230 ºC", 230.0, "degree_Celsius"),
    ("a 230 graus", 230.0, "degree_Celsius"),
    ("-5 graus Celsius", -5.0, "degree_Celsius"),
])
def test_temperatures_are_read_signed_with_their_unit(text: str, value: float, unit: str) -> None:
    [q] = ev.quantities(ev.numbers_to_digits(text, "pt"), "pt")
    assert (q.value, q.unit) == (value, unit)


def test_a_minus_sign_before_anything_else_is_still_not_read() -> None:
    # only a temperature takes a sign here; "-5 kg", "2019-2021" read as before (not at all)
    assert ev.quantities("-5 kg", "en") == []
    assert [q.value for q in ev.quantities("15 to 20 kg", "en")] == [15.0, 20.0]


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (BAGS, BAG_FACTS, "The Skelbrook Drift has a comfort rating of -5 °C and weighs 1.1 kg.", CitationClass.DESCRIPTIVE),
    (BAGS, BAG_FACTS, "The Skelbrook Drift is rated for comfort down to 23 °F.", CitationClass.DESCRIPTIVE),
    (BAGS, BAG_FACTS, "The Skelbrook Drift weighs 1.1 kg and is rated to -20 °C.", CitationClass.CONFABULATED),
    (BAKERY, BAKERY_FACTS, "A Farnela assa os pães a 230 graus em fornos a lenha.", CitationClass.DESCRIPTIVE),
    (BAKERY, BAKERY_FACTS, "A Farnela assa os pães a cerca de 450 °F.", CitationClass.DESCRIPTIVE),
    (BAKERY, BAKERY_FACTS, "A Farnela, de Aveiro, assa os pães a 150 °C.", CitationClass.CONFABULATED),
])
def test_temperatures_in_answers(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected
