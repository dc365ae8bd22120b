"""Sentence evidence for the answer service: how close each sentence of a retrieved card is
in meaning to the question (cosine of the bundled MiniLM embeddings, the embedder retrieval
already holds).

The answer service decides from it whether the context answers the question at all and which
sentence answers it (``ContextChunk.sentences``); a lexical overlap cannot see that "how many
pills a day" is answered by "one 40 mg tablet once daily". A sentence is embedded with its
card's title in front ("Velnorex (velnorexant): The recommended adult dose is ..."), so a
sentence that says "it" still names its subject.

Sentence vectors are cached per card and content hash (bounded), so a card is embedded once;
``warm`` fills the cache in the background after start-up so the first questions do not pay
for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from numpy.typing import NDArray

from attesta_kb.text import card_sentences
from attesta_retrieval.domain.model import Card
from attesta_retrieval.service_layer.indexing import TextEmbedder

# A card's sentences and their vectors (one row per sentence).
SentenceVectors = tuple[list[str], NDArray[np.float32]]

MAX_SENTENCES = 40  # per card: cards are 60-250 words; a longer text is cut, not embedded whole


def sentence_input(title: str, sentence: str) -> str:
    return f"{title}: {sentence}"


class SentenceEvidence:
    def __init__(self, embedder: TextEmbedder, max_cards: int = 5000) -> None:
        self.embedder = embedder
        self.max_cards = max_cards
        self._cache: OrderedDict[tuple[str, str], SentenceVectors] = OrderedDict()
        self._lock = threading.Lock()

    def _vectors(self, cards: list[Card]) -> list[SentenceVectors]:
        found: dict[int, SentenceVectors] = {}
        missing: list[tuple[int, list[str]]] = []
        with self._lock:
            for i, card in enumerate(cards):
                hit = self._cache.get((card.card_id, card.content_sha256))
                if hit is not None:
                    self._cache.move_to_end((card.card_id, card.content_sha256))
                    found[i] = hit
                else:
                    missing.append((i, card_sentences(card.text)[:MAX_SENTENCES]))
        if missing:
            texts = [sentence_input(cards[i].title, s) for i, sents in missing for s in sents]
            vectors = self.embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
            at = 0
            with self._lock:
                for i, sents in missing:
                    entry = (sents, vectors[at:at + len(sents)])
                    at += len(sents)
                    found[i] = entry
                    self._cache[(cards[i].card_id, cards[i].content_sha256)] = entry
                while len(self._cache) > self.max_cards:
                    self._cache.popitem(last=False)
        return [found[i] for i in range(len(cards))]

    def score(self, question_vector: NDArray[np.float32], cards: list[Card]) -> list[list[tuple[str, float]]]:
        """Per card, its sentences with their cosine similarity to the question."""
        return [[(s, float(v @ question_vector)) for s, v in zip(sents, vecs, strict=True)]
                for sents, vecs in self._vectors(cards)]

    def warm(self, cards: list[Card], batch: int = 32) -> int:
        """Embed the sentences of ``cards`` not cached yet (up to the cache size); the number
        of cards embedded."""
        todo = cards[:self.max_cards]
        for start in range(0, len(todo), batch):
            self._vectors(todo[start:start + batch])
        return len(todo)
