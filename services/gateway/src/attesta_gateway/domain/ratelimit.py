"""Rate-limit policy (pure): fixed windows, keyed by what is limited."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    requests: int
    window_s: int


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_after_s: float  # until the current window closes

    @property
    def retry_after(self) -> int:
        """Whole seconds for the Retry-After header (never 0: "retry now" would be a lie)."""
        return max(1, math.ceil(self.reset_after_s))


def verdict(count: int, limit: Limit, reset_after_s: float) -> Verdict:
    return Verdict(allowed=count <= limit.requests, limit=limit.requests,
                   remaining=max(0, limit.requests - count), reset_after_s=reset_after_s)
