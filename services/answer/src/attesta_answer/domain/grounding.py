"""Does the retrieved context answer the question? (pure)

Three kinds of evidence, all cheap and all already in the answer service's hands:

- **similarity**: how close in meaning the best sentence of the context is to the question
  (retrieval's sentence evidence, MiniLM cosine). It carries over to wording nobody listed, but
  it cannot tell "who is the CEO of Kestrel Ridge Analytics?" from a question the Kestrel card
  answers: the card is close in meaning because the company is.
- **fact coverage**: the share of the question's content words, *other than the lead card's
  own name*, that the lead card contains (Snowball stems; a misspelt name still counts as the
  name). The name is what retrieval matched; what the question asks about it ("CEO", "price",
  "gluten") is what the card must also say. It is what reverse lookups ("which company is
  headquartered in Basel?") and 2-word queries ("tavrelin loading") have plenty of while
  their similarity to a whole sentence stays low.
- **relevance**: the reranker's calibrated probability that the lead card is relevant: the
  score the popover displays, divided by 100 (ADR-0024, ``round(100 * sigmoid(logit))``, only
  on the ``full`` path; the calibration is folded into the model's last layer).

The context answers when ``similarity + COVERAGE_WEIGHT * coverage`` (plus
``RELEVANCE_WEIGHT * relevance`` when the reranker scored the card) reaches the path's
threshold. The weights and thresholds were chosen on the DEV questions
(``benchmarks/data/assistant_dev.json``) for the stated target: at most 10% answers to
questions the KB cannot answer (docs/answer-quality.md has the trade-off curve).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from attesta_answer.domain.text import content_terms

COVERAGE_WEIGHT = 0.35  # chosen on dev (`benchmarks/answer_quality.py --choose`)
THRESHOLD = 0.755  # chosen on dev, without a reranker score (rrf_only, or a reranker that timed out)
# Chosen on dev with a reranker of the current recipe (docs/answer-quality.md, third session):
# its relevance let no more dev questions be answered within 10% false answers, so weight 0.
RELEVANCE_WEIGHT = 0.0
THRESHOLD_WITH_RELEVANCE = THRESHOLD


@dataclass(frozen=True)
class Evidence:
    similarity: float  # the lead sentence's similarity to the question
    coverage: float  # fact coverage of the lead card, 0-1
    relevance: float | None = None  # the reranker's calibrated probability for the lead card

    @property
    def score(self) -> float:
        value = self.similarity + COVERAGE_WEIGHT * self.coverage
        if self.relevance is not None:
            value += RELEVANCE_WEIGHT * self.relevance
        return value

    @property
    def grounded(self) -> bool:
        return self.score >= (THRESHOLD if self.relevance is None else THRESHOLD_WITH_RELEVANCE)


def _near(term: str, name_terms: frozenset[str]) -> bool:
    """``term`` is one of the name's words, or a slip of one (optimal string alignment: one
    edit up to 7 letters, two from 8), e.g. "ephdurx" for "ephdurax"."""
    if term in name_terms:
        return True
    if len(term) < 4:
        return False
    from rapidfuzz.distance import OSA  # imported on first use, not at import time

    return any(OSA.distance(term, name) <= (1 if len(name) <= 7 else 2)
               for name in name_terms if len(name) >= 5)


@lru_cache(maxsize=4096)
def _card_terms(title: str, text: str) -> frozenset[str]:
    return frozenset(content_terms(f"{title} {text}"))


def fact_coverage(question: str, title: str, text: str) -> float:
    """The share of ``question``'s content words that are not the card's name (its title)
    and that the card (title or text) contains; 1.0 when the question only names the card."""
    name_terms = frozenset(content_terms(title))
    asked = [t for t in dict.fromkeys(content_terms(question)) if not _near(t, name_terms)]
    if not asked:
        return 1.0
    present = _card_terms(title, text)
    return sum(t in present for t in asked) / len(asked)

