"""Shared fixtures of the retrieval tests: the real embedder (loaded once), a small real KB
slice, and a tiny cross-encoder trained in the session (a few steps: CI has a time cap, so the
tests never depend on the big cached one)."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class HashingEmbedder:
    """Deterministic bag-of-words vectors: for the bookkeeping tests of the index, where what
    is measured is *whether* embedding happens, not its quality. Counts its calls."""

    name = "hashing-64"

    def __init__(self) -> None:
        self.texts_embedded = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture(scope="session")
def hashing_embedder():
    return HashingEmbedder


@pytest.fixture(scope="session")
def embedder():
    from attesta_retrieval.adapters.embedder import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def kb_slice():
    """~45 real cards: everything that mentions Velnorex/Velnorax (the near misses) plus a
    spread of others."""
    from attesta_kb import load_cards

    cards = load_cards()
    picked = [c for c in cards if "Velnor" in c["text"]]
    picked += [c for c in cards[::20] if c not in picked]
    return picked


@pytest.fixture(scope="session")
def tiny_reranker_dir(tmp_path_factory):
    from attesta_retrieval.service_layer.reranker_training import TrainingConfig, train

    out = tmp_path_factory.mktemp("reranker") / "tiny"
    train(TrainingConfig(max_steps=2, max_queries=6, questions_per_step=2, group_size=4,
                         max_length=96, generated_per_card=1, reverse_lookups=4, comparisons=4),
          out, progress=False)
    return out
