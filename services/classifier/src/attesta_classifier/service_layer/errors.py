"""Service-layer failures the entrypoints map onto HTTP (the shared error shape)."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"
    headers: dict[str, str] | None = None  # e.g. Retry-After on "busy, try again"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class Invalid(ServiceError):
    status, code = 422, "invalid_request"


class IdempotencyKeyReused(ServiceError):
    status, code = 422, "idempotency_key_reused"


class UpstreamFailed(ServiceError):
    status, code = 502, "sources_unreachable"


class RefreshInProgress(ServiceError):
    """Another refresh of the same brand is running: one at a time, whoever asks (a retry of a
    request the gateway gave up on must not start a second one)."""

    status, code = 409, "refresh_in_progress"
    headers = {"Retry-After": "2"}


class SourcesRefused(ServiceError):
    """Every source was refused by the SSRF guard: the brand's configuration, not an outage."""

    status, code = 422, "sources_refused"


class RefreshTimedOut(ServiceError):
    status, code = 504, "refresh_deadline"
