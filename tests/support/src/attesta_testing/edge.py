"""What a route's caller sees of a domain error, for tests that call a service's bus or
handlers directly: the ``ApiError`` its HTTP edge answers the error with. One helper for every
service (the collector's and the gateway's ``http_errors`` are this with their own error type
and mapping)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

E = TypeVar("E", bound=Exception)


@contextlib.contextmanager
def edge_errors(domain_error: type[E], to_http: Callable[[E], Exception]) -> Iterator[None]:
    """A ``domain_error`` raised inside is raised again as ``to_http(error)`` (the service's
    ``api_error``), chained to it."""
    try:
        yield
    except domain_error as exc:
        raise to_http(exc) from exc
