"""The sparse index: BM25 (bm25s, English stop words, Snowball stemmer) over whole cards.

Cards are short (<= 250 words), so BM25 scores the whole card (title + text); one document per
card means no dedup is needed on this side. bm25s has no incremental update: the index is
rebuilt from the card catalog (50k cards take a few seconds) into a folder and read back
memory-mapped, so its arrays live in the page cache rather than the heap. A build or load
failure leaves the index *unavailable* with the reason: retrieval then takes the
``dense_only`` path instead of failing.

A misspelled question word is matched to the KB's own vocabulary (``domain.spelling``): the
closest word the cards contain is added to the query, so one slip in a name keeps its card.
A name spelled letter by letter and a number written in words are added whole and in digits
(``attesta_kb.written_forms``), the forms the cards use.
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import Stemmer

from attesta_retrieval.domain.spelling import corrections, vocabulary
from attesta_kb.written_forms import query_additions

if TYPE_CHECKING:  # bm25s and PyStemmer ship no type hints: their names are Any to mypy
    import bm25s


class SparseUnavailable(Exception):
    pass


def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


class SparseIndex:
    def __init__(self, directory: str | Path | None, enabled: bool = True) -> None:
        self._dir = Path(directory) if directory else None
        self._enabled = enabled
        self._lock = threading.Lock()
        self._retriever: bm25s.BM25 | None = None
        self._ids: list[str] = []
        self._vocab: Counter[str] = Counter()
        self._vocab_list: list[str] = []
        self._reason: str | None = ("disabled by configuration (ATTESTA_RETRIEVAL_SPARSE_ENABLED"
                                    "=false)") if not enabled else "not built yet"
        self._stem = _stemmer()

    @property
    def unavailable_reason(self) -> str | None:
        return self._reason

    def _tokenize(self, texts: list[str], ids: bool) -> Any:  # bm25s's Tokenized or lists
        import bm25s  # heavy (about 0.7 s, scipy): loaded when an index is built, not at import

        return bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, show_progress=False,
                              return_ids=ids)

    def rebuild(self, cards: list[tuple[str, str]]) -> None:
        """(card_id, title + text) pairs -> a fresh index that replaces the current one."""
        if not self._enabled:
            return
        import bm25s  # heavy (about 0.7 s, scipy): loaded when an index is built, not at import

        try:
            ids = [cid for cid, _ in cards]
            vocab = vocabulary(t for _, t in cards)
            retriever = bm25s.BM25()
            if cards:
                retriever.index(self._tokenize([t for _, t in cards], ids=True), show_progress=False)
                if self._dir is not None:
                    retriever = self._save_and_load(retriever, ids)
        except Exception as exc:  # noqa: BLE001 - any failure makes the side unavailable, loudly
            with self._lock:
                self._retriever, self._ids = None, []
                self._reason = f"sparse index build failed: {type(exc).__name__}: {exc}"
            raise SparseUnavailable(self._reason) from exc
        with self._lock:
            self._retriever, self._ids, self._reason = (retriever if cards else None), ids, None
            self._vocab, self._vocab_list = vocab, list(vocab)

    def _save_and_load(self, retriever: bm25s.BM25, ids: list[str]) -> bm25s.BM25:
        import bm25s  # heavy (about 0.7 s, scipy): loaded when an index is built, not at import

        assert self._dir is not None
        self._dir.mkdir(parents=True, exist_ok=True)
        target = self._dir / f"bm25-{uuid.uuid4().hex[:8]}"
        retriever.save(str(target))
        (target / "card_ids.json").write_text(json.dumps(ids))
        loaded = bm25s.BM25.load(str(target), mmap=True)
        # Older builds are not read any more (the mapped arrays of the new one are open).
        for old in self._dir.glob("bm25-*"):
            if old != target:
                shutil.rmtree(old, ignore_errors=True)
        return loaded

    def search(self, question: str, n: int) -> list[tuple[str, float]]:
        """(card_id, BM25 score) best first, positive scores only."""
        with self._lock:
            retriever, ids, reason = self._retriever, self._ids, self._reason
            vocab, vocab_list = self._vocab, self._vocab_list
        if reason is not None:
            raise SparseUnavailable(reason)
        if retriever is None or not ids:
            return []
        question = " ".join([question, *query_additions(question)])
        fixes = corrections(question, vocab, vocab_list)
        if fixes:
            question = f"{question} {' '.join(fixes)}"
        tokens = self._tokenize([question], ids=False)
        if not tokens or not tokens[0]:
            return []
        docs, scores = retriever.retrieve(tokens, k=min(n, len(ids)), show_progress=False,
                                          n_threads=1)
        return [(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
