"""Walking-skeleton retrieval: BM25 over the verified KB cards (bm25s). The hybrid paths
(Chroma + BM25 + RRF + cross-encoder) are issue #4; until then results carry no hybrid-path
label and say why in ``path_reason``."""

from __future__ import annotations

import bm25s

from attesta_contracts.chat import ChunkScores, ContextChunk


class LexicalIndex:
    def __init__(self, cards: list[dict]) -> None:
        self._cards = cards
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize([f"{c['title']}\n{c['text']}" for c in cards],
                                        stopwords="en", show_progress=False), show_progress=False)

    def search(self, question: str, k: int) -> list[ContextChunk]:
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self._bm25.retrieve(tokens, k=min(k, len(self._cards)), show_progress=False)
        chunks = []
        for idx, score in zip(docs[0], scores[0], strict=True):
            if score <= 0:
                continue
            card = self._cards[int(idx)]
            chunks.append(ContextChunk(
                id=card["card_id"], card_id=card["card_id"], title=card["title"],
                text=card["text"], source=card.get("source"), metadata=card.get("metadata"),
                scores=ChunkScores(bm25=float(score)),
            ))
        return chunks
