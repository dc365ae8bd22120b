"""claims-judge-2026.12.9 (issue #28): what a model's one-word verdict may decide, and the exact
checks that back it, in both languages.

- The model's "contradicted" counts only when the exact checks found an item of the claim that
  no fact has (a number, year, place, person, name) or a fact says the opposite of the claim's
  words; otherwise it is about wording and the claim stays undecided (a person's call).
- A fact's negated words ("não levam parafina") support no affirmative claim, neither in the
  description check nor through the model's "supported".
- A landmark ("perto de X", "north of X") and a demonym ("Portuguese" for a brand the facts place
  in Portugal) are no unknown items.
- Synonym groups reach every inflection through lemmas.

The brand and facts are invented for these tests (a candle maker); none comes from an
evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import CONTRADICTED, SUPPORTED, UNKNOWN, Assessment, assess, keys_of
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 1, tzinfo=UTC)
CANDLES = Brand("lumeira", "ws", "Velas Lumeira", ("Lumeira",), ("lumeira.example",))
FACTS = [Fact(f"lumeira-{i:02d}", "lumeira", "manual", t, "https://lumeira.example/", AT, "lumeira.example", "a" * 64)
         for i, t in enumerate((
             "Velas Lumeira — descrição: Fabricante de velas de cera de abelha.",
             "Velas Lumeira — data de fundação: 2004",
             "Velas Lumeira — sede: Pombal, Portugal",
             "Vendemos em 30 lojas de Portugal.",
             "As velas da Lumeira não levam parafina nem pavios de metal.",
         ))]
INDEX = judging.fact_index(CANDLES, FACTS)
BRAND_WORDS = INDEX.names | INDEX.products


def assessed(text: str) -> Assessment:
    [claim] = brand_claims(text, CANDLES, FACTS)
    return assess(claim, INDEX)


def model_says(text: str, word: str, p: float = 0.9) -> judging.ClaimOutcome:
    return judging.model_outcome(assessed(text), word, p, "m", FACTS, BRAND_WORDS)


@pytest.mark.parametrize(("text", "expected"), [
    # a paraphrase (other words): the model's "contradicted" has nothing checkable behind it
    ("A Lumeira faz velas artesanais com cera das abelhas.", UNKNOWN),
    ("Velas Lumeira makes beeswax candles by hand.", UNKNOWN),
    # a count no fact gives: the model may call it contradicted
    ("A Lumeira tem 40 funcionários.", CONTRADICTED),
    # a fact says the opposite of the claim's words
    ("A Lumeira produz velas perfumadas com parafina e pavios de metal.", CONTRADICTED),
])
def test_the_models_contradicted_needs_a_checkable_item(text: str, expected: str) -> None:
    outcome = model_says(text, judging.MODEL_CONTRADICTED)
    assert outcome.status == expected
    if expected == UNKNOWN:
        assert "no checkable item backs it" in outcome.detail and outcome.fact_ids == ()


def test_a_true_negation_is_not_contradicted_by_the_model_alone() -> None:
    text = "As velas da Lumeira não levam parafina: são de cera de abelha."
    assert model_says(text, judging.MODEL_CONTRADICTED).status == UNKNOWN
    assert model_says(text, judging.MODEL_SUPPORTED).status == SUPPORTED


def test_the_models_supported_cannot_overrule_a_negated_fact() -> None:
    outcome = model_says("A Lumeira produz velas perfumadas com parafina e pavios de metal.", judging.MODEL_SUPPORTED)
    assert outcome.status == UNKNOWN and "the opposite" in outcome.detail


def test_a_facts_negated_words_support_no_affirmative_claim() -> None:
    # every word of the claim is in some fact, but "parafina" and "metal" only under "não"
    assert assessed("A Lumeira vende velas de parafina com pavios de metal.").status != SUPPORTED
    assert assessed("A Lumeira vende velas de cera de abelha em 30 lojas.").status == SUPPORTED


@pytest.mark.parametrize(("text", "expected"), [
    ("A Lumeira fica em Pombal, perto de Coimbra.", SUPPORTED),  # Coimbra situates Pombal
    ("Velas Lumeira is based in Pombal, north of Coimbra.", SUPPORTED),
    ("A Lumeira tem uma oficina em Coimbra.", UNKNOWN),  # a place of the brand no fact names
])
def test_a_landmark_is_no_claim_about_the_brand(text: str, expected: str) -> None:
    assert assessed(text).status == expected


def test_a_demonym_of_the_facts_country_is_no_unknown_name() -> None:
    a = assessed("Velas Lumeira is a Portuguese maker of candles, founded in 2004.")
    assert not [r for r in a.results if r.check == "name"]
    # what is left is meaning across languages (candles / velas): the model's, not a name's
    assert {r.check for r in a.results if r.status == UNKNOWN} == {"description"}


@pytest.mark.parametrize(("word", "other"), [
    ("fabricamos", "maker"), ("produzindo", "manufacturer"), ("vendidas", "sells"), ("projetou", "designers"),
])
def test_synonym_groups_reach_every_inflection(word: str, other: str) -> None:
    assert keys_of(word) & keys_of(other)


@pytest.mark.parametrize("hedge", ["Se bem me lembro,", "If I remember correctly,", "Julgo que"])
def test_hedged_statements_in_both_languages_are_still_checked(hedge: str) -> None:
    a = assessed(f"{hedge} a Lumeira foi fundada em 2004.")
    assert a.claim.uncertain and a.status == SUPPORTED
