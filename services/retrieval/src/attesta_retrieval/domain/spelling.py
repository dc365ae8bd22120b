"""Spelling correction of a question against the KB's own vocabulary (pure; rapidfuzz).

BM25 matches whole (stemmed) words, so one slip in a name ("zenequil" for Zennequil,
"velnoreks" for Velnorex) loses the card on the sparse side. A question word that no card
contains is matched to the closest word the cards do contain (optimal string alignment
distance: a swap of two letters costs one edit) and that word is added to the question; the
original word stays, so a correctly spelled question searches exactly as before.

Only words of at least ``MIN_LENGTH`` letters are corrected, with at most one edit up to 7
letters and two edits from 8: short words have too many neighbours ("skip" is one letter from
"skin"). Ties go to the word more cards contain.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MIN_LENGTH = 5
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def vocabulary(texts: Iterable[str]) -> Counter[str]:
    """Lower-cased words (letters only) -> the number of texts that contain them."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(_WORD.findall(text.casefold())))
    return counts


def max_edits(word: str) -> int:
    return 0 if len(word) < MIN_LENGTH else 1 if len(word) <= 7 else 2


def corrections(question: str, vocab: Counter[str], choices: list[str] | None = None) -> list[str]:
    """KB words to add to ``question``: the closest one for each of its words the KB lacks."""
    # rapidfuzz (about 30 ms) loads at the first correction, not at import
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    pool = choices if choices is not None else list(vocab)
    out: list[str] = []
    for word in dict.fromkeys(_WORD.findall(question.casefold())):
        limit = max_edits(word)
        if not limit or word in vocab:
            continue
        found = process.extract(word, pool, scorer=OSA.distance, score_cutoff=limit, limit=8)
        if not found:
            continue
        best = min(d for _, d, _ in found)
        fix = max((w for w, d, _ in found if d == best), key=lambda w: (vocab[w], w))
        if fix not in out:
            out.append(fix)
    return out
