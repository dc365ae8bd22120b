"""The dense side for questions in other languages (issue #24).

The bundled MiniLM embedder and the reranker built on it read English only: a Portuguese
question lands nowhere near the English card that answers it. For a question
``domain.language.detect`` finds to be in another language, retrieval swaps the dense side for
a multilingual encoder (``adapters.multilingual.E5Encoder``) over the same cards, keeps BM25
(the KB's invented names are the same in every language) and RRF, and scores the returned
cards' sentences with the same multilingual encoder; English questions are served exactly as
before. Until the cards' multilingual vectors are built (in the background after start-up,
kept on disk by text hash), every question is served the English way.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from attesta_platform.logs import get_logger
from attesta_retrieval.domain.language import Classifier, detect, name_words
from attesta_retrieval.domain.model import Card
from attesta_retrieval.service_layer.evidence import SentenceEvidence

log = get_logger("attesta.retrieval")


class MultilingualEncoder(Protocol):
    name: str
    dimension: int

    def query(self, texts: list[str]) -> NDArray[np.float32]: ...

    def passage(self, texts: list[str]) -> NDArray[np.float32]: ...


def card_passage(card: Card) -> str:
    return f"{card.title}: {card.text}"


class CachedPassages:
    """An encoder's passage vectors, remembered by the text's SHA-256 (in memory, and in one
    ``.npy`` pair on disk when ``path`` is set), so a restart embeds nothing it already did."""

    def __init__(self, encoder: MultilingualEncoder, path: Path | None) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self.path = path
        self._lock = threading.Lock()
        self._vectors: dict[str, NDArray[np.float32]] = {}
        if path is not None and path.with_suffix(".keys.npy").exists() and path.with_suffix(".npy").exists():
            try:
                keys = np.load(path.with_suffix(".keys.npy"))
                matrix = np.load(path.with_suffix(".npy"))
                if matrix.shape == (len(keys), encoder.dimension):
                    self._vectors = {str(k): matrix[i] for i, k in enumerate(keys)}
            except (OSError, ValueError) as exc:  # a broken cache is rebuilt, not fatal
                log.warning("multilingual vector cache unreadable: rebuilding", path=str(path), error=repr(exc))

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        keys = [self._key(t) for t in texts]
        with self._lock:
            todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}.items())
        if todo:
            fresh = self.encoder.passage([t for _, t in todo])
            with self._lock:
                for (k, _), v in zip(todo, fresh, strict=True):
                    self._vectors[k] = v
        with self._lock:
            rows = [self._vectors[k] for k in keys]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, self.encoder.dimension), np.float32)

    def save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            keys = np.array(list(self._vectors), dtype="U64")
            matrix = np.stack(list(self._vectors.values())) if len(keys) else np.zeros((0, self.encoder.dimension))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        np.save(self.path.with_suffix(".npy"), matrix.astype(np.float32))
        np.save(self.path.with_suffix(".keys.npy"), keys)


class MultilingualSide:
    def __init__(self, encoder: MultilingualEncoder, classify: Classifier,
                 cache_path: Path | None = None) -> None:
        self.encoder = encoder
        self.classify = classify
        self.passages = CachedPassages(encoder, cache_path)
        self.evidence = SentenceEvidence(self.passages)
        self.names: frozenset[str] = frozenset()
        self._ids: list[str] = []
        self._matrix: NDArray[np.float32] = np.zeros((0, encoder.dimension), dtype=np.float32)
        self.ready = False

    def language(self, question: str) -> str:
        return detect(question, self.classify, self.names)

    def warm(self, cards: list[Card]) -> None:
        """Names for the language check, then the cards' and their sentences' vectors; ready
        when done."""
        self.names = name_words(c.title for c in cards)
        matrix = self.passages.embed([card_passage(c) for c in cards])
        self.evidence.warm(cards)
        self._ids, self._matrix = [c.card_id for c in cards], matrix
        self.passages.save()
        self.ready = True
        log.info("multilingual side ready", cards=len(cards), encoder=self.encoder.name)

    def query_vector(self, question: str) -> NDArray[np.float32]:
        return np.asarray(self.encoder.query([question])[0], dtype=np.float32)

    def dense(self, vector: NDArray[np.float32], n: int) -> list[tuple[str, float]]:
        """The ``n`` cards closest to ``vector`` (cosine), best first."""
        if not self._ids:
            return []
        scores = self._matrix @ vector
        top = np.argsort(-scores, kind="stable")[:n]
        return [(self._ids[i], float(scores[i])) for i in top]
