"""Keeping the indexes equal to the KB topic: apply card events, remember what was embedded.

Every retrieval instance replays the compacted ``kb.cards.v1`` from the beginning at start-up
(its own reader, no shared consumer group: a shared group would split the cards between
instances). What makes this cheap and resumable is the dense store: each chunk remembers its
card's ``content_sha256``, so an unchanged card costs a dictionary lookup, a changed card is
re-embedded, and a card that vanished from the topic while we were down (compaction after a
delete) is swept at the end of the replay.

Ordering: Kafka keeps per-key order and a card id is the key, so the last event read for a
card is its current version. Within one process an event at an offset at or below the one
already applied for that card (a redelivery, a stale copy) is ignored, and a batch is
coalesced to the latest event per card, so duplicates and reorderings inside a batch leave
the same index as the compacted topic would.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from attesta_platform.logs import get_logger
from attesta_retrieval.adapters.sparse import SparseIndex, SparseUnavailable
from attesta_retrieval.domain.chunking import CHUNK_WORDS, OVERLAP_WORDS, Chunk, chunk_card
from attesta_retrieval.domain.model import Card

log = get_logger("attesta.retrieval.index")


class TextEmbedder(Protocol):
    """What the index and the retriever need of an embedder (``adapters.embedder.Embedder``,
    or the tests' hashing embedder): L2-normalised float32 vectors, one row per text."""

    name: str

    def embed(self, texts: list[str]) -> NDArray[np.float32]: ...


class DenseIndex(Protocol):
    """What the index needs of the dense store (``adapters.dense_store.DenseStore``)."""

    def stored_hashes(self) -> dict[str, str]: ...

    def replace_cards(self, cards: list[tuple[str, str, list[Chunk]]],
                      vectors: NDArray[np.float32]) -> None: ...

    def delete_cards(self, card_ids: list[str]) -> None: ...

    def query(self, vector: NDArray[np.float32], n: int) -> list[tuple[str, float]]: ...

    def count(self) -> int: ...


@dataclass(frozen=True)
class CardEvent:
    card_id: str
    partition: int
    offset: int
    card: Card | None  # None = deleted (a ``deleted`` event or a tombstone)


@dataclass
class IngestStats:
    read: int = 0
    embedded: int = 0
    unchanged: int = 0
    deleted: int = 0
    stale: int = 0
    dead_lettered: int = 0
    swept: int = 0
    seconds_embedding: float = 0.0

    def as_dict(self) -> dict[str, int | float]:
        return dict(self.__dict__)


@dataclass
class KbIndex:
    """The card catalog (in memory), the dense store (persistent) and the sparse index."""

    dense: DenseIndex
    embedder: TextEmbedder
    sparse: SparseIndex
    chunk_words: int = CHUNK_WORDS
    overlap_words: int = OVERLAP_WORDS
    cards: dict[str, Card] = field(default_factory=dict)
    stats: IngestStats = field(default_factory=IngestStats)

    def __post_init__(self) -> None:
        self._applied: dict[str, tuple[int, int]] = {}
        self._stored = dict(self.dense.stored_hashes())
        self._lock = threading.Lock()
        self._sparse_changed = True
        self._sparse_rebuilding = 0
        log.info("dense store opened", cards_already_embedded=len(self._stored))

    def apply(self, events: list[CardEvent]) -> None:
        """Apply a batch (in topic order). Raises only on a dependency failure; the caller
        retries the whole batch, which is safe because applying is idempotent."""
        latest: dict[str, CardEvent] = {}
        for ev in events:
            self.stats.read += 1
            seen = self._applied.get(ev.card_id)
            if seen is not None and seen[0] == ev.partition and ev.offset <= seen[1]:
                self.stats.stale += 1
                continue
            prev = latest.get(ev.card_id)
            if prev is not None and prev.partition == ev.partition and ev.offset < prev.offset:
                self.stats.stale += 1
                continue
            latest[ev.card_id] = ev
        to_embed: list[Card] = []
        to_delete: list[str] = []
        for ev in latest.values():
            if ev.card is None:
                to_delete.append(ev.card_id)
            elif self._stored.get(ev.card_id) != ev.card.content_sha256:
                to_embed.append(ev.card)
            else:
                self.stats.unchanged += 1
        if to_delete:
            self.dense.delete_cards(to_delete)
        if to_embed:
            started = time.perf_counter()
            chunked = [(c.card_id, c.content_sha256,
                        chunk_card(c.card_id, c.title, c.text, self.chunk_words, self.overlap_words))
                       for c in to_embed]
            vectors = self.embedder.embed([ch.text for _, _, chs in chunked for ch in chs])
            self.dense.replace_cards(chunked, vectors)
            self.stats.seconds_embedding += time.perf_counter() - started
        # Only now, with the stores written, does the in-memory view move on.
        with self._lock:
            for card_id in to_delete:
                self.cards.pop(card_id, None)
                self._stored.pop(card_id, None)
            for card in to_embed:
                self._stored[card.card_id] = card.content_sha256
            for ev in latest.values():
                if ev.card is not None:
                    self.cards[ev.card_id] = ev.card
                self._applied[ev.card_id] = (ev.partition, ev.offset)
        self.stats.embedded += len(to_embed)
        self.stats.deleted += len(to_delete)
        if latest:
            self._sparse_changed = True

    def sweep_unseen(self) -> int:
        """After a full replay: drop embedded cards the topic no longer has (deleted and
        compacted away while this instance was down)."""
        with self._lock:
            gone = [cid for cid in self._stored if cid not in self._applied]
        if gone:
            self.dense.delete_cards(gone)
            with self._lock:
                for cid in gone:
                    self._stored.pop(cid, None)
                    self.cards.pop(cid, None)
        self.stats.swept += len(gone)
        return len(gone)

    @property
    def sparse_dirty(self) -> bool:
        """True until BM25 reflects every applied change: a change is pending, or the rebuild
        that covers it has not finished yet."""
        return self._sparse_changed or self._sparse_rebuilding > 0

    def rebuild_sparse(self) -> None:
        with self._lock:
            docs = [(c.card_id, f"{c.title}\n{c.text}") for c in self.cards.values()]
            self._sparse_changed = False  # a change after this snapshot marks it dirty again
            self._sparse_rebuilding += 1
        try:
            self.sparse.rebuild(docs)
        except SparseUnavailable as exc:
            log.error("sparse index unavailable: retrieval falls back to dense_only",
                      reason=str(exc))
        finally:
            with self._lock:
                self._sparse_rebuilding -= 1

    def get(self, card_id: str) -> Card | None:
        return self.cards.get(card_id)
