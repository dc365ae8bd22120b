"""The unit of work every service's service layer writes through (cosmicpython, chapter 6).

``async with uow:`` opens one PostgreSQL transaction on a pooled connection and binds the
service's repositories to it; ``await uow.commit()`` makes what was written durable, leaving the
block without it rolls everything back. The transactional outbox and the inbox are repositories
of every unit of work, so an effect, the events it stages and the claim of the message that
caused it commit or vanish together. ``async with uow.read():`` is for use cases that only read:
the same repositories on a connection without a transaction (each statement sees what is
committed when it runs), which saves the BEGIN and ROLLBACK round trips of a hot GET.

One instance serves one task at a time (it holds the connection of the block it is in); a
service function that fans out serialises its writes through the same instance or gets one per
task from the service's factory.

``InMemoryUnitOfWork`` is the fake the service layers' unit tests use: its state lives in a
``MemoryState`` shared by the units of work of one test; entering copies it, and a block left
without ``commit`` puts the copy back, so a rollback undoes writes as PostgreSQL's would.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self

import asyncpg

from attesta_platform import inbox, outbox


class Outbox(Protocol):
    async def add(self, rows: Sequence[outbox.OutboxRow]) -> None:
        """Stage events, idempotent per event id, in list order."""

    async def add_new(self, rows: Sequence[outbox.OutboxRow]) -> None:
        """Stage events whose ids cannot exist yet (derived from an input claimed in this unit
        of work): the fast path, without a conflict check."""


class Inbox(Protocol):
    async def claim(self, consumer: str, event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """The event ids ``consumer`` sees for the first time (claimed until a rollback)."""


class PostgresOutbox:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def add(self, rows: Sequence[outbox.OutboxRow]) -> None:
        await outbox.enqueue_many(self.conn, rows)

    async def add_new(self, rows: Sequence[outbox.OutboxRow]) -> None:
        await outbox.copy_many(self.conn, rows)


class PostgresInbox:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def claim(self, consumer: str, event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        return await inbox.claim_many(self.conn, consumer, event_ids)


class PostgresUnitOfWork:
    """Subclasses bind their repositories to the block's connection in ``bind``."""

    outbox: Outbox
    inbox: Inbox

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self._conn: asyncpg.Connection | None = None
        self._tx: Any = None

    def bind(self, conn: asyncpg.Connection) -> None:
        """Create the service's repositories on ``conn`` (called on entering a block)."""

    def unstorable(self, exc: asyncpg.DataError) -> Exception | None:
        """The service's domain error for a value PostgreSQL cannot store (a NUL character, a
        time out of range), raised from a block in place of the driver's, so the driver's
        errors stay in the adapters; ``None`` (the default) lets the driver's through."""
        return None

    @property
    def connection(self) -> asyncpg.Connection:
        """The block's connection, for adapters that need it directly (a COPY, a lock)."""
        if self._conn is None:
            raise RuntimeError("use the unit of work inside 'async with uow:'")
        return self._conn

    async def __aenter__(self) -> Self:
        if self._conn is not None:
            raise RuntimeError("this unit of work is already in a block (one task at a time)")
        conn = await self.pool.acquire()
        try:
            tx = conn.transaction()
            await tx.start()
        except BaseException:
            await self.pool.release(conn)
            raise
        self._conn, self._tx = conn, tx
        self.outbox, self.inbox = PostgresOutbox(conn), PostgresInbox(conn)
        self.bind(conn)
        return self

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Self]:
        if self._conn is not None:
            raise RuntimeError("this unit of work is already in a block (one task at a time)")
        async with self.pool.acquire() as conn:
            self._conn = conn
            self.outbox, self.inbox = PostgresOutbox(conn), PostgresInbox(conn)
            self.bind(conn)
            try:
                yield self
            except asyncpg.DataError as exc:
                if (mapped := self.unstorable(exc)) is None:
                    raise
                raise mapped from exc
            finally:
                self._conn = None

    async def commit(self) -> None:
        if self._tx is None:
            raise RuntimeError("nothing to commit: not in a transaction block")
        await self._tx.commit()
        self._tx = None

    async def rollback(self) -> None:
        if self._tx is not None:
            tx, self._tx = self._tx, None
            await tx.rollback()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        conn, self._conn = self._conn, None
        try:
            if not (conn is not None and conn.is_closed()):
                await self.rollback()
        finally:
            self._tx = None
            if conn is not None:
                await self.pool.release(conn)
        if isinstance(exc, asyncpg.DataError) and (mapped := self.unstorable(exc)) is not None:
            raise mapped from exc


# -- fakes ----------------------------------------------------------------------------------------
@dataclass
class MemoryState:
    """Everything the fakes of one service hold; services extend it with their own tables."""

    outbox: list[outbox.OutboxRow] = field(default_factory=list)
    inbox: set[tuple[str, uuid.UUID]] = field(default_factory=set)


class InMemoryOutbox:
    def __init__(self, state: MemoryState) -> None:
        self.state = state

    async def add(self, rows: Sequence[outbox.OutboxRow]) -> None:
        seen = {r.event_id for r in self.state.outbox}
        for r in rows:
            if r.event_id not in seen:
                self.state.outbox.append(r)
                seen.add(r.event_id)

    async def add_new(self, rows: Sequence[outbox.OutboxRow]) -> None:
        seen = {r.event_id for r in self.state.outbox}
        if any(r.event_id in seen for r in rows) or len({r.event_id for r in rows}) < len(rows):
            # PostgreSQL's COPY fails the same way (a unique violation on event_id).
            raise asyncpg.UniqueViolationError("messaging_outbox event_id already staged")
        self.state.outbox.extend(rows)


class InMemoryInbox:
    def __init__(self, state: MemoryState) -> None:
        self.state = state

    async def claim(self, consumer: str, event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        fresh = {e for e in event_ids if (consumer, e) not in self.state.inbox}
        self.state.inbox.update((consumer, e) for e in fresh)
        return fresh


class InMemoryUnitOfWork:
    """Subclasses create their repositories on ``self.state`` in ``bind``."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state
        self.committed = 0  # how many blocks committed (what unit tests assert on)
        self._saved: MemoryState | None = None
        self.outbox = InMemoryOutbox(state)
        self.inbox = InMemoryInbox(state)
        self.bind()

    def bind(self) -> None:
        """Create the service's repositories on ``self.state``."""

    async def __aenter__(self) -> Self:
        self._saved = copy.deepcopy(self.state)
        return self

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Self]:
        yield self

    async def commit(self) -> None:
        self._saved = copy.deepcopy(self.state)
        self.committed += 1

    async def rollback(self) -> None:
        if self._saved is not None:
            # Restore in place: repositories hold this very object.
            self.state.__dict__.update(copy.deepcopy(self._saved).__dict__)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.rollback()
        self._saved = None
