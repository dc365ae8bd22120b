"""Every judge case file keeps its own labelling rule: the prompt never counts as a mention (issue #28).

An answer that never names its brand (no name, alias or domain, in any case or accents) is ABSENT,
whatever it describes. The 2026-12-06h set broke this for 65 cases (answers written to follow the
prompt without naming the brand, labelled DESCRIPTIVE or CONFABULATED), which made its first
measurement say the judge's ABSENT was 22% precise; they were relabelled by this check. The test
reads labels and brand names only and prints a case id, never a case's text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attesta_classifier_eval import DATA_DIR
from attesta_classifier_eval.heldout import names_brand

CASE_FILES = sorted(p for p in Path(DATA_DIR).glob("*.json")
                    if "brands" in (doc := json.loads(p.read_text(encoding="utf-8"))) and "cases" in doc)


def test_the_judge_case_files_are_found() -> None:
    assert len(CASE_FILES) >= 15


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_every_label_but_absent_has_an_answer_that_names_the_brand(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    unnamed = [c["id"] for c in doc["cases"] if c["label"] != "ABSENT" and not names_brand(c, doc)]
    assert not unnamed, f"{path.name}: labelled as a mention, but the answer never names the brand: {unnamed}"


def test_an_answer_that_only_follows_the_prompt_does_not_name_the_brand() -> None:
    doc = {"brands": {"b": {"name": "Ostrava Lamps", "aliases": ["Ostrava"], "domains": ["ostravalamps.cz"]}}}
    assert not names_brand({"brand": "b", "answer": "A lamp maker from Brno, founded in 1994."}, doc)
    assert names_brand({"brand": "b", "answer": "OSTRAVA LAMPS makes lamps in Brno."}, doc)
    assert names_brand({"brand": "b", "answer": "See https://www.OstravaLamps.cz/about."}, doc)
