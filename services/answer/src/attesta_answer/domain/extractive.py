"""Walking-skeleton answer: the sentence of the top chunks that shares most words with the
question, cited by card id and span. Reconciliation, enrichment, LLM generation and runs are
issue #5."""

from __future__ import annotations

import re

from attesta_contracts.chat import Citation, ContextChunk

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
NO_CONTEXT = "I could not find this in the verified knowledge base."


def answer(question: str, chunks: list[ContextChunk]) -> tuple[str, list[Citation]]:
    q = {w.lower() for w in _WORD.findall(question) if len(w) > 2}
    best: tuple[int, str, str] | None = None
    for chunk in chunks[:3]:
        for sentence in _SENTENCE.split(chunk.text):
            overlap = len(q & {w.lower() for w in _WORD.findall(sentence)})
            if overlap and (best is None or overlap > best[0]):
                best = (overlap, sentence.strip(), chunk.card_id)
    if best is None:
        return NO_CONTEXT, []
    return best[1], [Citation(card_id=best[2], span=best[1])]
