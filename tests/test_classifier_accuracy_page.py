"""docs/classifier-accuracy.md keeps its prose across ``benchmarks/classifier_accuracy.py --write``:
the script rewrites only the blocks between its markers (nothing here evaluates anything)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.loading import load_script

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = ("facts", "table", "timing", "llm_judge", "errors")


@pytest.fixture(scope="module")
def accuracy():
    return load_script("attesta_classifier_accuracy_bench", ROOT / "benchmarks" / "classifier_accuracy.py")


def _between(page: str, accuracy, name: str) -> str:
    return page.split(accuracy.BEGIN.format(name=name))[1].split(accuracy.END.format(name=name))[0]


def test_the_page_has_each_generated_block_once_and_a_write_changes_only_them(accuracy):
    page = accuracy.DOC.read_text(encoding="utf-8")
    current = {name: _between(page, accuracy, name) for name in BLOCKS}
    # Block markers end their line, inline ones (a figure inside a sentence) do not.
    assert {n for n, text in current.items() if text.startswith("\n")} == {"table", "llm_judge", "errors"}
    same = {n: t.strip("\n") if t.startswith("\n") else t for n, t in current.items()}
    assert accuracy.replace_blocks(page, same) == page

    new = accuracy.replace_blocks(page, {name: f"NEW {name}" for name in BLOCKS})
    for name in BLOCKS:
        assert _between(new, accuracy, name).strip("\n") == f"NEW {name}"
    emptied = dict.fromkeys(BLOCKS, "")
    # Everything outside the markers, the held-out figures included, is as it was.
    assert accuracy.replace_blocks(new, emptied) == accuracy.replace_blocks(page, emptied)
    assert "## Held-out discipline" in accuracy.replace_blocks(page, emptied)


def test_a_missing_or_doubled_marker_is_refused(accuracy):
    begin, end = accuracy.BEGIN.format(name="table"), accuracy.END.format(name="table")
    for page in ("no markers", f"{begin}\nx\n{end}\n{begin}\ny\n{end}", f"{end}x{begin}"):
        with pytest.raises(ValueError, match="needs exactly one"):
            accuracy.replace_blocks(page, {"table": "t"})
