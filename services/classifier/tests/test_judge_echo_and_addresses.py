"""claims-judge-2026.12.10 (issue #28): what makes an answer ECHO rather than DESCRIPTIVE, and what
the model's verdicts are checked against, in both languages.

- A claim that only repeats what the prompt said about the brand ("É uma X?" - "Sim, é uma X")
  says nothing the engine knew: it is no claim, the answer is ECHO, not DESCRIPTIVE. What the
  exact checks find false, or a specific item they find in no fact, stays: confirming a wrong
  premise is no echo.
- An answer that names the brand only inside an e-mail address or a URL is ECHO.
- A sentence that goes on about the brand without naming it ("Fundada em 1950, exporta ...") is
  one of its claims, so a false detail in it is not lost.
- A region written after the brand's city ("Tomar, na Estremadura") is no unknown name.
- The polarity test reads every fact of the brand, not only the few shown to the model.

The brand and facts are invented for these tests (a honey producer); none comes from an
evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_contracts.classification import CitationClass

from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import CONTRADICTED, SUPPORTED, UNKNOWN, assess
from attesta_classifier.domain.claims import brand_claims, named_only_in_addresses
from attesta_classifier.domain.model import Brand, Fact, Run

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 1, tzinfo=UTC)
HONEY = Brand("favada", "ws", "Mel Favada", ("Favada",), ("favada.example",))
FACTS = [Fact(f"favada-{i:02d}", "favada", "manual", t, "https://favada.example/", AT, "favada.example", "b" * 64)
         for i, t in enumerate((
             "Mel Favada — descrição: Produtor de mel de rosmaninho e de urze.",
             "Mel Favada — data de fundação: 1979",
             "Mel Favada — sede: Tomar, Portugal",
             "Mel Favada — número de colmeias: 600",
             "As colmeias ficam em serras sem pesticidas.",
             "O mel é extraído a frio e não é pasteurizado.",
         ))]
INDEX = judging.fact_index(HONEY, FACTS)
BRAND_WORDS = INDEX.names | INDEX.products


def judged(prompt: str, answer: str) -> judging.Outcome:
    return judging.judge_offline(run=Run("r", "ws", "e", "m", prompt, answer, "0" * 64), brand=HONEY, facts=FACTS)


@pytest.mark.parametrize(("prompt", "answer"), [
    ("A Favada produz mel de rosmaninho?", "Sim, a Favada produz mel de rosmaninho."),
    ("A Favada produz mel de rosmaninho?", "Acho que a Favada produz mel de rosmaninho, sim."),
    ("Is Mel Favada a heather honey producer?", "Yes, Mel Favada is a heather honey producer."),
])
def test_an_answer_that_only_repeats_the_prompt_is_echo(prompt: str, answer: str) -> None:
    outcome = judged(prompt, answer)
    assert outcome.citation_class is CitationClass.ECHO, outcome.reason


def test_the_same_words_without_the_prompt_are_a_description() -> None:
    outcome = judged("O que faz a Favada?", "A Favada produz mel de rosmaninho.")
    assert outcome.citation_class is CitationClass.DESCRIPTIVE, outcome.reason


def test_an_answer_that_adds_to_the_prompt_is_judged_on_what_it_adds() -> None:
    outcome = judged("A Favada produz mel de rosmaninho?", "Sim, a Favada, fundada em 1979, produz mel de rosmaninho.")
    assert outcome.citation_class is CitationClass.DESCRIPTIVE, outcome.reason
    outcome = judged("A Favada produz mel de rosmaninho?", "Sim, a Favada, fundada em 1950, produz mel de rosmaninho.")
    assert outcome.citation_class is CitationClass.CONFABULATED, outcome.reason


@pytest.mark.parametrize(("prompt", "answer"), [
    ("A Favada fica em Lisboa?", "Sim, a Favada fica em Lisboa."),  # a rival city: contradicted
    ("A Favada tem 900 colmeias?", "Sim, a Favada tem 900 colmeias."),  # another count
])
def test_confirming_a_wrong_premise_is_no_echo(prompt: str, answer: str) -> None:
    assert judged(prompt, answer).citation_class is not CitationClass.ECHO


def test_a_negated_answer_to_an_affirmative_prompt_is_no_echo() -> None:
    outcome = judged("O mel da Favada é pasteurizado?", "Não, o mel da Favada não é pasteurizado.")
    assert outcome.citation_class is not CitationClass.ECHO


@pytest.mark.parametrize("answer", [
    "Pode escrever para encomendas@favada-mel.pt.",
    "Try emailing shop@favada-honey.com for prices.",
])
def test_an_answer_naming_the_brand_only_in_an_address_is_echo(answer: str) -> None:
    assert named_only_in_addresses(answer, HONEY)
    outcome = judged("Como falo com a Favada?", answer)
    assert outcome.citation_class is CitationClass.ECHO, outcome.reason


def test_an_address_of_another_name_is_not_the_brand() -> None:
    assert not named_only_in_addresses("Escreva para geral@colmeias-do-norte.pt.", HONEY)
    assert not named_only_in_addresses("A Favada responde em geral@favada-mel.pt.", HONEY)  # named in the text


def test_a_sentence_that_goes_on_about_the_brand_is_checked() -> None:
    answer = "A Mel Favada fica em Tomar, Portugal. Fundada em 1950, tem 600 colmeias."
    claims = brand_claims(answer, HONEY, FACTS)
    assert len(claims) == 2
    assert judged("Fale da Favada.", answer).citation_class is CitationClass.CONFABULATED


def test_advice_after_a_hedge_is_no_claim() -> None:
    answer = "Não conheço a Mel Favada. Talvez valha a pena procurar avaliações de clientes."
    assert judged("A Favada é boa?", answer).citation_class is CitationClass.ECHO


def test_a_region_after_the_brands_city_is_no_unknown_name() -> None:
    [claim] = brand_claims("A Mel Favada tem sede em Tomar, na Estremadura.", HONEY, FACTS)
    a = assess(claim, INDEX)
    assert a.status == SUPPORTED, a.results
    [claim] = brand_claims("A Mel Favada tem sede em Tomar e uma loja em Ourém.", HONEY, FACTS)
    assert assess(claim, INDEX).status != SUPPORTED  # a second place is no apposition


def test_the_polarity_test_reads_every_fact() -> None:
    [claim] = brand_claims("As colmeias da Favada ficam em serras tratadas com pesticidas.", HONEY, FACTS)
    a = assess(claim, INDEX)
    shown = FACTS[:2]  # the fact that denies it is not among those shown to the model
    assert judging.model_outcome(a, judging.MODEL_CONTRADICTED, 0.9, "m", shown, BRAND_WORDS).status == UNKNOWN
    assert judging.model_outcome(a, judging.MODEL_CONTRADICTED, 0.9, "m", shown, BRAND_WORDS,
                                 FACTS).status == CONTRADICTED
    assert judging.model_outcome(a, judging.MODEL_SUPPORTED, 0.9, "m", shown, BRAND_WORDS, FACTS).status == UNKNOWN


def test_fact_ranking_ignores_the_brands_own_name() -> None:
    similarity = [0.0] * len(FACTS)
    [top] = judging.relevant_facts("A Mel Favada usa pesticidas nas serras.", FACTS, similarity, k=1,
                                   drop=BRAND_WORDS)
    assert top.fact_id == "favada-04"


def test_a_false_detail_after_a_true_sentence_is_not_lost() -> None:
    answer = "A Mel Favada produz mel de urze em Tomar. As colmeias ficam em serras tratadas com pesticidas."
    assert len(brand_claims(answer, HONEY, FACTS)) == 2
    assert judged("Fale da Favada.", answer).citation_class is not CitationClass.DESCRIPTIVE


def test_a_generic_sentence_after_a_description_is_no_claim() -> None:
    answer = "A Mel Favada produz mel de urze em Tomar. Many customers like the quality."
    assert len(brand_claims(answer, HONEY, FACTS)) == 1
    assert judged("Fale da Favada.", answer).citation_class is CitationClass.DESCRIPTIVE


@pytest.mark.parametrize("answer", [
    "No conozco Mel Favada, no sé decir si es buena.",
    "Quizás Mel Favada sea buena, pero no tengo información fiable.",
])
def test_spanish_hedges_are_echo(answer: str) -> None:
    assert judged("¿Mel Favada es buena?", answer).citation_class is CitationClass.ECHO


def test_insurance_in_portuguese_is_no_spanish_hedge() -> None:
    # "seguro" means "sure" in Spanish and "insurance" in Portuguese: it is no meta word.
    [claim] = brand_claims("A Mel Favada vende seguro de colmeias.", HONEY, FACTS)
    assert assess(claim, INDEX).status == UNKNOWN
