"""What can go wrong in a use case, in the evidence service's words (no HTTP, no driver).

The HTTP API maps them to statuses once, at its edge (``entrypoints/http.py``, ``HTTP_ERRORS``).
The Kafka intake rejects input that can never become evidence item by item (the messaging core
dead-letters it); anything else is the shared consumer's retry policy.
"""

from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotFound(ServiceError):
    """No evidence with that hash (or none the calling workspace references: the same answer)."""


class OutOfRange(ServiceError, ValueError):
    """Sizes or indices outside the signed log."""


class InvalidContent(ServiceError):
    """Content that cannot be evidence bytes (text that is not valid Unicode)."""
