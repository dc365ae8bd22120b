"""A card's sentences, exactly as they appear in its text (pure): the one splitter the
retrieval service (sentence evidence) and the answer service (quoted spans) share.

A sentence ends at . ! ? followed by a space and an upper-case letter, a digit or a quote;
"Dr. Sallow", "e.g. the" and decimals ("2.5 mg") stay inside their sentence. The answer
service quotes these sentences verbatim as citation spans, so nothing here rewrites text.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s+[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st vs e.g i.e approx no fig etc inc ltd co".split())


def card_sentences(text: str) -> list[str]:
    out = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        piece = text[start:m.end()].strip()
        last_word = piece.rsplit(None, 1)[-1].rstrip(".").casefold() if piece else ""
        if last_word in _ABBREVIATIONS:
            continue  # "Dr. Sallow": the sentence goes on
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out
