"""What can go wrong in a use case, in the collector's words (no HTTP, no driver).

Each error carries a ``code`` (what the shared error shape names it, e.g. ``duplicate_prompt``)
and a ``reason`` for the caller; its class says what kind of failure it is. The HTTP API maps
the classes to statuses once, at its edge (``entrypoints/http.py``).
"""

from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


class NotFound(ServiceError):
    """No such prompt, engine, secret, schedule or collection in this workspace (another
    workspace's is not found either)."""


class Conflict(ServiceError):
    """The request contradicts what is stored (a taken id or name, a retired row, a stored
    schedule that cannot be planned)."""


class Invalid(ServiceError):
    """The request itself is wrong (an unknown brand, engine or secret, a refused endpoint, an
    unreadable file)."""


class TooLarge(ServiceError):
    """More than one request may carry (rows of an import)."""
