"""The evidence service's unit of work and repositories (the ports its service layer uses).

``adapters/postgres.py`` implements them on PostgreSQL, ``adapters/memory.py`` in memory (the
fakes of the service layer's unit tests); ``tests/test_stores.py`` runs one suite against both.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Protocol

from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import (
    IncomingEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow)
from attesta_platform.unit_of_work import Outbox


class EvidenceRepository(Protocol):
    async def record_many(self, items: Sequence[IncomingEvidence]) -> list[RecordOutcome]:
        """Store each content once (new ones appended to the log in list order, gap-free) and
        each reference once. Outcomes in list order; a repeat inside the batch is unchanged."""

    async def get(self, sha256: str) -> StoredEvidence | None: ...

    async def public_view(self, sha256: str) -> tuple[StoredEvidence, dict[str, int]] | None:
        """The evidence and its reference counts by kind."""

    async def content(self, sha256: str) -> bytes | None: ...

    async def references(self, sha256: str, workspace_id: str) -> list[StoredReference]:
        """The workspace's references to the evidence, oldest first."""

    async def leaves(self, start: int, end: int) -> list[StoredEvidence]:
        """The evidence at log indices [start, end), in index order."""


class LogRepository(Protocol):
    async def size(self) -> int: ...

    async def range_hashes(self, ranges: list[merkle.Range]) -> list[bytes]:
        """The Merkle tree hash of each range of leaves."""

    async def latest_head(self) -> TreeHeadRow | None: ...

    async def add_head(self, head: TreeHeadRow) -> bool:
        """False when a head of that size by that key exists."""

    async def lock_signing(self) -> None:
        """Wait for the tree-head signing lock (every instance's), held until the unit of work
        ends: heads are issued one at a time, never with an earlier timestamp than the last."""


class UnitOfWork(Protocol):
    evidence: EvidenceRepository
    log: LogRepository
    outbox: Outbox  # no inbox: content addressing makes a redelivery change nothing

    async def __aenter__(self) -> UnitOfWork: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def commit(self) -> None: ...

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A block that only reads (no transaction)."""
