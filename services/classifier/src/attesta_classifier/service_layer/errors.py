"""Service-layer failures the entrypoints map onto HTTP (the shared error shape)."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class Invalid(ServiceError):
    status, code = 422, "invalid_request"


class UpstreamFailed(ServiceError):
    status, code = 502, "sources_unreachable"
