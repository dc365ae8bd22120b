"""The verifiable log: signed tree heads and proofs over the stored subtree hashes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_evidence.adapters.telemetry import TREE_HEADS
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import TreeHeadRow
from attesta_evidence.domain.signing import key_id, sign_tree_head
from attesta_evidence.service_layer.errors import OutOfRange as OutOfRange  # re-exported
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
from attesta_platform.logs import get_logger

log = get_logger("attesta.evidence.log")


class TransparencyLog:
    def __init__(self, new_uow: Callable[[], UnitOfWork], key: Ed25519PrivateKey,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 head_cache_s: float = 1.0) -> None:
        self.new_uow = new_uow  # one per block: the log serves concurrent requests
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
        async with self._signing, self.new_uow() as uow:
            await uow.log.lock_signing()
            latest = await uow.log.latest_head()
            size = await uow.log.size()
            if latest is not None and latest.tree_size >= size and latest.key_id == self.key_id:
                return self._remember(latest)
            # Stored subtrees never change, so [0, size) reads consistently even while writers
            # append past it.
            root = (await uow.log.range_hashes([(0, size)]))[0]
            ts = max(self._clock_ms(), latest.timestamp_ms if latest else 0)
            head = TreeHeadRow(size, root, ts, sign_tree_head(self.key, size, root, ts), self.key_id)
            await uow.log.add_head(head)
            await uow.commit()
            log.info("signed tree head", tree_size=size, root=root.hex())
        TREE_HEADS.inc()  # after the commit: a head whose insert rolled back is not counted
        self._remember(head)
        return head

    def _remember(self, head: TreeHeadRow) -> TreeHeadRow:
        if self._cached is None or head.tree_size >= self._cached[1].tree_size:
            self._cached = (time.monotonic(), head)
        return head

    async def latest(self) -> TreeHeadRow:
        async with self.new_uow().read() as uow:
            head = await uow.log.latest_head()
        return self._remember(head) if head is not None else await self.sign_latest()

    async def fresh(self) -> TreeHeadRow:
        """The latest head, signing a new one first when the log has grown past it (cheap
        check without the lock; signing happens at most once per growth)."""
        async with self.new_uow().read() as uow:
            head = await uow.log.latest_head()
            size = await uow.log.size()
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
        return await self.inclusion_at(leaf_index, tree_size)

    async def inclusion_at(self, leaf_index: int, tree_size: int) -> tuple[bytes, list[bytes]]:
        """Same, without the range check, for a size the caller got from a signed head."""
        ranges = merkle.inclusion_ranges(leaf_index, tree_size)
        async with self.new_uow().read() as uow:
            hashes = await uow.log.range_hashes([(leaf_index, leaf_index + 1), *ranges])
        return hashes[0], hashes[1:]

    async def consistency(self, first: int, second: int) -> tuple[bytes, bytes, list[bytes]]:
        """(root at first, root at second, proof)."""
        head = await self.latest()
        if not 0 < first <= second <= head.tree_size:
            raise OutOfRange(f"need 0 < first <= second <= {head.tree_size} (the latest signed "
                             f"size); got first={first}, second={second}")
        ranges = merkle.consistency_ranges(first, second)
        async with self.new_uow().read() as uow:
            hashes = await uow.log.range_hashes([(0, first), (0, second), *ranges])
        return hashes[0], hashes[1], hashes[2:]
