"""Chunking of a card for the dense index.

Cards are 60-250 words; the embedder (all-MiniLM-L6-v2) reads at most 256 word pieces, about
180 English words. A chunk is ``CHUNK_WORDS`` words with ``OVERLAP_WORDS`` words shared with
the previous one, prefixed by the card title so every chunk says what it is about. Most cards
fit in one chunk; long ones get two or three. Results are deduplicated by parent (card id).
"""

from __future__ import annotations

from dataclasses import dataclass

CHUNK_WORDS = 120
OVERLAP_WORDS = 30


@dataclass(frozen=True)
class Chunk:
    id: str  # "<card_id>#<n>"
    card_id: str
    index: int
    text: str


def chunk_words(words: list[str], size: int, overlap: int) -> list[tuple[int, int]]:
    """Word windows [start, end) of ``size`` words overlapping by ``overlap``; the last window
    is not emitted when it would only repeat the overlap."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > 0 and 0 <= overlap < size, got {size=} {overlap=}")
    if not words:
        return [(0, 0)]
    step = size - overlap
    windows = []
    start = 0
    while True:
        end = min(start + size, len(words))
        windows.append((start, end))
        if end >= len(words):
            return windows
        start += step


def chunk_card(card_id: str, title: str, text: str, size: int = CHUNK_WORDS,
               overlap: int = OVERLAP_WORDS) -> list[Chunk]:
    words = text.split()
    return [
        Chunk(id=f"{card_id}#{n}", card_id=card_id, index=n,
              text=f"{title}\n{' '.join(words[a:b])}".strip())
        for n, (a, b) in enumerate(chunk_words(words, size, overlap))
    ]
