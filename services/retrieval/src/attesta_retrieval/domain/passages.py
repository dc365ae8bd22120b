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


def sentence_passage(title: str, sentence: str) -> str:
    """What the cross-encoder reads for one sentence of a card: the card's title (so "it" has
    a subject), then the sentence, laid out like a card passage."""
    return f"{title}\n{sentence}"


def sentences_to_rerank(similarities: list[list[float]], cards: int, pairs: int) -> list[tuple[int, int]]:
    """Which (card, sentence) pairs the cross-encoder scores for the answer's reader, given each
    returned card's sentence similarities in retrieval order: every sentence of the first card,
    then the sentences of the next ``cards - 1`` cards by similarity, ``pairs`` in all."""
    if not similarities or pairs <= 0 or cards <= 0:
        return []
    picked = [(0, i) for i in range(len(similarities[0]))][:pairs]
    others = sorted(((sim, ci, si) for ci, sims in enumerate(similarities[1:cards], start=1)
                     for si, sim in enumerate(sims)), key=lambda x: (-x[0], x[1], x[2]))
    picked += [(ci, si) for _, ci, si in others[:pairs - len(picked)]]
    return picked
