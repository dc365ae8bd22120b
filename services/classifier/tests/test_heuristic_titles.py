"""heuristic-2026.12.4 (issue #28): a list or a table under the brand's name is no sure ECHO.

The heuristic decides ECHO before the judge only when the answer's sentences about the brand carry
nothing beyond its names, the prompt's words and "I don't know" vocabulary. Before .4 it read only
the sentences that name the brand (or say "it"): under a title line that names it ("**Brand**",
"## Brand", "| | Brand |", "Brand:") the bullets and rows say what they say about the brand
without naming it, and were never read, so a fact sheet was a sure ECHO. Now every line under
such a title is read too; an answer whose lines under the title only hedge is still ECHO.

The brands are invented for these tests; none comes from an evaluation set."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.heuristic import HEURISTIC_VERSION, decide
from attesta_classifier.domain.model import Brand, Run
from attesta_contracts.classification import CitationClass

pytestmark = pytest.mark.unit

LOOMS = Brand("tarvessa", "ws", "Tarvessa Looms", ("Tarvessa",), ("tarvessa.example",))
PROMPT = "Give me a quick summary of Tarvessa Looms."


def cls(answer: str) -> CitationClass | None:
    d = decide(Run("r", "ws", "e", "m", PROMPT, answer, "0" * 64), LOOMS)
    return d.citation_class if d else None


@pytest.mark.parametrize("answer", [
    "**Tarvessa Looms**\n- Workshop: Galway\n- Since 1962\n- Makes: tweed blankets",
    "## Tarvessa Looms\n- **Weavers:** eleven\n- **Wool:** from local sheep",
    "| | Tarvessa Looms |\n|---|---|\n| Founded | 1962 |\n| Based in | Galway |",
    "Tarvessa Looms:\n\n- blankets woven on hand looms\n- sold in Dublin shops",
    "Resumo da Tarvessa:\n- Sede: Galway\n- Desde 1962",
])
def test_lines_under_a_title_naming_the_brand_go_to_the_judge(answer: str) -> None:
    assert cls(answer) is None, answer


@pytest.mark.parametrize("answer", [
    "**Tarvessa Looms**\n- I don't have specific information about it.\n- Please check their official website.",
    "I'm not familiar with Tarvessa Looms.",
])
def test_titles_over_hedges_stay_echo(answer: str) -> None:
    assert cls(answer) is CitationClass.ECHO, answer


def test_the_version_says_the_rule_changed() -> None:
    assert HEURISTIC_VERSION == "heuristic-2026.12.4"
