"""What can go wrong in a use case, in the classifier's words (no HTTP, no driver).

Each entrypoint maps them once at its edge: the HTTP API to statuses (``entrypoints/http.py``),
the runs.recorded.v1 subscriber to retry or dead-letter (``entrypoints/consumers.py``).
"""

from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotFound(ServiceError):
    """No such brand, run or pair in this workspace (another workspace's is not found either)."""


class Conflict(ServiceError):
    """The request contradicts what is stored (a taken id, a stale read, nothing to refresh)."""


class Invalid(ServiceError):
    """The request itself is wrong (an unknown brand id, a cursor this API did not return)."""


class Unstorable(Invalid):
    """A value the database cannot store or compare (a NUL character, a time out of range);
    raised by the adapter, which keeps the database's own message in the exception's cause."""


class IdempotencyKeyReused(ServiceError):
    """The same Idempotency-Key with another request."""


class RefreshInProgress(Conflict):
    """Another refresh of the same brand is running: one at a time, whoever asks (a retry of a
    request the gateway gave up on must not start a second one)."""


class SourcesRefused(ServiceError):
    """Every source was refused by the SSRF guard: the brand's configuration, not an outage."""


class UpstreamFailed(ServiceError):
    """No source could be fetched."""


class RefreshTimedOut(ServiceError):
    """The refresh deadline ran out; nothing changed."""
