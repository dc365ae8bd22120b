"""claims-judge-2026.12.14 (issue #28): a prize's name is no other party.

A sentence right after one about the brand is read as about it too when it names nobody else
(``claims._continues``). "A X faz bicicletas de bambu em Florianópolis. Em 2019 ganhou o prêmio
Pedal de Ouro." - the second sentence's capitalized words are the prize's name, and before
2026.12.14 they made it a sentence about someone else: the invented award was never checked and
the answer was DESCRIPTIVE. Now capitalized words right after an award word (the lexicon's
``award`` concept: "prêmio", "won the", "ganhou o") are the prize's name; the sentence stays the
brand's, and the name is still an item the facts must have.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_classifier.domain import judging
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 6, tzinfo=UTC)
BRAND = Brand("tamburil", "ws", "Tamburil Bicicletas", ("Tamburil",), ("tamburil.example",))
FACTS = [Fact(f"tamburil-{i:02d}", "tamburil", "manual", t, "https://tamburil.example/", AT, "tamburil.example", "7" * 64)
         for i, t in enumerate(["Tamburil Bicicletas — sede: Florianópolis, Santa Catarina, Brasil",
                                "A Tamburil faz bicicletas de bambu."])]


def test_a_sentence_about_a_prize_continues_about_the_brand() -> None:
    answer = "A Tamburil faz bicicletas de bambu em Florianópolis. Em 2019 ganhou o prêmio Pedal de Ouro."
    assert len(brand_claims(answer, BRAND, FACTS)) == 2
    run = Run("r", "ws", "e", "m", "Fale sobre a Tamburil", answer, "0" * 64)
    assert judging.judge_offline(run=run, brand=BRAND, facts=FACTS).citation_class is not CitationClass.DESCRIPTIVE


@pytest.mark.parametrize("second", [
    "A Ferrobello ganhou o prêmio Casa Forte.",  # another party, named before the prize
    "Outra opção é a Ferrobello.",
])
def test_a_sentence_naming_another_party_is_still_not_the_brands(second: str) -> None:
    answer = f"A Tamburil faz bicicletas de bambu em Florianópolis. {second}"
    assert len(brand_claims(answer, BRAND, FACTS)) == 1
