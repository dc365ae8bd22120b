"""Where in an answer a brand stands against its competitors (issue #25 item 3), pure.

For one answer and one tracked brand, the *comparison set* is the brand and its competitors
(``Brand.competitors``). Each member is *named* where the classifier's own matcher first finds
it (``heuristic.BrandMatcher``: its name or an alias as whole words, accent/case folded, or one
of its domains as a host — a brand named only in a URL counts there); the order of those first
mentions is the answer's ranking: the brand is 1st when it comes up before every competitor,
2nd when one competitor comes up first, and so on, or not named at all.

A one-word name that is also an ordinary word ("Beacon") counts as the heuristic
counts it: only when ``BrandMatcher.mentions`` says the answer names the brand (with the prompt
as context), and then from its first capitalized use or its first other mention.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from attesta_platform.brandmatch import fold

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


class _FoldTable(dict[int, str]):
    """``str.translate`` table folding one character at a time (filled on first sight), and the
    characters whose folded form is not exactly one character (ligatures, combining marks)."""

    def __init__(self) -> None:
        super().__init__()
        self.uneven: set[str] = set()

    def __missing__(self, code: int) -> str:
        piece = fold(chr(code))
        if len(piece) != 1:
            self.uneven.add(chr(code))
        if len(self) < 65536:  # bounded: an answer of random code points cannot grow it forever
            self[code] = piece
        return piece


_FOLD = _FoldTable()


def _fold_char(ch: str) -> str:
    return _FOLD[ord(ch)]


def _folded(text: str) -> tuple[str, list[int] | None]:
    """``fold(text)`` and, for each of its characters, the index in ``text`` it comes from (None:
    the same index). Folding one character at a time gives the same string as ``fold``: NFKD
    only reorders combining marks, which are dropped, and case folding has no context
    (``brandmatch.mention_spans`` does the same, once per brand; here once per answer)."""
    if text.isascii():
        return text.casefold(), None
    low = text.translate(_FOLD)  # C speed; every character 1:1 unless one is uneven
    if not _FOLD.uneven.intersection(text):
        return low, None
    offsets: list[int] = []
    for i, ch in enumerate(text):
        offsets.extend([i] * len(_fold_char(ch)))
    return low, offsets


def first_mention(text: str, matcher: BrandMatcher, context: str = "",
                  folded: tuple[str, list[int] | None] | None = None) -> int | None:
    """The index in ``text`` where the brand is first named, or None when it is not named.
    ``folded``: ``_folded(text)`` when the caller has it (one answer, several brands)."""
    low, offsets = folded if folded is not None else _folded(text)
    starts = [i if offsets is None else offsets[i] for i in matcher.plain_starts(low)]
    if matcher.common_names:
        # One folded character per original one, so match offsets are ``text``'s own (ASCII
        # folds one to one: one call, not one a character).
        per_char = text.casefold() if text.isascii() else "".join(
            (_fold_char(ch) or " ")[0] for ch in text)
        uses = [m.start() for name in matcher.common_names if name in per_char
                for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)", per_char)
                if text[m.start():m.start() + 1].isupper()]
        if not starts and not uses:
            return None  # nothing here could name it, whatever the heuristic says (its cost)
        # As the heuristic decides it: only when the answer names the brand for sure.
        if matcher.mentions(text, context) is not True:
            return None
        starts += uses
    return min(starts) if starts else None


def rank(answer: str, brands: Sequence[Brand], prompt: str = "") -> Ranking:
    """The order in which ``answer`` first names each of ``brands`` (a brand and its
    competitors). Two brands first named at the same place (overlapping names) keep the order
    of ``brands``."""
    folded = _folded(answer)
    found = []
    for i, b in enumerate(dict.fromkeys(brands)):
        at = first_mention(answer, brand_matcher(b), prompt, folded)
        if at is not None:
            found.append((at, i, b.brand_id))
    return Ranking(tuple(dict.fromkeys(brand_id for _, _, brand_id in sorted(found))))


def comparison_set(brand: Brand, known: dict[str, Brand]) -> list[Brand]:
    """The brand first, then each of its competitors that is a known brand (same workspace)."""
    return [brand, *(known[c] for c in brand.competitors if c in known and c != brand.brand_id)]
