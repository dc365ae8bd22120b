"""Error classes whose *class* says whether a retry can help (eventsourcing's rule)."""

from __future__ import annotations

import asyncio


class PermanentError(Exception):
    """Retrying cannot help (bad input, violated rule): dead-letter and move on."""


class TransientError(Exception):
    """A dependency is unavailable or slow: retry with backoff, never commit past it."""


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, PermanentError):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError, asyncio.TimeoutError, OSError)):
        return True
    # Driver errors that mean "the server is not there right now".
    name = type(exc).__module__ + "." + type(exc).__name__
    transient_names = (
        "asyncpg.exceptions.CannotConnectNowError",
        "asyncpg.exceptions.ConnectionDoesNotExistError",
        "asyncpg.exceptions.TooManyConnectionsError",
        "asyncpg.exceptions.AdminShutdownError",
        "asyncpg.exceptions.SerializationError",
        "asyncpg.exceptions.DeadlockDetectedError",
        "asyncpg.exceptions._base.InterfaceError",
        "redis.exceptions.ConnectionError",
        "redis.exceptions.TimeoutError",
        "aiokafka.errors.KafkaConnectionError",
        "aiokafka.errors.KafkaTimeoutError",
        "aiokafka.errors.NotLeaderForPartitionError",
        "aiokafka.errors.RequestTimedOutError",
    )
    return name in transient_names
