"""claims-judge-2026.12.14 (issue #28): words the description check did not know.

Three general mechanisms, no word list of products or brands:

- Spanish stems and lemmas are word keys (Snowball's Spanish stemmer, simplemma's Spanish
  lemmas), so a Spanish answer meets a Portuguese fact where the two languages share a stem
  ("cafés especiales" / "cafés especiais").
- A lower-case compound ("hand-forged", "cast-iron") is found when the facts say the whole word
  or every part of it ("forged by hand"); it still counts as one word.
- A lower-case demonym of a place the facts name ("curitibana", "portuguesa", "brasileño": how
  Portuguese and Spanish write them) is that place's adjective, like a capitalized one
  ("Portuguese"); it needs a demonym's ending (``demonym_endings``), so "portas" is no word
  made from "Porto".

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations


import pytest

from attesta_classifier.domain import evidence as ev
from attesta_classifier.domain import judging
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit


ROASTER = Brand("tuparel", "ws", "Tuparel Cafés", ("Tuparel",), ("tuparel.example",))
ROASTER_FACTS = facts_of("tuparel", [
    "Tuparel Cafés — sede: Curitiba, Paraná, Brasil",
    "A Tuparel torra cafés especiais em pequenos lotes.",
])
PANS = Brand("ashgrove", "ws", "Ashgrove Pans", ("Ashgrove",), ("ashgrove.example",))
PAN_FACTS = facts_of("ashgrove", [
    "Ashgrove Pans — headquarters: Sheffield, England",
    "Ashgrove makes pans from cast iron, forged by hand.",
])


def test_spanish_words_share_keys_with_portuguese_ones() -> None:
    assert ev.lemma_keys("especiales") & ev.lemma_keys("especiais")
    assert ev.lemma_keys("pequeños") & ev.lemma_keys("pequenos")


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (ROASTER, ROASTER_FACTS, "A Tuparel é uma empresa curitibana que torra cafés especiais em pequenos lotes.",
     CitationClass.DESCRIPTIVE),
    (ROASTER, ROASTER_FACTS, "Tuparel es una empresa brasileña que torra cafés especiales en pequeños lotes.",
     CitationClass.DESCRIPTIVE),
    (PANS, PAN_FACTS, "Ashgrove makes hand-forged cast-iron pans in Sheffield.", CitationClass.DESCRIPTIVE),
    # a demonym of a place the facts do not name is still unchecked
    (ROASTER, ROASTER_FACTS, "A Tuparel é uma empresa paulistana que torra cafés especiais em pequenos lotes.",
     None),
])
def test_descriptions_in_other_words(brand: Brand, facts: list[Fact], answer: str,
                                     expected: CitationClass | None) -> None:
    assert judged_offline(brand, facts, answer) is expected


def test_spanish_function_and_vague_words_are_not_checked() -> None:
    # "Algunas" is a Spanish dictionary word, not an unknown name; "otras marcas pequeñas" says
    # nothing checkable (as "outras marcas pequenas", "other small brands"): only the other
    # brand's name is left to check
    answer = "Algunas opciones: Tuparel, Norvex y otras marcas pequeñas."
    assert ev.is_common_word("algunas")
    run = Run("r", "ws", "e", "m", "¿Qué cafés conoces?", answer, "0" * 64)
    reason = judging.judge_offline(run=run, brand=ROASTER, facts=ROASTER_FACTS).reason
    assert "'Norvex' is in no fact" in reason
    assert "Algunas" not in reason.split("unknown by checks")[-1] and "description" not in reason
