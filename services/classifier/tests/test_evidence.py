"""The offline judge's evidence helpers: numbers in words (en/pt), units and conversions, places
under other names, language, and the common-word brand-name rule of the heuristic."""

from __future__ import annotations

import pytest

from attesta_classifier.domain import checks
from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain.heuristic import decide
from attesta_classifier.domain.model import Brand, Run
from attesta_contracts.classification import CitationClass

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "lang", "value", "unit"), [
    ("custa sete mil, quatrocentos e noventa reais", "pt", 7490, "cur:BRL"),
    ("emprega mil duzentos e quarenta pessoas", "pt", 1240, "count"),
    ("tem cerca de 4 mil funcionários", "pt", 4000, "count"),
    ("custa cinquenta e quatro reais e noventa centavos", "pt", 54.9, "cur:BRL"),
    ("preço: R$ 7.490", "pt", 7490, "cur:BRL"),
    ("price: €6,900", "en", 6900, "cur:EUR"),
    ("lasts thirty-eight hours", "en", 38, "hour"),
    ("garantia de dois anos", "pt", 2, "year"),
    ("a 5-inch woofer", "en", 5, "inch"),
    ("tem 2,3 mil funcionários", "pt", 2300, "count"),
    ("~2.3k employees", "en", 2300, "count"),
    ("1,5 mi de clientes", "pt", 1_500_000, "count"),
    ("um aporte de oitenta milhões de reais", "pt", 80_000_000, "cur:BRL"),
    ("weighs about 24 pounds", "en", 24, "pound"),
    ("goes for $2,450 CAD", "en", 2450, "cur:CAD"),
    ("priced at CA$2,450", "en", 2450, "cur:CAD"),
    ("around since '09", "en", 2009, "calendar"),
    ("founded in 2012 in Halifax", "en", 2012, "calendar"),
    ("Em 2021 recebemos um aporte", "pt", 2021, "calendar"),
    ("puts out 6 kW", "en", 6, "kilowatt"),
    ("roughly 12 feet long", "en", 12, "foot"),
])
def test_numbers_in_words_and_units(text: str, lang: str, value: float, unit: str) -> None:
    qs = ev.quantities(ev.numbers_to_digits(text, lang), lang)
    assert [(q.value, q.unit) for q in qs] == [(value, unit)]


@pytest.mark.parametrize(("claim", "fact", "verdict"), [
    ("about 50 milhas", "80 km", checks.SUPPORTED),
    ("roughly 56 mph", "90 km/h", checks.SUPPORTED),
    ("about 243 lb", "110 kg", checks.SUPPORTED),
    ("12.7 cm", "5 inch", checks.SUPPORTED),
    ("1000 ml", "1 litre", checks.SUPPORTED),
    ("120 miles", "120 km", checks.CONTRADICTED),
    ("200 km", "120 km", checks.CONTRADICTED),
    ("60 hours", "38 hours", checks.CONTRADICTED),
    ("5 kg", "3 hours", checks.UNKNOWN),  # other dimensions: not comparable
])
def test_conversions(claim: str, fact: str, verdict: str) -> None:
    """Units are converted by pint before the claim's interval is compared with the fact's."""
    def stated(text: str) -> checks.Stated:
        (s,) = checks.stated_quantities(text, ev.quantities(text, "en"))
        return s

    assert checks.relation(stated(claim), stated(fact)) == verdict


def test_convert_and_what_pint_refuses() -> None:
    assert ev.convert(1, "mile", "kilometer") == pytest.approx(1.609344)
    assert ev.convert(7, "count", "kilometer") == 7 and ev.convert(7, "cur:EUR", "cur:GBP") == 7  # never converted
    for unit, to in (("kilogram", "hour"), ("no_such_unit", "kilometer"), ("kilodegree_Celsius", "kelvin")):
        with pytest.raises(ev.Unconvertible):
            ev.convert(1, unit, to)


def test_places_under_other_names() -> None:
    def keys(text: str) -> set:
        return {k for p in ev.places(text) for k in p.keys}

    assert keys("based in Cologne") & keys("headquarters: Köln, Germany")
    assert keys("fica em Colônia") & keys("headquarters: Köln, Germany")
    assert keys("based in Åbo") & keys("headquarters: Turku, Finland")
    assert keys("empresas do Reino Unido") == keys("in the United Kingdom") == {"GB"}
    assert "BR-SC" in keys("de Blumenau, em Santa Catarina")
    assert "BR-SC" in keys("Blumenau, SC, Brasil")  # "SC" after a Brazilian city: its state
    assert not keys("based in Düsseldorf") & keys("headquarters: Köln, Germany")
    # a name ending in "s" keeps it (the possessive "'s" is what is dropped)
    assert keys("sells in the United States.") == keys("sells in the US") == {"US"}
    assert keys("from Halifax's harbour") & keys("headquarters: Halifax, Nova Scotia, Canada")


def test_british_and_american_spellings_match() -> None:
    assert ev.lemma_keys("fibreglass") & ev.lemma_keys("fiberglass")
    assert ev.lemma_keys("colour") & ev.lemma_keys("color")
    assert not ev.lemma_keys("four") & ev.lemma_keys("for")


def test_language() -> None:
    assert ev.detect_language("A Trilhar Serra custa sete mil reais.") == "pt"
    assert ev.detect_language("The Aurelle S1 covers about 75 miles.") == "en"


BEACON = Brand("beacon", "ws", "Beacon", ("Beacon Payroll",), ("beaconpayroll.co.uk",))


@pytest.mark.parametrize(("prompt", "answer", "expected"), [
    ("Lighthouses?", "Grey seals rest near the old beacon on the headland.", CitationClass.ABSENT),
    ("Motivation?", "Think of your goal as a beacon that keeps you on course.", CitationClass.ABSENT),
    ("Boston?", "Beacon Hill is a historic neighbourhood.", None),  # not sure: the judge's
    ("Payroll tools?", "Popular names include Beacon, Xero and Sage.", None),
    ("Tell me about Beacon Payroll.", "I don't have specific information about Beacon Payroll.",
     CitationClass.ECHO),
    ("Is there a Beacon app?", "Beacon Hill has no app; Beacon's app runs on iOS.", None),
])
def test_common_word_brand_name(prompt: str, answer: str, expected: CitationClass | None) -> None:
    d = decide(Run("r", "ws", "e", "m", prompt, answer, "0" * 64), BEACON)
    assert (d.citation_class if d else None) is expected, d
