"""The gate's pair reader (issue #24, feature spec 3): a sentence-transformers ``CrossEncoder``
folder on disk, trained on each machine by ``attesta answer train-reader``
(``attesta_answer.training.pair_reader``; ``scripts/up.sh`` runs it in the background once the
reranker it starts from is trained). Never downloaded.

The gate artefact pins the reader's RECIPE (training config, base model identity, training
data's SHA-256), not its weights: a model trained on each machine has no bytes to pin. The
folder's manifest (``attesta_pair_reader.json``) records the recipe it was trained from and the
SHA-256 of the weights it wrote; a folder is used only when its recipe is the artefact's and its
weights are the ones its manifest records (``ReaderUnusable`` otherwise).

Torch and sentence-transformers load only when a reader is loaded: the answer service's image
has no torch, and there the reader is off (``torch_available``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attesta_answer.domain.grounding import GateArtefactInvalid, ReaderSpec, recipe_sha256
from attesta_platform.logs import get_logger

log = get_logger("attesta.answer.reader")

WEIGHTS = "model.safetensors"
MANIFEST = "attesta_pair_reader.json"
BUILD_COMMAND = "attesta answer train-reader --base <the reranker's folder>"


class ReaderUnusable(GateArtefactInvalid):
    """The reader's folder is missing, unreadable, of another recipe, or its weights are not
    the ones its manifest records."""


def cache_root() -> Path:
    return Path(os.environ.get("ATTESTA_CACHE_DIR") or Path.home() / ".cache" / "attesta")


def default_reader_dir(recipe_sha: str) -> Path:
    """Where ``train-reader`` writes a recipe's reader and the service looks for it: one folder
    per recipe, shared by every clone on the machine."""
    return cache_root() / "pair-reader" / recipe_sha[:16]


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None and \
        importlib.util.find_spec("sentence_transformers") is not None


def weights_sha256(folder: Path) -> str:
    digest = hashlib.sha256()
    with (folder / WEIGHTS).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_folder(folder: Path, spec: ReaderSpec) -> dict[str, Any]:
    """The folder's manifest, when the folder holds a reader of ``spec``'s recipe with the
    weights its manifest records; else ``ReaderUnusable`` saying why."""
    manifest = read_manifest(folder)
    if manifest is None or not (folder / WEIGHTS).is_file():
        raise ReaderUnusable(f"no pair reader at {folder}: build it with `{BUILD_COMMAND}`")
    recipe = manifest.get("recipe")
    got = recipe_sha256(recipe) if isinstance(recipe, dict) else None
    if got != spec.recipe_sha256 or manifest.get("recipe_sha256") != got:
        raise ReaderUnusable(f"pair reader {folder}: trained from recipe {str(got)[:12]}…, the gate "
                             f"artefact pins recipe {spec.recipe_sha256[:12]}… ({spec.version})")
    sha = weights_sha256(folder)
    if sha != manifest.get("sha256"):
        raise ReaderUnusable(f"pair reader {folder}: its weights ({sha[:12]}…) are not the ones its "
                             f"manifest records ({str(manifest.get('sha256'))[:12]}…)")
    return manifest


class CrossEncoderPairReader:
    """One raw logit per (question, passage) (the gate applies the sigmoid)."""

    def __init__(self, folder: Path, spec: ReaderSpec) -> None:
        self.manifest = check_folder(folder, spec)
        # torch loads only when a reader is loaded: the answer service starts and serves without it.
        import torch
        from sentence_transformers import CrossEncoder

        self._identity = torch.nn.Identity()
        self._model = CrossEncoder(str(folder), num_labels=1, max_length=spec.max_length, device="cpu",
                                   activation_fn=self._identity, local_files_only=True)

    def logits(self, question: str, passages: Sequence[str]) -> Sequence[float] | None:
        if not passages:
            return []
        out = self._model.predict([(question, p) for p in passages], batch_size=32,
                                  activation_fn=self._identity, show_progress_bar=False)
        return [float(x) for x in out]


class WatchedPairReader:
    """A reader not on this machine yet (``train-reader`` runs in the background, as the
    reranker's training does): no scores (the gate judges without it) until its folder appears;
    then it is loaded once in a background thread and used from then on. The folder is looked
    at, at most every ``poll_s``, when a question asks for scores; a folder that fails the
    checks is not retried until it changes."""

    def __init__(self, folder: Path, spec: ReaderSpec, poll_s: float = 30.0) -> None:
        self.folder, self.spec, self.poll_s = folder, spec, poll_s
        self.loaded: CrossEncoderPairReader | None = None
        self._next_look = 0.0
        self._failed_mtime: float | None = None
        self._loading = threading.Lock()

    def logits(self, question: str, passages: Sequence[str]) -> Sequence[float] | None:
        if self.loaded is not None:
            return self.loaded.logits(question, passages)
        now = time.monotonic()
        if now >= self._next_look and not self._loading.locked():
            self._next_look = now + self.poll_s
            manifest = self.folder / MANIFEST
            if manifest.exists() and manifest.stat().st_mtime != self._failed_mtime:
                threading.Thread(target=self._load, name="pair-reader-load", daemon=True).start()
        return None

    def _load(self) -> None:
        with self._loading:
            if self.loaded is not None:  # another look started a load that has finished
                return
            mtime = (self.folder / MANIFEST).stat().st_mtime
            try:
                started = time.monotonic()
                self.loaded = CrossEncoderPairReader(self.folder, self.spec)
                log.info("pair reader loaded: English questions judged with it", folder=str(self.folder),
                         reader=self.spec.version, seconds=round(time.monotonic() - started, 1))
            except Exception as exc:  # noqa: BLE001 - without a reader the gate judges as before
                self._failed_mtime = mtime
                log.warning("pair reader not used: the gate judges without it", folder=str(self.folder),
                            reader=self.spec.version, error=repr(exc))
