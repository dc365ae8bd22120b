"""The classifier's held-out sets stay out of the product (issue #28).

Whoever changes a rule, a threshold, a word list, a prompt or a model of the judge never opens a
``eval/classifier/*never_tune*.json`` file (eval/README.md). These tests are the mechanical half of
that rule: no distinctive token of a held-out file (invented brand and product names, people,
cities, rare words; ``attesta_classifier_eval.leaks`` says what counts) may appear in product code
or product data (services/*/src, libs/*/src, frontend/), and product code never imports the
evaluation package. A failure names the token and the product file, never a case.

The newest held-out set is ``heldout_2026-12-06j_never_tune.json`` (``heldout.CURRENT``, since
session 2026-12-06 #15, looked at zero times); the earlier uncontaminated ones (the 2026-12-06i set,
``heldout.FRESH_I``, current from session 2026-12-06 #14 and looked at in session #15; the 2026-12-06h set,
``heldout.FRESH_H``, current from session 2026-12-06 #13, looked at once in session #14 and spent; the 2026-12-06g set,
looked at once and spent for the next choice since session 2026-12-06 #13, the 2026-12-06f set,
looked at once and spent for the next choice since session 2026-12-06 #12, the 2026-12-05e set,
spent since session 2026-12-06 #9, the 2026-12-05d set, spent since session #6,
``heldout_2026-12-05_never_tune.json``, the 2026-12-05c set and the spent
``heldout_2026-12-04_fresh_never_tune.json``, ``heldout.FRESH``) are
in ``heldout.TOTALS_ONLY`` too and checked the same way. The three older held-out files are CONTAMINATED (issue #28: a rule named a product found only in
heldout3, comments quoted heldout's cities and a product): they no longer count, and the test only
tolerates the leaks already known for them (``KNOWN_CONTAMINATED``), so that a new one still fails.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from attesta_classifier_eval import DATA_DIR, heldout, leaks

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
# Tokens of the contaminated files found in the product when the files were moved out of it
# (2026-12-04, main at bbe2aca): the only leaks tolerated, and only for these files.
KNOWN_CONTAMINATED = {
    # domain/heuristic.py's docstring gives the file's product "Trilhar Serra" as an example;
    # domain/evidence.py's docstrings gave its cities ("Blumenau, SC", "Turku / Åbo")
    "heldout_never_tune.json": frozenset({"trilhar serra", "blumenau", "turku"}),
    # domain/judging.py named "Hollowbrook Reserve 2", a product found only in this file
    "heldout3_never_tune.json": frozenset({"hollowbrook", "hollowbrook reserve"}),
    "heldout2_never_tune.json": frozenset(),
}


def doc_of(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
    return doc


@pytest.mark.parametrize("name", heldout.TOTALS_ONLY)
def test_no_distinctive_token_of_an_uncontaminated_held_out_file_is_in_the_product(name: str) -> None:
    """The set that counts (``heldout.CURRENT``) and the earlier uncontaminated ones."""
    doc = doc_of(name)
    tokens = leaks.distinctive_tokens(doc)
    assert len(tokens) >= 50, f"{name} lost its distinctive tokens: the check would be empty"
    assert {leaks.normalized(b["name"]) for b in doc["brands"].values()} <= tokens
    found = leaks.find_leaks(tokens)
    assert not found, (
        f"held-out material of eval/classifier/{name} found in the product; if you tune "
        "the judge, do NOT open that file: take the token out and tell the lead (eval/README.md):\n"
        + "\n".join(f"{token!r} in {where}" for token, where in found))


def test_every_held_out_file_is_registered() -> None:
    """A new ``*never_tune*`` file is either the one that counts, the spent one or contaminated:
    none escapes the leak check above."""
    on_disk = {p.name for p in leaks.heldout_files()}
    assert on_disk == {*heldout.TOTALS_ONLY, *heldout.CONTAMINATED_FILES}
    assert heldout.CURRENT not in heldout.CONTAMINATED_FILES and heldout.FRESH not in heldout.CONTAMINATED_FILES


@pytest.mark.parametrize("name", heldout.CONTAMINATED_FILES)
def test_contaminated_files_leak_nothing_beyond_what_is_known(name: str) -> None:
    assert set(KNOWN_CONTAMINATED) == set(heldout.CONTAMINATED_FILES)
    found = leaks.find_leaks(leaks.distinctive_tokens(doc_of(name)))
    new = [(token, where) for token, where in found if token not in KNOWN_CONTAMINATED[name]]
    assert not new, f"new leak of the contaminated {name}:\n" + "\n".join(f"{t!r} in {w}" for t, w in new)
    if found:  # reported, not fatal: the file is spent already
        warnings.warn(f"{name} (contaminated) still leaks: "
                      + ", ".join(f"{t!r} in {w}" for t, w in found), stacklevel=1)


def test_the_scanner_finds_planted_tokens_and_names(tmp_path: Path) -> None:
    doc = doc_of(heldout.FRESH)
    tokens = leaks.distinctive_tokens(doc)
    rare = sorted(t for t in tokens if " " not in t)[0]
    brand = next(iter(doc["brands"].values()))["name"]  # a name of two words or more
    code = tmp_path / "services" / "classifier" / "src" / "pkg"
    code.mkdir(parents=True)
    (code / "ok.py").write_text("WORDS = {'solar', 'company', 'empresa', 'kayak'}\n", encoding="utf-8")
    (tmp_path / "frontend").mkdir()
    (tmp_path / "frontend" / "app.js").write_text("const hint = 'founded in';\n", encoding="utf-8")
    outside = tmp_path / "services" / "classifier" / "tests"  # tests and eval/ are not the product
    outside.mkdir(parents=True)
    (outside / "test_x.py").write_text(f"NAME = {rare!r}\n", encoding="utf-8")
    assert leaks.find_leaks(tokens, tmp_path) == []

    (code / "rules.py").write_text(f"PATTERN = r'(?i){rare.upper()}\\b'\n", encoding="utf-8")
    data = tmp_path / "libs" / "kb" / "src" / "data"
    data.mkdir(parents=True)
    spaced = "  ".join(brand.upper().split())  # re-cased and re-spaced, accents as written
    (data / "words.json").write_text(json.dumps({"brands": [spaced]}, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "frontend" / "app.js").write_text(f"// {leaks.fold(brand)}\n", encoding="utf-8")
    found = leaks.find_leaks(tokens, tmp_path)
    assert (rare, "services/classifier/src/pkg/rules.py") in found
    assert (leaks.normalized(brand), "libs/kb/src/data/words.json") in found
    assert (leaks.normalized(brand), "frontend/app.js") in found
    assert {where for _, where in found} == {"services/classifier/src/pkg/rules.py",
                                             "libs/kb/src/data/words.json", "frontend/app.js"}


def test_ordinary_kb_and_dev_words_are_never_distinctive() -> None:
    doc = {"brands": {"x": {"name": "Zqxmorvane Solar", "aliases": ["Zqxmorvane"], "domains": ["zqxmorvane.com.br"],
                            "source": "https://zqxmorvane.com.br/sobre",
                            "facts": [{"type": "structured",
                                       "text": "Zqxmorvane Solar — produtos: Painel Zqx Casa, Velnorex"}]}},
           "cases": [{"prompt": "Quem fabrica painéis em Pernambuco?",
                      "answer": "A Zqxmorvane Solar, fundada em 2014, tem funcionários e clientes; "
                                "the company also sells Velnorex."}]}
    assert leaks.distinctive_tokens(doc) == {"zqxmorvane", "zqxmorvane solar", "painel zqx casa"}


def test_product_code_never_reaches_evaluation_data() -> None:
    """Nothing in a product tree imports the evaluation package or holds a case file, and the
    classifier's wheel has no data package any more."""
    importing = re.compile(r"^\s*(from|import)\s+attesta_classifier_eval\b", re.MULTILINE)
    case_file = re.compile(r"(never_tune|judge_dev|labeled_runs|heldout)[^/]*\.jsonl?$")
    files = leaks.product_files(ROOT)
    assert files
    assert not [p for p in files if case_file.search(p.name)]
    assert not [p for p in files if p.suffix == ".py" and importing.search(p.read_text(encoding="utf-8"))]
    assert not (ROOT / "services" / "classifier" / "src" / "attesta_classifier" / "data").exists()
