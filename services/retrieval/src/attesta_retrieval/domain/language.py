"""Which language a question is in (pure): English unless a language identifier is sure.

The KB is English and its names are invented ("Velnorex", "Jardine gastropathy"): a question
made mostly of names ("quelmira dose", "lunomera pen") says nothing about its language, and a
character-n-gram identifier guesses wildly on it. So the words of the KB's titles are left
out first, and a question with fewer than ``MIN_WORDS`` words left, or whose identification
is less sure than ``MIN_PROBABILITY``, is English: retrieval then serves it as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

ENGLISH = "en"
MIN_WORDS = 2
MIN_PROBABILITY = 0.7  # chosen on dev: no English dev question routed away (docs/retrieval-quality.md)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)

# (text) -> (language code, probability), e.g. py3langid's classify with normalised probabilities.
Classifier = Callable[[str], tuple[str, float]]


def name_words(titles: Iterable[str]) -> frozenset[str]:
    """The lower-cased words of the KB's card titles: the names a question may carry."""
    return frozenset(w for t in titles for w in _WORD.findall(t.casefold()))


def detect(question: str, classify: Classifier, names: frozenset[str],
           min_words: int = MIN_WORDS, min_probability: float = MIN_PROBABILITY) -> str:
    """The question's language (ISO 639-1), ``"en"`` unless ``classify`` is sure of another on
    what is left once the KB's names are removed."""
    words = [w for w in _WORD.findall(question.casefold()) if w not in names]
    if len(words) < min_words:
        return ENGLISH
    language, probability = classify(" ".join(words))
    return language if language != ENGLISH and probability >= min_probability else ENGLISH
