"""What the gateway refuses a request for, without HTTP: each error has a stable ``code``, a
``reason`` for people and, when waiting helps, ``retry_after`` seconds. Which HTTP status each
class is, is decided once at the edge (``entrypoints/responses.py``, ``HTTP_STATUS``)."""

from __future__ import annotations


class GatewayError(Exception):
    def __init__(self, code: str, reason: str, *, retry_after: int | str | None = None) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason
        self.retry_after = None if retry_after is None else str(retry_after)


class Unauthenticated(GatewayError):
    """No API key where one is needed, or one that is malformed, unknown or revoked."""


class RateLimited(GatewayError):
    """Over a rate or in-flight limit; ``limit`` is the window's request count when a rate
    limit refused it."""

    def __init__(self, code: str, reason: str, *, retry_after: int | str,
                 limit: int | None = None) -> None:
        super().__init__(code, reason, retry_after=retry_after)
        self.limit = limit


class AuthenticationThrottled(RateLimited):
    """Too many failed authentications from one address: the caller still needs a key."""


class InFlight(GatewayError):
    """The same request (same Idempotency-Key) is still being processed."""


class KeyReused(GatewayError):
    """An Idempotency-Key reused with another request."""


class BadUpstream(GatewayError):
    """A service behind the gateway answered something the gateway cannot pass on."""


class Unavailable(GatewayError):
    """A part the request needs (a service, Kafka, the key store, the rate limiter) is down or
    full; retry after ``retry_after``."""


class TimedOut(GatewayError):
    """A service behind the gateway, or the chat's answer, did not come in time."""
