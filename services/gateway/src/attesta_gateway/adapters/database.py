"""The gateway's PostgreSQL pool (asyncpg), created on first use.

The gateway starts and serves chat and public routes while PostgreSQL is down; a route that
needs the database then answers 503 (``DatabaseUnavailable``) instead of hanging, and the
next request tries to connect again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg

from attesta_platform.errors import TransientError, is_transient


class DatabaseUnavailable(TransientError):
    pass


class Database:
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10,
                 timeout_s: float = 2.0) -> None:
        self._url, self._min, self._max, self._timeout = url, min_size, max_size, timeout_s
        self._pool: asyncpg.Pool | None = None
        self._lock = asyncio.Lock()

    async def pool(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._lock:
            if self._pool is None:
                try:
                    self._pool = await asyncpg.create_pool(
                        self._url, min_size=self._min, max_size=self._max,
                        timeout=self._timeout, command_timeout=self._timeout)
                except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
                    raise DatabaseUnavailable(f"key store (PostgreSQL) unreachable: {exc}") from exc
        return self._pool

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        pool = await self.pool()
        try:
            rows: list[asyncpg.Record] = await pool.fetch(sql, *args, timeout=self._timeout)
            return rows
        except Exception as exc:
            raise _translate(exc) from exc

    async def fetchrow(self, sql: str, *args: object) -> asyncpg.Record | None:
        pool = await self.pool()
        try:
            return await pool.fetchrow(sql, *args, timeout=self._timeout)
        except Exception as exc:
            raise _translate(exc) from exc

    async def execute(self, sql: str, *args: object) -> str:
        pool = await self.pool()
        try:
            status: str = await pool.execute(sql, *args, timeout=self._timeout)
            return status
        except Exception as exc:
            raise _translate(exc) from exc

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """One connection in a transaction (the few operations that need two statements to
        agree, e.g. revoking a key unless it is the workspace's last admin)."""
        pool = await self.pool()
        try:
            async with pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                yield conn
        except Exception as exc:
            raise _translate(exc) from exc

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, (OSError, TimeoutError)) or is_transient(exc):
        return DatabaseUnavailable(f"PostgreSQL unavailable: {type(exc).__name__}: {exc}")
    return exc
