"""The cross-encoder reranker: any sentence-transformers CrossEncoder folder on disk.

The raw logit is kept (``activation_fn=Identity``): the answer service maps it to 0-100 with
``round(100 * sigmoid(logit))`` itself, and only on the ``full`` path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

RERANK_MAX_LENGTH = 256  # word pieces per (question, card) pair for a model we did not train


def is_cross_encoder_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and any(
        (path / f).is_file() for f in ("model.safetensors", "pytorch_model.bin"))


class Reranker:
    def __init__(self, path: str | Path, max_length: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # heavy: torch and sentence-transformers load when a reranker is built, not at import
        import torch
        from sentence_transformers import CrossEncoder

        self.path = Path(path)
        if not is_cross_encoder_dir(self.path):
            raise FileNotFoundError(f"no CrossEncoder model in {self.path}")
        if max_length is None:  # what it was trained with, when we trained it
            try:
                manifest = json.loads((self.path / "attesta_reranker.json").read_text())
                max_length = int(manifest["config"]["max_length"])
            except (OSError, ValueError, KeyError, TypeError):
                max_length = RERANK_MAX_LENGTH
        self.max_length = max_length
        self._model = CrossEncoder(str(self.path), num_labels=1, max_length=max_length,
                                   device="cpu", activation_fn=torch.nn.Identity(),
                                   local_files_only=True)
        self._model.model.eval()

    def logits(self, question: str, passages: list[str]) -> NDArray[np.float32]:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        out = self._model.predict([(question, p) for p in passages], batch_size=32,
                                  show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32).reshape(-1)
