"""Where in an answer a brand stands against its competitors (issue #25 item 3), pure.

For one answer and one tracked brand, the *comparison set* is the brand and its competitors
(``Brand.competitors``). Each member is *named* where the classifier's own matcher first finds
it (``heuristic.BrandMatcher``: its name or an alias as whole words, accent/case folded, or one
of its domains as a host — a brand named only in a URL counts there); the order of those first
mentions is the answer's ranking: the brand is 1st when it comes up before every competitor,
2nd when one competitor comes up first, and so on, or not named at all.

A one-word name that is also an ordinary word ("Beacon", "Trilhar") counts as the heuristic
counts it: only when ``BrandMatcher.mentions`` says the answer names the brand (with the prompt
as context), and then from its first capitalized use or its first other mention.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from attesta_platform.brandmatch import fold, mention_spans

from .heuristic import BrandMatcher, brand_matcher
from .model import Brand

# Position-weighted visibility: an answer counts 0.9^(k-1) for the brand named k-th and 0 when
# it is not named (1st 1.0, 2nd 0.9, 3rd 0.81, ...). The geometric 0.9 step is the one Evertune
# publishes (1st 100 %, 2nd 90 %, 3rd 81 %); docs/metrics.md "Position".
POSITION_DECAY = 0.9


@dataclass(frozen=True)
class Ranking:
    """The brand ids of a comparison set in the order the answer first names them (the ones it
    never names are left out)."""

    order: tuple[str, ...]

    def position(self, brand_id: str) -> int | None:
        """1 for the first named, 2 for the second, ...; None when not named."""
        return self.order.index(brand_id) + 1 if brand_id in self.order else None


def weight(position: int | None) -> float:
    """The answer's contribution to the position-weighted visibility."""
    return 0.0 if position is None else POSITION_DECAY ** (position - 1)


def first_mention(text: str, matcher: BrandMatcher, context: str = "") -> int | None:
    """The index in ``text`` where the brand is first named, or None when it is not named."""
    if matcher.mentions(text, context) is not True:
        return None
    plain = tuple(n for n in matcher.names if fold(n).strip() not in matcher.common_names)
    starts = [s for s, _, _ in mention_spans(text, plain, matcher.domains)]
    if matcher.common_names:
        # One folded character per original one, so match offsets are ``text``'s own.
        folded = "".join((fold(ch) or " ")[0] for ch in text)
        for name in matcher.common_names:
            starts += [m.start() for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)",
                                                      folded)
                       if text[m.start():m.start() + 1].isupper()]
    return min(starts) if starts else None


def rank(answer: str, brands: Sequence[Brand], prompt: str = "") -> Ranking:
    """The order in which ``answer`` first names each of ``brands`` (a brand and its
    competitors). Two brands first named at the same place (overlapping names) keep the order
    of ``brands``."""
    found = []
    for i, b in enumerate(dict.fromkeys(brands)):
        at = first_mention(answer, brand_matcher(b), prompt)
        if at is not None:
            found.append((at, i, b.brand_id))
    return Ranking(tuple(dict.fromkeys(brand_id for _, _, brand_id in sorted(found))))


def comparison_set(brand: Brand, known: dict[str, Brand]) -> list[Brand]:
    """The brand first, then each of its competitors that is a known brand (same workspace)."""
    return [brand, *(known[c] for c in brand.competitors if c in known and c != brand.brand_id)]
