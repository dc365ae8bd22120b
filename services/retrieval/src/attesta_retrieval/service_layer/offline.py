"""Building an index outside the service (benchmarks, quality report): the same KbIndex and
retriever the service uses, fed from a list of cards instead of the topic."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from attesta_retrieval.adapters.dense_store import DenseStore, make_client
from attesta_retrieval.adapters.sparse import SparseIndex
from attesta_retrieval.domain.model import Card, card_content_sha256
from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex, TextEmbedder


def to_card(raw: dict[str, Any]) -> Card:
    return Card(raw["card_id"], raw["title"], raw["text"], raw.get("source"), raw.get("metadata"),
                card_content_sha256(raw))


def build_index(cards: list[dict[str, Any]], state_dir: Path, embedder: TextEmbedder,
                collection: str = "kb-offline", batch: int = 256,
                progress: bool = True) -> tuple[KbIndex, dict[str, float]]:
    """Index ``cards`` into ``state_dir`` (resumable: a second run embeds nothing) and return
    the index and timings."""
    from tqdm import tqdm  # the progress bar only when an index is built (about 50 ms)

    dense = DenseStore(make_client(state_dir / "chroma", None), collection)
    index = KbIndex(dense, embedder, SparseIndex(state_dir / "bm25"))
    started = time.perf_counter()
    bar = tqdm(total=len(cards), desc=f"index {len(cards)} cards", unit="card", disable=not progress)
    for start in range(0, len(cards), batch):
        chunk = cards[start:start + batch]
        index.apply([CardEvent(c["card_id"], 0, start + i, to_card(c)) for i, c in enumerate(chunk)])
        bar.update(len(chunk))
    bar.close()
    dense_s = time.perf_counter() - started
    t = time.perf_counter()
    index.rebuild_sparse()
    return index, {"dense_ingest_s": dense_s, "sparse_build_s": time.perf_counter() - t,
                   "embedded": index.stats.embedded, "unchanged": index.stats.unchanged,
                   "embedding_s": index.stats.seconds_embedding}
