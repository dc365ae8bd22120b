"""Small builders for the classifier judge's unit tests: a brand's facts from plain texts and the
offline judge's class for one answer. The brands and facts are each test's own inventions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from attesta_classifier.domain import judging
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass

AT = datetime(2026, 12, 6, tzinfo=UTC)


def facts_of(brand_id: str, texts: Sequence[str]) -> list[Fact]:
    """One manual fact per text, sourced from the brand's own example domain."""
    return [Fact(f"{brand_id}-{i:02d}", brand_id, "manual", t, f"https://{brand_id}.example/", AT,
                 f"{brand_id}.example", "a" * 64) for i, t in enumerate(texts)]


def judged_offline(brand: Brand, facts: list[Fact], answer: str,
                   prompt: str | None = None) -> CitationClass | None:
    """The offline judge's class for ``answer`` (``None``: it abstains, the pair stays pending)."""
    run = Run("r", "ws", "e", "m", prompt or f"Tell me about {brand.name}", answer, "0" * 64)
    return judging.judge_offline(run=run, brand=brand, facts=facts).citation_class
