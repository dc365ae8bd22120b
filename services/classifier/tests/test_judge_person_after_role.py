"""claims-judge-2026.12.14 (issue #28): a name right after a role is a person's.

The person check skipped capitalized runs made only of dictionary words ("Fleet Manager"), and
simplemma's dictionaries hold most first and last names ("Martin", "Greaves", "Lucas",
"Ferreira"): "Thornwick is led by CEO Martin Greaves" was two unknown names, pending, although a
fact gives the CEO's role to someone else. Now such a run is a person when a title is written
right before it ("CEO ...", "a presidente da X é ..."); after a role verb ("run by", "fundada
por": a company can follow one) or with nothing before it, a run of dictionary words is still
no person.

The brands and facts are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_classifier.domain.checks import people_and_places
from attesta_classifier.domain.model import Brand, Fact
from attesta_contracts.classification import CitationClass
from attesta_testing.judge_cases import judged_offline

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 6, tzinfo=UTC)
BRAND = Brand("cobwyn", "ws", "Cobwyn Boats", ("Cobwyn",), ("cobwyn.example",))
FACTS = [Fact(f"cobwyn-{i:02d}", "cobwyn", "manual", t, "https://cobwyn.example/", AT, "cobwyn.example", "8" * 64)
         for i, t in enumerate(["Cobwyn Boats — headquarters: Plymouth, England", "The CEO of Cobwyn is Ngozi Arkwright."])]


def offline(answer: str) -> CitationClass | None:
    return judged_offline(BRAND, FACTS, answer, f"Tell me about {BRAND.name}")


def test_dictionary_words_after_a_role_are_a_person() -> None:
    people, _ = people_and_places("Cobwyn is led by CEO Martin Greaves.", frozenset({"cobwyn"}))
    assert [(name, roles) for name, roles, _ in people] == [("martin greaves", frozenset({"leader"}))]
    # no role before them: dictionary words, as before
    people, _ = people_and_places("Cobwyn sells the Fleet Manager app.", frozenset({"cobwyn"}))
    assert people == []


@pytest.mark.parametrize(("answer", "expected"), [
    ("Cobwyn Boats, based in Plymouth, is led by CEO Martin Greaves.", CitationClass.CONFABULATED),
    ("O presidente da Cobwyn é Lucas Ferreira.", CitationClass.CONFABULATED),
    ("Cobwyn Boats, based in Plymouth, is led by CEO Ngozi Arkwright.", CitationClass.DESCRIPTIVE),
])
def test_a_person_in_a_role_the_facts_give_to_someone_else(answer: str, expected: CitationClass) -> None:
    assert offline(answer) is expected


def test_dictionary_words_after_a_role_verb_are_no_person() -> None:
    # a company can follow "run by", "fundada por": only a title makes dictionary words a name
    people, _ = people_and_places("Cobwyn is run by Fleet Capital Group.", frozenset({"cobwyn"}))
    assert people == []
    assert offline("Cobwyn Boats, based in Plymouth, is run by Fleet Capital Group.") is not CitationClass.CONFABULATED
