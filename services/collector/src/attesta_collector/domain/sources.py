"""Cited sources of collected answers (``attesta_platform.cited_sources``, shared with the
classifier), and their labels from one tracked brand's point of view. Pure, no I/O."""

from __future__ import annotations

from collections.abc import Iterable

from attesta_contracts.runs import RunSource
from attesta_platform.cited_sources import SourceLabel, extract_sources, source_label

from .model import BrandNames

__all__ = ["SourceLabel", "extract_sources", "label_source", "label_sources"]


def label_source(host: str, brand: BrandNames, brands: dict[str, BrandNames]) -> SourceLabel:
    """Owned, competitor or third-party for ``brand`` (its competitors looked up in ``brands``)."""
    return source_label(host, brand.hosts, (brands[c].hosts for c in brand.competitors
                                            if c in brands))


def label_sources(sources: Iterable[RunSource], brands: dict[str, BrandNames]
                  ) -> dict[str, list[SourceLabel]]:
    """Per brand id, the label of each source (same order as ``sources``)."""
    sources = list(sources)
    return {bid: [label_source(s.host or s.domain, b, brands) for s in sources]
            for bid, b in brands.items()}
