"""The dense index: a Chroma collection of card chunks with precomputed embeddings.

Chroma is the embedded ``PersistentClient`` by default (a folder under ``.state/``) or a Chroma
server over HTTP when ``ATTESTA_CHROMA_URL`` is set. We never let Chroma embed (its default
embedding function downloads a model): vectors come from our embedder. Each chunk's metadata
remembers the card's ``content_sha256`` and how many chunks the card has, so after a restart an
unchanged card is recognised and not embedded again, and a card whose write was interrupted
(fewer chunks than announced) is redone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np
from numpy.typing import NDArray

from attesta_retrieval.domain.chunking import Chunk

if TYPE_CHECKING:  # chromadb is imported when a client is made, not with this module
    from chromadb.api import ClientAPI
    from chromadb.api.types import Metadata
    from chromadb.base_types import InclusionExclusionOperator, LiteralValue


def make_client(persist_dir: str | Path | None, url: str | None) -> ClientAPI:
    # heavy: chromadb loads when a client is made, not with this module
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url:
        parts = urlsplit(url)
        return chromadb.HttpClient(host=parts.hostname or "127.0.0.1", port=parts.port or 8000,
                                   ssl=parts.scheme == "https", settings=settings)
    if persist_dir is None:
        raise ValueError("a persist directory or a Chroma URL is needed")
    Path(persist_dir).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(persist_dir), settings=settings)


class DenseStore:
    READ_PAGE = 5000  # chunks per get() when reading every stored hash back

    def __init__(self, client: ClientAPI, collection: str) -> None:
        self._col = client.get_or_create_collection(
            collection, embedding_function=None, configuration={"hnsw": {"space": "cosine"}})

    def stored_hashes(self) -> dict[str, str]:
        """card id -> content hash, only for cards whose chunks are all present and agree."""
        per_card: dict[str, list[Mapping[str, object]]] = defaultdict(list)
        # In pages: one unbounded get() of ~87k chunks (50k cards) fails inside Chroma's SQLite
        # with "too many SQL variables".
        for offset in range(0, self._col.count(), self.READ_PAGE):
            got = self._col.get(include=["metadatas"], limit=self.READ_PAGE, offset=offset)
            for meta in got["metadatas"] or []:
                per_card[str(meta["card_id"])].append(meta)
        complete: dict[str, str] = {}
        for card_id, metas in per_card.items():
            hashes = {str(m.get("content_sha256")) for m in metas}
            if len(hashes) == 1 and all(m.get("n_chunks") == len(metas) for m in metas):
                complete[card_id] = next(iter(hashes))
        return complete

    def replace_cards(self, cards: list[tuple[str, str, list[Chunk]]],
                      vectors: NDArray[np.float32]) -> None:
        """(card_id, content_sha256, chunks) per card, vectors for all chunks in order."""
        if not cards:
            return
        self.delete_cards([c[0] for c in cards])
        ids: list[str] = []
        docs: list[str] = []
        metas: list[Metadata] = []
        for card_id, sha, chunks in cards:
            for ch in chunks:
                ids.append(ch.id)
                docs.append(ch.text)
                metas.append({"card_id": card_id, "content_sha256": sha, "chunk": ch.index,
                              "n_chunks": len(chunks)})
        for start in range(0, len(ids), 2000):  # Chroma caps one add at its max batch size
            end = start + 2000
            self._col.add(ids=ids[start:end], embeddings=vectors[start:end],
                          documents=docs[start:end], metadatas=metas[start:end])

    def delete_cards(self, card_ids: list[str]) -> None:
        for start in range(0, len(card_ids), 500):
            among: dict[InclusionExclusionOperator, list[LiteralValue]] = {
                "$in": list(card_ids[start:start + 500])}
            self._col.delete(where={"card_id": among})

    def query(self, vector: NDArray[np.float32], n: int) -> list[tuple[str, float]]:
        """(card_id, cosine similarity) per chunk, best first."""
        count = self._col.count()
        if count == 0:
            return []
        res = self._col.query(query_embeddings=vector.reshape(1, -1), n_results=min(n, count),
                              include=["metadatas", "distances"])
        metadatas, distances = res["metadatas"], res["distances"]
        if metadatas is None or distances is None:  # both were asked for in `include`
            raise RuntimeError("Chroma answered a query without the metadatas or distances")
        return [(str(m["card_id"]), 1.0 - float(d))
                for m, d in zip(metadatas[0], distances[0], strict=True)]

    def count(self) -> int:
        return self._col.count()
