"""The grounding gate's artefact on disk: a small JSON of coefficients, thresholds, the KB's
word statistics, the feature spec, its version and what it was trained on.

The shipped one is ``attesta_answer/grounding_gate.json`` (built by
``benchmarks/train_grounding_gate.py``, committed); ``ATTESTA_ANSWER_GATE_PATH`` points the
service at another. A missing, unreadable or mismatched artefact is a start-up error
(``GateArtefactInvalid``), never a silent fallback to another rule.

An artefact that names a pair reader (feature spec 3) gets it attached here
(``adapters/pair_reader.py``), when the reader's folder was trained from the recipe the artefact
pins: ``reader="on"`` requires it (missing, another recipe, or no torch: start-up error);
``"auto"`` (the service's default) loads it when it is there, watches for it when it is not
trained yet (it is used from the moment it appears) and otherwise serves the artefact's
reader-less models, saying which in the log; ``"off"`` never loads it.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Literal

from attesta_answer.adapters.pair_reader import (
    CrossEncoderPairReader, ReaderUnusable, WatchedPairReader, default_reader_dir, read_manifest,
    torch_available)
from attesta_answer.domain.grounding import GateArtefactInvalid, GateModel
from attesta_platform.logs import get_logger

log = get_logger("attesta.answer.gate")

SHIPPED = "grounding_gate.json"
BUILD_COMMAND = "flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/train_grounding_gate.py"


def shipped_path() -> Path:
    return Path(str(resources.files("attesta_answer") / SHIPPED))


def load_gate(path: Path | None = None, *, reader: Literal["auto", "on", "off"] = "off",
              reader_dir: Path | None = None) -> GateModel:
    path = path or shipped_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GateArtefactInvalid(f"no grounding artefact at {path}: build it with `{BUILD_COMMAND}`") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GateArtefactInvalid(f"grounding artefact {path} is unreadable: {exc}") from exc
    try:
        gate = GateModel.from_dict(data)
    except GateArtefactInvalid as exc:
        raise GateArtefactInvalid(f"{path}: {exc}") from exc
    return gate if reader == "off" else attach_reader(gate, reader, reader_dir)


def attach_reader(gate: GateModel, mode: Literal["auto", "on"], folder: Path | None) -> GateModel:
    """``gate`` with the pair reader its artefact pins (see the module docstring)."""
    spec = gate.reader_spec
    if spec is None:
        if mode == "on":
            raise GateArtefactInvalid(f"gate {gate.version} names no pair reader (ATTESTA_ANSWER_READER=on)")
        return gate
    folder = folder or default_reader_dir(spec.recipe_sha256)
    where = {"folder": str(folder), "reader": spec.version, "gate": gate.version}
    if not torch_available():
        if mode == "on":
            raise ReaderUnusable("ATTESTA_ANSWER_READER=on, but torch / sentence-transformers are not installed")
        log.warning("pair reader off (no torch here): the gate judges without it", **where)
        return gate
    if mode == "auto" and read_manifest(folder) is None:
        log.warning("pair reader not trained on this machine yet: the gate judges without it until "
                    "its folder appears", **where)
        return gate.with_reader(WatchedPairReader(folder, spec))
    try:
        started = time.monotonic()
        reader = CrossEncoderPairReader(folder, spec)
    except ReaderUnusable as exc:
        if mode == "on":
            raise
        log.warning("pair reader not used: the gate judges without it", error=str(exc), **where)
        return gate
    log.info("pair reader loaded: English questions judged with it", seconds=round(time.monotonic() - started, 1),
             weights_sha256=reader.manifest.get("sha256"), **where)
    return gate.with_reader(reader)
