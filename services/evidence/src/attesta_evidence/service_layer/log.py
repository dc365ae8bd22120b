"""The verifiable log: signed tree heads and proofs over the stored subtree hashes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_evidence.adapters import postgres
from attesta_evidence.adapters.postgres import TreeHeadRow
from attesta_evidence.adapters.telemetry import TREE_HEADS
from attesta_evidence.domain import merkle
from attesta_evidence.domain.signing import key_id, sign_tree_head
from attesta_platform.logs import get_logger

log = get_logger("attesta.evidence.log")

# Signers of every instance take this lock, so tree heads are issued one at a time and a later
# head never carries an earlier timestamp.
TREE_HEAD_LOCK = 0x6174_7465_7374_6102


class OutOfRange(ValueError):
    """Sizes or indices outside the signed log."""


class TransparencyLog:
    def __init__(self, pool: asyncpg.Pool, key: Ed25519PrivateKey,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 head_cache_s: float = 1.0) -> None:
        self.pool = pool
        # The last head seen, reused for up to head_cache_s when it covers what is asked: any
        # signed head is a valid one to prove against, and hot GETs skip a query.
        self._cached: tuple[float, TreeHeadRow] | None = None
        self._head_cache_s = head_cache_s
        self.key = key
        self.public_key = key.public_key()
        self.key_id = key_id(self.public_key)
        self._clock_ms = clock_ms
        self._signing = asyncio.Lock()

    async def sign_latest(self) -> TreeHeadRow:
        """Sign the log as it is now, unless the latest head (by this key) already covers it."""
        async with self._signing, self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", TREE_HEAD_LOCK)
            latest = await postgres.latest_tree_head(conn)
            size = await postgres.log_size(conn)
            if latest is not None and latest.tree_size >= size and latest.key_id == self.key_id:
                return self._remember(latest)
            # Stored subtrees never change, so [0, size) reads consistently even while writers
            # append past it.
            root = (await postgres.range_hashes(conn, [(0, size)]))[0]
            ts = max(self._clock_ms(), latest.timestamp_ms if latest else 0)
            head = TreeHeadRow(size, root, ts, sign_tree_head(self.key, size, root, ts), self.key_id)
            await postgres.insert_tree_head(conn, head)
            log.info("signed tree head", tree_size=size, root=root.hex())
        TREE_HEADS.inc()  # after the commit: a head whose insert rolled back is not counted
        self._remember(head)
        return head

    def _remember(self, head: TreeHeadRow) -> TreeHeadRow:
        if self._cached is None or head.tree_size >= self._cached[1].tree_size:
            self._cached = (time.monotonic(), head)
        return head

    async def latest(self) -> TreeHeadRow:
        async with self.pool.acquire() as conn:
            head = await postgres.latest_tree_head(conn)
        return self._remember(head) if head is not None else await self.sign_latest()

    async def fresh(self) -> TreeHeadRow:
        """The latest head, signing a new one first when the log has grown past it (cheap
        check without the lock; signing happens at most once per growth)."""
        async with self.pool.acquire() as conn:
            head = await postgres.latest_tree_head(conn)
            size = await postgres.log_size(conn)
        if head is None or head.tree_size < size:
            head = await self.sign_latest()
        return self._remember(head)

    async def head_covering(self, leaf_index: int) -> TreeHeadRow:
        """A recent signed head that includes ``leaf_index``, signing a new one when the record
        is newer than every head (a record is provable as soon as it is readable)."""
        if self._cached is not None:
            seen_at, head = self._cached
            if head.tree_size > leaf_index and time.monotonic() - seen_at < self._head_cache_s:
                return head
        head = await self.latest()
        if head.tree_size <= leaf_index:
            head = await self.sign_latest()
        return head

    async def inclusion(self, leaf_index: int, tree_size: int) -> tuple[bytes, list[bytes]]:
        """(leaf hash, audit path) of ``leaf_index`` in the tree of ``tree_size`` leaves."""
        head = await self.latest()
        if not 0 <= leaf_index < tree_size <= head.tree_size:
            raise OutOfRange(f"need 0 <= leaf_index < tree_size <= {head.tree_size} "
                             f"(the latest signed size); got leaf_index={leaf_index}, "
                             f"tree_size={tree_size}")
        async with self.pool.acquire() as conn:
            return await self.inclusion_in(conn, leaf_index, tree_size)

    @staticmethod
    async def inclusion_in(conn: asyncpg.Connection, leaf_index: int, tree_size: int
                           ) -> tuple[bytes, list[bytes]]:
        """Same, on the caller's connection, for a size the caller got from a signed head."""
        ranges = merkle.inclusion_ranges(leaf_index, tree_size)
        hashes = await postgres.range_hashes(conn, [(leaf_index, leaf_index + 1), *ranges])
        return hashes[0], hashes[1:]

    async def consistency(self, first: int, second: int) -> tuple[bytes, bytes, list[bytes]]:
        """(root at first, root at second, proof)."""
        head = await self.latest()
        if not 0 < first <= second <= head.tree_size:
            raise OutOfRange(f"need 0 < first <= second <= {head.tree_size} (the latest signed "
                             f"size); got first={first}, second={second}")
        ranges = merkle.consistency_ranges(first, second)
        async with self.pool.acquire() as conn:
            hashes = await postgres.range_hashes(conn, [(0, first), (0, second), *ranges])
        return hashes[0], hashes[1], hashes[2:]

    async def run_signer(self, stop: asyncio.Event, interval_s: float) -> None:
        """Sign new heads every ``interval_s`` while the log grows; outlives outages."""
        while not stop.is_set():
            try:
                await self.sign_latest()
            except Exception as exc:  # noqa: BLE001 - retried next tick
                log.warning("tree head signing failed; retrying", error=repr(exc))
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval_s)
            except TimeoutError:
                pass
