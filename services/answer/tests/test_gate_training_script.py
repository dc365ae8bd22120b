"""benchmarks/train_grounding_gate.py's bookkeeping: which held-out splits it reads, the command
it records in the artefact, the report it writes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "train_grounding_gate.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("train_grounding_gate_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_the_spent_splits_are_read_and_the_one_that_counts_is_not(script):
    assert "heldout_2026-12-06d_never_tune.json" in script.SPENT  # spent in session #13
    names = [p.name for p in script.HAND_DEV]
    assert not [n for n in names if "never_tune" in n and n not in script.SPENT]
    assert not [n for n in names if "06e" in n]  # the split that counts now


def test_styled_questions_all_go_on_the_full_path_and_leave_the_sample_as_it_was(script):
    hand = [{"id": "h1", "source": "hand"}]
    plain = [{"id": f"gen-en-{i:04d}", "source": "generated"} for i in range(50)]
    styled = [{"id": f"sty-en-{i:04d}", "source": "generated"} for i in range(5)]
    before = script.full_path_questions(hand + plain, 10)
    after = script.full_path_questions(hand + plain + styled, 10)
    assert after == before | {q["id"] for q in styled}


def test_the_recorded_command_leaves_out_local_state_with_its_value(script):
    argv = ["--reranker-dir", "/m/r", "--state-dir", ".state/x", "--cache=.state/c.jsonl", "--cache", "/tmp/c",
            "--threshold-cv", "file", "--out", "/tmp/o.json"]
    command = script.recorded_command(argv)
    assert command.endswith("train_grounding_gate.py --reranker-dir /m/r --threshold-cv file --out /tmp/o.json")
    assert "--state-dir" not in command and "--cache" not in command and ".state/" not in command


def test_the_report_keeps_summaries_not_every_row(script):
    rows = [{"id": "q1", "p": 0.9, "style": "lay", "answerable": True},
            {"id": "q2", "p": 0.2, "style": "lay", "answerable": True},
            {"id": "q3", "p": 0.95, "style": "unanswerable", "answerable": False}]
    report = {"when": "now", "groups": {"en/full": {"threshold": 0.5, "coef": {}, "oof_hand": rows}}}
    written = json.loads(script.readable(report))
    group = written["groups"]["en/full"]
    assert "oof_hand" not in group
    assert group["oof_hand_answered_by_style"] == {"lay/answerable": [1, 2], "unanswerable/unanswerable": [1, 1]}
    assert json.loads(script.readable(written)) == written  # a summarised report stays as it is
    assert report["groups"]["en/full"]["oof_hand"] == rows  # the run's own report is not changed
