"""What the cross-encoder reads for a card: its title, then the window of its text that shares
the most terms with the question (pure).

The reranker reads 128 word pieces per (question, card) pair, and a card is about 180. With the
card's first word pieces only, a question answered near the end of a card ("which condition
uses a hemorin cut-off of 383 ng/mL?") never shows the reranker its answer. Training and
serving both build passages here, so the model reads at serving time what it learned on.
"""

from __future__ import annotations

import re

WINDOW_WORDS = 56  # ~85 word pieces: with the question and the title, about 128
STRIDE_WORDS = 8

# Words that say nothing about which window answers: English function words and question words.
_STOP = frozenset(
    "a about an and any are as at be been but by can could did do does for from had has have "
    "how i if in into is it its me my no not of on or our should so some than that the their "
    "them then there these they this those to was we were what when where which who whom why "
    "will with would you your".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return [t if t not in _STOP and (len(t) >= 3 or t.isdigit()) else ""
            for t in _TOKEN.findall(text.lower())]


def rerank_passage(question: str, title: str, text: str, window: int = WINDOW_WORDS,
                   stride: int = STRIDE_WORDS) -> str:
    """``title`` + newline + the ``window``-word stretch of ``text`` (starting at a multiple of
    ``stride``, or ending with the text) holding the most distinct question terms; the
    earliest on ties, so a card that matches nowhere in particular is read from its start."""
    words = text.split()
    if len(words) <= window:
        return f"{title}\n{text}"
    wanted = {t for t in _terms(question) if t}
    per_word = [{t for t in _terms(w) if t in wanted} for w in words]
    best, best_at = -1, 0
    last = len(words) - window
    for start in [*range(0, last, stride), last]:
        found = set().union(*per_word[start:start + window])
        if len(found) > best:
            best, best_at = len(found), start
    return f"{title}\n{' '.join(words[best_at:best_at + window])}"
