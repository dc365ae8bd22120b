"""claims-judge-2026.12.12 (issue #28): a quantity a claim states is an interval.

An exact value, an upper bound ("fewer than 20", "menos de 20", "no más de 20"), a lower bound
("more than 20", "pelo menos 20", "20 o más"), a maximum or minimum reached ("up to 60 km",
"até 60 km", "a partir de R$ 39"), a range ("between 15 and 20", "entre 15 e 20", "de 15 a 20",
"15-20") or an approximation ("about 20", "cerca de 20", "unos 20", "just over 20"), in English,
Portuguese and Spanish, with number words and unit conversions. The quantity check says
supported when the fact's value lies in the claim's interval, contradicted only when it lies
clearly outside, and unknown (the pair stays pending, whatever a model says) when neither.

The brand and its facts are invented for these tests (a bicycle-trailer maker); none comes from
an evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_contracts.classification import CitationClass

from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import (
    AT_LEAST,
    AT_MOST,
    CONTRADICTED,
    EXACT,
    RANGE,
    SUPPORTED,
    UNKNOWN,
    UP_TO,
    assess,
    comparators,
    numbers,
)
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.lexicon import lexicon
from attesta_classifier.domain.model import Brand, Fact, Run

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 1, tzinfo=UTC)
BRAND = Brand("trelvo", "ws", "Trelvo Reboques", ("Trelvo",), ("trelvo.example",))
FACTS = [Fact(f"trelvo-{i:02d}", "trelvo", "manual", t, "https://trelvo.example/", AT, "trelvo.example", "c" * 64)
         for i, t in enumerate((
             "Trelvo Reboques — descrição: Fabricante de reboques de bicicleta.",
             "Trelvo Reboques — número de funcionários: 46",
             "Trelvo Reboques — sede: Blumenau, Brasil",
             "Trelvo Carga 2 — peso: 9 kg",
             "Trelvo Carga 2 — preço: R$ 1.290",
             "A Trelvo exporta para mais de 12 países.",
         ))]
INDEX = judging.fact_index(BRAND, FACTS)


def quantity_status(answer: str) -> str:
    """The quantity check's verdict on the one quantity of the answer's one claim."""
    [claim] = brand_claims(answer, BRAND, FACTS)
    results = [r for r in assess(claim, INDEX).results if r.check == "quantity"]
    assert len(results) == 1, results
    return results[0].status


def judged(answer: str) -> judging.Outcome:
    return judging.judge_offline(run=Run("r", "ws", "e", "m", "Fale da Trelvo.", answer, "0" * 64),
                                 brand=BRAND, facts=FACTS)


# Every comparator in every language, each consistent with the fact (46 employees; in Spanish the
# trailer's 9 kg: "pesa" is a weight in both Romance languages, "empleados" is no concept word)
# and each clearly excluding it.
@pytest.mark.parametrize(("answer", "status"), [
    # upper bound
    ("Trelvo Reboques has fewer than fifty employees.", SUPPORTED),
    ("Trelvo Reboques has no more than 40 employees.", CONTRADICTED),
    ("A Trelvo Reboques tem menos de 50 funcionários.", SUPPORTED),
    ("A Trelvo Reboques tem menos de 30 funcionários.", CONTRADICTED),
    ("El Trelvo Carga 2 pesa no más de 10 kg.", SUPPORTED),
    ("El Trelvo Carga 2 pesa menos de 5 kg.", CONTRADICTED),
    # lower bound, before and after the number
    ("Trelvo Reboques employs more than 40 people.", SUPPORTED),
    ("Trelvo Reboques employs at least 100 people.", CONTRADICTED),
    ("A Trelvo Reboques tem pelo menos 40 funcionários.", SUPPORTED),
    ("A Trelvo Reboques tem mais de 200 funcionários.", CONTRADICTED),
    ("El Trelvo Carga 2 pesa 8 kg o más.", SUPPORTED),
    ("El Trelvo Carga 2 pesa más de 20 kilos.", CONTRADICTED),
    # range
    ("Trelvo Reboques employs between 40 and 50 people.", SUPPORTED),
    ("Trelvo Reboques employs 60-80 people.", CONTRADICTED),
    ("A Trelvo Reboques tem entre 40 e 50 funcionários.", SUPPORTED),
    ("A Trelvo Reboques tem de 10 a 20 funcionários.", CONTRADICTED),
    ("El Trelvo Carga 2 pesa entre 8 y 10 kg.", SUPPORTED),
    ("El Trelvo Carga 2 pesa entre 15 y 20 kg.", CONTRADICTED),
    # approximation: within 10% consistent, beyond 25% contradicted
    ("Trelvo Reboques employs about 45 people.", SUPPORTED),
    ("Trelvo Reboques employs around 100 people.", CONTRADICTED),
    ("A Trelvo Reboques tem cerca de 50 funcionários.", SUPPORTED),
    ("A Trelvo Reboques tem uns 20 funcionários.", CONTRADICTED),
    ("El Trelvo Carga 2 pesa unos 9 kilos.", SUPPORTED),
    ("El Trelvo Carga 2 pesa alrededor de 20 kilos.", CONTRADICTED),
    # a bound that is also near: firm on one side, vague on the other
    ("A Trelvo Reboques tem pouco mais de 40 funcionários.", SUPPORTED),
    ("Trelvo Reboques employs just under 40 people.", CONTRADICTED),
    # exact values, as before
    ("Trelvo Reboques employs 46 people.", SUPPORTED),
    ("Trelvo Reboques employs 64 people.", CONTRADICTED),
])
def test_each_comparator_in_each_language(answer: str, status: str) -> None:
    assert quantity_status(answer) == status


def test_the_bound_that_was_read_as_a_value_no_longer_makes_a_correct_answer_confabulated() -> None:
    # Before 2026.12.12, "fewer than fifty" was read as 50 against the fact's 46: CONFABULATED.
    outcome = judged("A Trelvo Reboques tem menos de cinquenta funcionários.")
    assert outcome.citation_class is CitationClass.DESCRIPTIVE, outcome.reason


@pytest.mark.parametrize(("answer", "status"), [
    ("The Trelvo Carga 2 weighs under 25 pounds.", SUPPORTED),  # 9 kg = 19.8 lb
    ("The Trelvo Carga 2 weighs about 20 pounds.", SUPPORTED),
    ("The Trelvo Carga 2 weighs under 15 pounds.", CONTRADICTED),
    ("O Trelvo Carga 2 pesa entre 8 e 10 quilos.", SUPPORTED),
    ("El Trelvo Carga 2 pesa más de 12 kilos.", CONTRADICTED),
])
def test_a_converted_unit(answer: str, status: str) -> None:
    assert quantity_status(answer) == status


def test_a_fact_that_is_itself_a_bound() -> None:
    # "mais de 12 países": a claim whose interval holds the fact's is consistent, one that
    # excludes it is contradicted, one that overlaps it cannot be decided.
    assert quantity_status("A Trelvo exporta para mais de 10 países.") == SUPPORTED
    assert quantity_status("A Trelvo exporta para menos de 5 países.") == CONTRADICTED
    assert quantity_status("A Trelvo exporta para 15 países.") == UNKNOWN


@pytest.mark.parametrize("answer", [
    "Trelvo Reboques employs about 55 people.",  # 20% off an "about": neither near nor clearly off
    "O Trelvo Carga 2 custa até R$ 1.500.",  # a maximum above the fact's price: not shown false, nor true
    "A Trelvo Reboques tem quase 45 funcionários.",  # 46: just past "almost 45", not clearly false
])
def test_an_unclear_comparison_is_undecided_and_no_model_decides_it(answer: str) -> None:
    [claim] = brand_claims(answer, BRAND, FACTS)
    a = assess(claim, INDEX)
    [q] = [r for r in a.results if r.check == "quantity"]
    assert q.status == UNKNOWN and q.final
    assert not judging.needs_model(a)
    for verdict in judging.MODEL_VERDICTS:  # whatever the model says, the claim stays open
        o = judging.model_outcome(a, verdict, 0.99, "m", FACTS[:2], INDEX.names | INDEX.products, FACTS)
        assert o.status == UNKNOWN, (verdict, o.detail)
    assert judged(answer).citation_class is None


def test_an_unclear_unit_is_undecided() -> None:
    # "pounds" is a weight to the unit table, said here of a price: the facts give a weight of
    # another thing and a price in reais, nothing to compare it with, so it is unknown, never
    # contradicted.
    assert quantity_status("O Trelvo Carga 2 custa cerca de 300 pounds.") == UNKNOWN


def test_a_bound_is_not_held_by_the_other_reading_of_a_number_or_by_another_quantity() -> None:
    # "1.290" is 1290 in Portuguese (1.29 in English): "at least R$ 1,000" is not held by 1.29,
    # and "under R$ 1,000" is not held by 1.29 either.
    assert quantity_status("O Trelvo Carga 2 custa pelo menos R$ 1.000.") == SUPPORTED
    assert quantity_status("O Trelvo Carga 2 custa menos de R$ 1.000.") == CONTRADICTED


@pytest.mark.parametrize(("text", "lang", "kind", "values"), [
    ("fewer than twenty staff", "en", AT_MOST, (20.0,)),
    ("no more than 20 staff", "en", AT_MOST, (20.0,)),  # the longest phrase wins: not "more than"
    ("20 funcionários ou mais", "pt", AT_LEAST, (20.0,)),
    ("hasta 60 km", "pt", UP_TO, (60.0,)),
    ("de 4 a 5 kg", "pt", RANGE, (4.0, 5.0)),
    ("15–20 staff", "en", RANGE, (15.0, 20.0)),
    ("turnover 20 staff", "en", EXACT, (20.0,)),  # "over" inside a word is no comparator
])
def test_how_a_quantity_is_stated(text: str, lang: str, kind: str, values: tuple[float, ...]) -> None:
    [(s, _)] = numbers(text, lang, frozenset()).quantities
    assert (s.kind, s.values) == (kind, values)


def test_two_years_with_a_dash_are_no_range() -> None:
    n = numbers("It ran from 2019-2021.", "en", frozenset())
    assert not n.quantities


def test_the_comparator_words_are_versioned_data_in_three_languages() -> None:
    cx = comparators()
    phrases = {p for p, _ in cx.before}
    assert {"fewer than", "menos de", "mas de", "alrededor de", "cerca de", "pelo menos"} <= phrases
    assert 0 < cx.approx < cx.approx_clearly_outside < 1
    assert lexicon().version == "judge-words-2026.12.16"
    assert judging.PIPELINE_VERSION.startswith("claims-judge-2026.12.1")  # .12 brought these words
