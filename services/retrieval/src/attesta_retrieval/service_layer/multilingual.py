"""The dense side for questions in other languages (issue #24).

The bundled MiniLM embedder and the reranker built on it read English only: a Portuguese
question lands nowhere near the English card that answers it. For a question
``domain.language.detect`` finds to be in another language, retrieval swaps the dense side for
a multilingual encoder (``adapters.multilingual.E5Encoder``) over the same cards, keeps BM25
(the KB's invented names are the same in every language) and RRF, and scores the returned
cards' sentences with the same multilingual encoder; English questions are served exactly as
before. Until the cards' multilingual vectors are built (in the background after start-up,
kept on disk by text hash), every question is served the English way.

Where they are kept: next to the models, outside the clone (``<cache dir>/multilingual/<model>/
<KB hash>.npz``; the cache dir is ``ATTESTA_CACHE_DIR``, by default ``~/.cache/attesta``). The
file is named by the encoder's name and version and by the hash of the texts it embeds, so every
clone and every instance on a machine shares it safely: a fresh clone of the same KB embeds
nothing (the first build costs ~12 min of one core), a changed KB or model gets a file of its
own. Writes are whole-file renames, so a reader never sees half of another writer's file.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import zipfile
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


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_file(cache_dir: Path, encoder: MultilingualEncoder, texts: list[str]) -> Path:
    """The vector file of ``texts`` (the KB's card passages) embedded by ``encoder``:
    ``<cache_dir>/multilingual/<name>-<dimension>/<sha256 of the texts' hashes, sorted>[:16]``
    (``.npz``). Name and dimension say which model (and version) made the vectors."""
    kb = hashlib.sha256("\n".join(sorted({_text_key(t) for t in texts})).encode()).hexdigest()
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{encoder.name}-{encoder.dimension}")
    return cache_dir / "multilingual" / model / kb[:16]


class CachedPassages:
    """An encoder's passage vectors, remembered by the text's SHA-256 (in memory, and in one
    ``.npz`` file on disk when ``path`` is set), so a restart embeds nothing it already did."""

    def __init__(self, encoder: MultilingualEncoder, path: Path | None) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self._lock = threading.Lock()
        self._vectors: dict[str, NDArray[np.float32]] = {}
        self.path: Path | None = None
        self.use(path)

    def use(self, path: Path | None) -> None:
        """Keep the vectors in ``path`` (``.npz``) from now on, adding those it already holds."""
        self.path = path
        if path is None or not path.with_suffix(".npz").exists():
            return
        try:
            with np.load(path.with_suffix(".npz")) as stored:
                keys, matrix = stored["keys"], stored["vectors"]
            if matrix.shape == (len(keys), self.encoder.dimension):
                with self._lock:
                    for i, k in enumerate(keys):
                        self._vectors.setdefault(str(k), matrix[i])
        # A broken or foreign file is rebuilt, not fatal.
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.warning("multilingual vector cache unreadable: rebuilding", path=str(path), error=repr(exc))

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        keys = [_text_key(t) for t in texts]
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
        target = self.path.with_suffix(".npz")
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the target, then renamed over it: other clones and instances share the
        # file, and a rename is all or nothing, so a reader gets one writer's whole file.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as sink:
                np.savez(sink, keys=keys, vectors=matrix.astype(np.float32))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class MultilingualSide:
    def __init__(self, encoder: MultilingualEncoder, classify: Classifier,
                 cache_dir: Path | None = None) -> None:
        self.encoder = encoder
        self.classify = classify
        self.cache_dir = cache_dir  # None: vectors in memory only
        self.passages = CachedPassages(encoder, None)
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
        texts = [card_passage(c) for c in cards]
        if self.cache_dir is not None:
            self.passages.use(cache_file(self.cache_dir, self.encoder, texts))
        matrix = self.passages.embed(texts)
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
