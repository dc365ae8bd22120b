"""claims-judge-2026.12.16 (issue #28): a person of the facts given a second role the facts do not
give them.

"Founded in 2011 by <the facts' CEO>, who still runs it": the leader role is right, the founder
role is the answer's own. Before 2026.12.16 one right role made the person supported (the answer
DESCRIPTIVE); and "fundada em 2011 por X" did not read as a founder role at all (a year between
the verb and its "por"). Now the founder role is read with a year in between, and a person whose
claimed roles go beyond the facts' is undecided (a person decides; no model is asked): role words
are read in a window, so a second role may be a neighbour's (2026.12.15's notes), which is why this
is no contradiction.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.checks import people_and_places
from attesta_classifier.domain.model import Brand
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import facts_of, judged_offline

pytestmark = pytest.mark.unit

SAILS = Brand("quillamore", "ws", "Quillamore Sails", ("Quillamore",), ("quillamore.example",))
SAIL_FACTS = facts_of("quillamore", [
    "Quillamore Sails — headquarters: Cowes, England",
    "Quillamore Sails was founded in 1994 by Ebenezer Makepiece.",
    "The CEO of Quillamore Sails is Ottoline Varga.",
])


@pytest.mark.parametrize(("text", "role"), [
    ("Quillamore was founded in 1994 by Ebenezer Makepiece.", "founder"),
    ("A Quillamore foi fundada em 1994 por Ebenezer Makepiece.", "founder"),
    ("A Quillamore foi fundada em 1994 pelo Ebenezer Makepiece.", "founder"),
])
def test_a_year_between_the_verb_and_by(text: str, role: str) -> None:
    people, _ = people_and_places(text, frozenset({"quillamore"}))
    assert people and role in people[0][1], text


@pytest.mark.parametrize(("answer", "expected"), [
    ("Quillamore Sails was founded in 1994 by Ottoline Varga, who still runs it.", None),
    ("A Quillamore foi fundada em 1994 por Ottoline Varga, que ainda comanda a empresa.", None),
    ("Quillamore Sails is run by Ottoline Varga.", CitationClass.DESCRIPTIVE),
    ("Quillamore Sails was founded in 1994 by Ebenezer Makepiece.", CitationClass.DESCRIPTIVE),
])
def test_second_roles(answer: str, expected: CitationClass | None) -> None:
    assert judged_offline(SAILS, SAIL_FACTS, answer) is expected, answer


def test_a_role_stops_at_a_semicolon() -> None:
    people, _ = people_and_places("Ottoline Varga is the CEO; Ebenezer Makepiece is the founder.", frozenset())
    assert dict((name, roles) for name, roles, _ in people) == {
        "ottoline varga": frozenset({"leader"}), "ebenezer makepiece": frozenset({"founder"})}
    assert judged_offline(SAILS, SAIL_FACTS, "Ottoline Varga is the CEO of Quillamore Sails; Ebenezer Makepiece "
                          "is its founder.") is CitationClass.DESCRIPTIVE
