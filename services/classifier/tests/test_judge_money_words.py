"""claims-judge-2026.12.16 (issue #28): how numbers are read (``evidence.numbers_to_digits``).

Before 2026.12.16 an amount in words with its cents ("nove euros e cinquenta cêntimos") was 9
euros and the count 50, "$12M" was 12 dollars, "€2bn" 2 euros, "3 mil milhões" the counts 3000
and 1000000, Spanish number words ("doce millones", "doscientos") no number at all, "fundada em
98" the count 98 (compared with the facts' headcount), and "em 2010 há 15 anos" 2010 hectares.
Now: a currency's amount and its cents (``subunits`` in ``judge_words.json``) are one amount;
the scale words are babel's compact number forms of English, Portuguese and Spanish (CLDR), with
the lexicon's; English compact currency letters (K, M, B) count only right after a currency
sign; a sentence that reads as Spanish has its number words read by text2num's Spanish; two
digits right after "em" / "in" / "since" in words that date an event are a year; a unit that is
also a word ("ha", ``ambiguous_units``) is the word after a year.

The brands, facts and sentences are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain.checks import numbers
from attesta_classifier.domain.model import Brand
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


def amounts(text: str, lang: str) -> list[tuple[float, str]]:
    return [(s.quantity.value, s.quantity.unit) for s, _ in numbers(text, lang, frozenset()).quantities]


def years(text: str, lang: str) -> list[float]:
    return [q.value for q, _ in numbers(text, lang, frozenset()).years]


@pytest.mark.parametrize(("text", "lang", "expected"), [
    ("O bolo custa sete euros e vinte cêntimos.", "pt", [(7.2, "cur:EUR")]),
    ("The mug costs eleven dollars and forty cents.", "en", [(11.4, "cur:USD")]),
    ("It raised $8M in its first round.", "en", [(8_000_000.0, "cur:USD")]),
    ("Revenue passed €1.5bn.", "en", [(1_500_000_000.0, "cur:EUR")]),
    ("Turnover was £4.2m.", "en", [(4_200_000.0, "cur:GBP")]),
    ("Faturou 2 mil milhões de euros.", "pt", [(2_000_000_000.0, "cur:EUR")]),
    ("Vendió doce millones de botellas.", "pt", [(12_000_000.0, "count")]),
    ("Tiene doscientos empleados.", "pt", [(200.0, "count")]),
    ("Cultiva 200 ha de vinha.", "pt", [(200.0, "hectare")]),
    ("The track is 12 m long.", "en", [(12.0, "meter")]),  # a lone letter after a number stays a unit
])
def test_amounts(text: str, lang: str, expected: list[tuple[float, str]]) -> None:
    got = amounts(text, lang)
    assert [(pytest.approx(v), u) for v, u in expected] == got, text


@pytest.mark.parametrize(("text", "lang", "year"), [
    ("A oficina foi fundada em 2010, há 15 anos.", "pt", 2010.0),
    ("A oficina foi fundada em 2010 ha 15 anos.", "pt", 2010.0),  # written without its accent
    ("Desde 2015 ha crecido mucho.", "pt", 2015.0),  # Spanish "ha": has
    ("A loja foi fundada em 98.", "pt", 1998.0),
    ("The bakery was founded in 07, by two brothers.", "en", 2007.0),
])
def test_years_not_units_or_counts(text: str, lang: str, year: float) -> None:
    assert years(text, lang) == [year], text
    assert all(unit != "hectare" for _, unit in amounts(text, lang)), text


@pytest.mark.parametrize("text", ["It sells in 12 countries.", "Tem 98 funcionários em 12 lojas."])
def test_a_count_after_a_preposition_stays_a_count(text: str) -> None:
    assert years(text, "pt" if "funcion" in text else "en") == []


def test_scale_words_come_from_babel_and_the_lexicon() -> None:
    scales = ev.scale_words()
    assert scales["millones"] == 1_000_000 and scales["mil milhoes"] == 1_000_000_000
    assert scales["bi"] == 1_000_000_000  # the lexicon's Brazilian "bi", not European "Bi" (10^12)
    assert "billones" not in scales or scales["billones"] == 10**12


SHOP = Brand("cardenho", "ws", "Cardenho Chás", ("Cardenho",), ("cardenho.example",))
SHOP_FACTS = facts_of("cardenho", [
    "Cardenho Chás — sede: Braga, Portugal",
    "O chá verde da Cardenho custa 6,80 € a lata.",
    "A Cardenho levantou 3 milhões de euros em 2021.",
])


@pytest.mark.parametrize(("answer", "expected"), [
    ("A lata de chá verde da Cardenho custa seis euros e oitenta cêntimos.", CitationClass.DESCRIPTIVE),
    ("A lata de chá verde da Cardenho custa seis euros e noventa cêntimos.", CitationClass.CONFABULATED),
    ("Cardenho raised €3M in 2021.", CitationClass.DESCRIPTIVE),
])
def test_judged(answer: str, expected: CitationClass) -> None:
    assert judged_offline(SHOP, SHOP_FACTS, answer) is expected, answer
