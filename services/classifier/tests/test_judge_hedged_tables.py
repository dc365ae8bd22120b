"""claims-judge-2026.12.16 (issue #28): hedged statements, tables under the brand, addresses.

1. A hedge between commas ("X might be based in Leeds, I'm not sure"; "Talvez a X tenha sido
   fundada em 2015, não tenho certeza") took its whole clause with it: a false statement so
   hedged was ECHO. A hedged statement is still a statement: the parts of the clause without the
   hedge are kept when they name the brand and carry something specific (a number, another name);
   "Quizás X sea buena, no sé" stays a hedge. "..., mas, segundo a empresa, ..." now splits at "mas"
   with the comma after it.
2. Every row of a markdown table whose header names the brand (and no one else) is a claim about
   it: a row naming a city the facts do not know ended the run of sentences about the brand, so
   the rows after it were never read. A comparison table (a rival's column) is read as before.
3. An e-mail address on the brand's name that a fact gives is a supported item (the answer that
   gave only the brand's right address was ECHO); one that no fact gives, when the facts give
   another, keeps the pair pending also when the answer names the brand only inside it (it was
   ECHO).

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit

KILNS = Brand("orvendel", "ws", "Orvendel Kilns", ("Orvendel",), ("orvendel.example",))
KILN_FACTS = facts_of("orvendel", [
    "Orvendel Kilns — headquarters: Leeds, England",
    "Orvendel Kilns was founded in 2011.",
    "Orvendel Kilns builds electric pottery kilns.",
    "Orvendel Kilns employs 34 people.",
    "Write to Orvendel Kilns at hello@orvendel.example.",
])
PT = Brand("jatoba", "ws", "Cerâmica Jatobá", ("Jatobá",), ("jatoba.example",))
PT_FACTS = facts_of("jatoba", [
    "Cerâmica Jatobá — sede: Cunha, São Paulo, Brasil",
    "A Cerâmica Jatobá foi fundada em 2004.",
    "A Cerâmica Jatobá faz canecas e pratos de grés.",
])


@pytest.mark.parametrize(("brand", "facts", "answer", "expected"), [
    (KILNS, KILN_FACTS, "Orvendel Kilns might be based in Bristol, I'm not sure.", CitationClass.CONFABULATED),
    (KILNS, KILN_FACTS, "Orvendel Kilns was founded in 2011, I think, but I'm not sure.", CitationClass.DESCRIPTIVE),
    (PT, PT_FACTS, "Talvez a Jatobá tenha sido fundada em 1990, não tenho certeza.", CitationClass.CONFABULATED),
    (KILNS, KILN_FACTS, "Maybe Orvendel Kilns is good, I'm not sure.", CitationClass.ECHO),
    (KILNS, KILN_FACTS, "I don't know Orvendel Kilns, sorry.", CitationClass.ECHO),
])
def test_hedged_statements(brand: Brand, facts: list, answer: str, expected: CitationClass) -> None:
    assert judged_offline(brand, facts, answer) is expected, answer


def test_a_comma_after_but() -> None:
    answer = ("Não tenho dados independentes e posso estar desatualizado, mas, conforme a própria empresa, "
              "a Jatobá faz canecas e pratos de grés.")
    assert [c.text for c in brand_claims(answer, PT, PT_FACTS)] == [
        "conforme a própria empresa, a Jatobá faz canecas e pratos de grés."]


def test_every_row_under_the_brand_is_read() -> None:
    table = "| | Orvendel Kilns |\n|---|---|\n| Founded | 2011 |\n| HQ | Swindon, Wiltshire |\n| Staff | 34 |"
    texts = [c.text for c in brand_claims(table, KILNS, KILN_FACTS)]
    assert any("Swindon" in t for t in texts) and any("34" in t for t in texts)
    assert judged_offline(KILNS, KILN_FACTS, table) is CitationClass.CONFABULATED


@pytest.mark.parametrize(("answer", "expected"), [
    ("Questions for Orvendel Kilns: hello@orvendel.example.", CitationClass.DESCRIPTIVE),
    ("Orders go to sales@orvendel.example.", None),  # named only in an address no fact gives
    ("Orvendel Kilns builds electric pottery kilns; write to hello@orvendel.example.", CitationClass.DESCRIPTIVE),
])
def test_addresses(answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(KILNS, KILN_FACTS, answer) is expected, answer
