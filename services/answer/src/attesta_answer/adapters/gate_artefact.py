"""The grounding gate's artefact on disk: a small JSON of coefficients, thresholds, the KB's
word statistics, the feature spec, its version and what it was trained on.

The shipped one is ``attesta_answer/grounding_gate.json`` (built by
``benchmarks/train_grounding_gate.py``, committed); ``ATTESTA_ANSWER_GATE_PATH`` points the
service at another. A missing, unreadable or mismatched artefact is a start-up error
(``GateArtefactInvalid``), never a silent fallback to another rule.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from attesta_answer.domain.grounding import GateArtefactInvalid, GateModel

SHIPPED = "grounding_gate.json"
BUILD_COMMAND = "flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/train_grounding_gate.py"


def shipped_path() -> Path:
    return Path(str(resources.files("attesta_answer") / SHIPPED))


def load_gate(path: Path | None = None) -> GateModel:
    path = path or shipped_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GateArtefactInvalid(f"no grounding artefact at {path}: build it with `{BUILD_COMMAND}`") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GateArtefactInvalid(f"grounding artefact {path} is unreadable: {exc}") from exc
    try:
        return GateModel.from_dict(data)
    except GateArtefactInvalid as exc:
        raise GateArtefactInvalid(f"{path}: {exc}") from exc
