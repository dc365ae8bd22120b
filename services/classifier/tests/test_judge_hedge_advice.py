"""claims-judge-2026.12.14 (issue #28): after a hedge, in the same sentence, comes advice.

"Não tenho certeza sobre a X; talvez valha a pena consultar o site deles." The first clause is a
hedge (dropped: it asserts nothing); before 2026.12.14 the second was a claim about the brand,
its words ("valha") were in no fact, and the answer stayed pending instead of ECHO. A hedged
sentence was already followed by advice, not by more about the brand (``brand_claims``); now a
clause after a hedge in the same sentence is a claim only when it names the brand or refers
back to it ("..., but it was founded in 1990").

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import judged_offline

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 6, tzinfo=UTC)
BRAND = Brand("velmorra", "ws", "Velmorra Vidros", ("Velmorra",), ("velmorra.example",))
FACTS = [Fact(f"velmorra-{i:02d}", "velmorra", "manual", t, "https://velmorra.example/", AT, "velmorra.example", "9" * 64)
         for i, t in enumerate(["Velmorra Vidros — data de fundação: 1990", "Velmorra Vidros — sede: Leiria, Portugal"])]


def offline(answer: str) -> CitationClass | None:
    return judged_offline(BRAND, FACTS, answer, f"Fale sobre a {BRAND.name}")


@pytest.mark.parametrize("answer", [
    "Não tenho certeza sobre a Velmorra Vidros; talvez valha a pena consultar o site deles.",
    "No conozco la marca Velmorra; no puedo opinar sobre ella.",
    "I'm not sure about Velmorra Vidros; reading recent reviews would help.",
])
def test_advice_after_a_hedge_is_no_claim(answer: str) -> None:
    assert [c.text for c in brand_claims(answer, BRAND, FACTS)] in ([], [""])
    assert offline(answer) is CitationClass.ECHO


@pytest.mark.parametrize(("answer", "expected"), [
    # what follows names the brand or refers back to it: still a claim
    ("I'm not sure about its products, but Velmorra Vidros was founded in 1990.", CitationClass.DESCRIPTIVE),
    ("Não sei muito sobre a Velmorra, mas ela foi fundada em 1985.", CitationClass.CONFABULATED),
])
def test_a_clause_about_the_brand_after_a_hedge_is_still_a_claim(answer: str, expected: CitationClass) -> None:
    assert offline(answer) is expected
