"""The KB ingest: replay ``kb.cards.v1`` into the indexes, then follow it.

The messaging core's group-less replay (``Messaging.replay``) reads the compacted topic from
the beginning on every start; a tombstone (null value) is a retracted card. Undecodable
records and refused cards (hash mismatch, key != card id) are dead-lettered with the reason;
a dependency failure (Chroma server down) holds the batch and is retried: nothing read is
skipped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from attesta_contracts.topics import KB_CARDS
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import ReplayItem
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging, topic_or_copy
from attesta_retrieval.domain.commands import IndexCards
from attesta_retrieval.service_layer.indexing import KbIndex

log = get_logger("attesta.retrieval.ingest")
CONSUMER = "retrieval-kb-ingest"


class KbIngest:
    def __init__(self, messaging: Messaging, topic: str, index: KbIndex, bus: MessageBus, *,
                 client_id: str, max_records: int = 256, progress_every_s: float = 2.0) -> None:
        """``topic``: ``kb.cards.v1`` or a copy of it (``ATTESTA_RETRIEVAL_KB_TOPIC``). ``bus``
        applies each batch read (``IndexCards``); ``index`` is the one it applies them to,
        whose progress, sweep after the replay and BM25 rebuilds this reader drives."""
        self.index = index
        self.bus = bus
        self.reader = messaging.replay(topic_or_copy(KB_CARDS, topic), name=CONSUMER,
                                       handler=self._apply, max_records=max_records,
                                       client_id=client_id)
        self.replayed = asyncio.Event()
        self.progress = (0, 0)
        self._progress_every_s = progress_every_s

    async def start(self) -> None:
        await self.reader.start()

    async def stop(self) -> None:
        await self.reader.stop()

    async def _apply(self, items: Sequence[ReplayItem]) -> list[tuple[ReplayItem, str]]:
        """Index a batch; cards refused by the rules come back with their reason."""
        return await self.bus.handle(IndexCards(tuple(items)))

    async def run(self) -> None:
        started = last_log = time.monotonic()
        while True:
            read = await self.reader.poll()
            self.index.stats.dead_lettered = self.reader.dead_lettered
            if not self.replayed.is_set():
                self.progress = await self.reader.progress()
                now = time.monotonic()
                if now - last_log >= self._progress_every_s:
                    last_log = now
                    log.info("ingesting KB", records_read=self.progress[0],
                             records_at_start=self.progress[1], **self.index.stats.as_dict())
                if self.reader.caught_up.is_set():
                    await asyncio.to_thread(self.index.sweep_unseen)
                    await asyncio.to_thread(self.index.rebuild_sparse)
                    self.replayed.set()
                    log.info("KB replayed: index ready", cards=len(self.index.cards),
                             seconds=round(time.monotonic() - started, 1),
                             **self.index.stats.as_dict())
            elif not read and self.index.sparse_dirty:
                # Changes after the replay: rebuild BM25 once the topic is quiet.
                await asyncio.to_thread(self.index.rebuild_sparse)
                log.info("KB changed: indexes updated", cards=len(self.index.cards),
                         **self.index.stats.as_dict())
