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


def lease_size(limit: Limit, max_lease: int = 50) -> int:
    """How many requests an instance takes from the shared counter at once (1: every request
    asks Redis). About 1/20 of the limit, at most 50: a key allowed 600/min costs one Redis
    round trip per 30 requests; limits under 40 per window stay exact. Never more than the limit
    is admitted in a window; up to (lease - 1) per instance may go unused, so a busy bucket can
    be refused slightly before its limit."""
    return max(1, min(max_lease, limit.requests // 20))
