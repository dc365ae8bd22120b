"""Shared fixtures of the retrieval tests: the real embedder (loaded once), a small real KB
slice, and a tiny cross-encoder trained in the session (a few steps: CI has a time cap, so the
tests never depend on the big cached one); per test module, the slice indexed for real and the
tiny cross-encoder loaded in a reranker slot."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from attesta_retrieval.domain.model import Card, card_content_sha256

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


def _as_cards(raw: list[dict]) -> list[Card]:
    """The KB's card dicts as the index's cards."""
    return [Card(c["card_id"], c["title"], c["text"], c.get("source"), c.get("metadata"),
                 card_content_sha256(c)) for c in raw]


@pytest.fixture(scope="session")
def as_cards():
    """``as_cards(raw dicts)`` -> the index's Card objects."""
    return _as_cards


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


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder, kb_slice):
    """The KB slice in a real index (embedded Chroma, bm25s), one per test module: a module's
    tests may change what a later module would read."""
    # Chroma and bm25s load only for the tests that ask for an index (every run reads conftest).
    from attesta_retrieval.adapters.dense_store import DenseStore, make_client
    from attesta_retrieval.adapters.sparse import SparseIndex
    from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex

    root = tmp_path_factory.mktemp("kb-slice")
    dense = DenseStore(make_client(root / "chroma", None), "kb-slice")
    index = KbIndex(dense, embedder, SparseIndex(root / "bm25"), chunk_words=60, overlap_words=15)
    index.apply([CardEvent(c.card_id, 0, i, c) for i, c in enumerate(_as_cards(kb_slice))])
    index.rebuild_sparse()
    return index


@pytest.fixture(scope="module")
def loaded_reranker(tiny_reranker_dir):
    """A reranker slot holding the session's tiny cross-encoder (its queue is the module's)."""
    # torch loads only for the tests that ask for a reranker.
    from attesta_retrieval.adapters.reranker import Reranker
    from attesta_retrieval.service_layer.retrieval import RerankerSlot

    slot = RerankerSlot()
    slot.set(Reranker(tiny_reranker_dir))
    return slot
