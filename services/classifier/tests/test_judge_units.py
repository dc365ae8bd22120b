"""claims-judge-2026.12.15 (issue #28): area, metric tonnes, gallons and Spanish unit names.

Before 2026.12.15 "3,000 acres", "210 hectares", "200 m²", "96 toneladas", "10 galões", "75 cl",
"300 g/m²" and "12 kWp" were counts about nothing: a correct conversion (acres stated for
hectares, square feet for square metres) stayed pending, and a false area next to a true fact
could not be compared. Now they
are pint units (``judge_words.json`` ``units``), converted and compared like any other quantity;
every word of a unit of several words ("square metres", "metros quadrados") is accounted for, so
it is no description word left for the facts to say. An area, like a weight, is contradicted
only by a fact about the same concept (``check_quantities``): with none, a wrong one stays
undecided offline. English "tons" stays no unit (short or metric tons: the reader cannot tell).

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


FARM = Brand("quelmor", "ws", "Quelmor Azeites", ("Quelmor",), ("quelmor.example",))
FARM_FACTS = facts_of("quelmor", [
    "Quelmor Azeites — sede: Évora, Portugal",
    "A Quelmor cultiva oliveiras em 120 hectares de olival.",
    "A Quelmor produz 40 toneladas de azeite por ano.",
])
STUDIO = Brand("brantwick", "ws", "Brantwick Print", ("Brantwick",), ("brantwick.example",))
STUDIO_FACTS = facts_of("brantwick", [
    "Brantwick Print — headquarters: Bristol, England",
    "Brantwick Print runs a print workshop of 300 square metres.",
    "Brantwick Print mixes its inks in 5-gallon drums.",
])


@pytest.mark.parametrize(("text", "lang", "value", "unit"), [
    ("covers 3,000 acres", "en", 3000.0, "acre"),
    ("cultiva 120 hectares", "pt", 120.0, "hectare"),
    ("uma loja de 200 m²", "pt", 200.0, "meter**2"),
    ("a workshop of 300 square metres", "en", 300.0, "meter**2"),
    ("about 3,200 square feet", "en", 3200.0, "foot**2"),
    ("produz 40 toneladas", "pt", 40.0, "metric_ton"),
    ("drums of 5 gallons", "en", 5.0, "gallon"),
    ("tambores de 10 galões", "pt", 10.0, "gallon"),
    ("recorre 12 kilómetros", "pt", 12.0, "kilometer"),
    ("a 75 cl bottle", "en", 75.0, "centiliter"),
    ("papel de 300 g/m²", "pt", 300.0, "gram/meter**2"),
    ("printed on 300gsm card", "en", 300.0, "gram/meter**2"),
    ("a 12 kWp array", "en", 12.0, "kilowatt"),
    ("um silo de 40 m³", "pt", 40.0, "meter**3"),
])
def test_units_are_read(text: str, lang: str, value: float, unit: str) -> None:
    [q] = ev.quantities(ev.numbers_to_digits(text, lang), lang)
    assert (q.value, q.unit) == (value, unit)


def test_english_tons_stay_no_unit() -> None:
    [q] = ev.quantities("ships 40 tons a year", "en")
    assert q.unit == "count"


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (FARM, FARM_FACTS, "A Quelmor cultiva oliveiras em cerca de 300 acres de olival.", CitationClass.DESCRIPTIVE),
    (FARM, FARM_FACTS, "A Quelmor tem um olival de 120 hectares.", CitationClass.DESCRIPTIVE),
    # an area no fact gives is not contradicted offline: nothing says it is about the same thing
    (FARM, FARM_FACTS, "A Quelmor cultiva oliveiras em 900 hectares de olival.", None),
    (FARM, FARM_FACTS, "A Quelmor produz 40 toneladas de azeite por ano.", CitationClass.DESCRIPTIVE),
    (STUDIO, STUDIO_FACTS, "Brantwick Print runs a print workshop of about 3,200 square feet.", CitationClass.DESCRIPTIVE),
    (STUDIO, STUDIO_FACTS, "Brantwick Print runs a print workshop of 900 square metres.", None),
])
def test_units_in_answers(brand: Brand, facts: list[Fact], answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected
