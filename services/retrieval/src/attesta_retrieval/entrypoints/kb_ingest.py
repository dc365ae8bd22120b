"""The KB ingest loop: replay ``kb.cards.v1`` into the indexes, then follow it.

Undecodable records (not UTF-8, invalid envelope such as a card whose metadata is not an
object) and refused cards (hash mismatch, key != card id) are dead-lettered with the reason
through the messaging core; the loop goes on. A dependency failure (Chroma server down) is
retried with the messaging retry policy, holding the batch: nothing read is skipped.
"""

from __future__ import annotations

import asyncio
import time

from attesta_contracts.topics import KB_CARDS, topic as lookup_topic
from attesta_platform.errors import is_transient
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Delivery, Messaging, UndecodableMessage, decode
from attesta_retrieval.adapters.kb_topic import KbTopicReader
from attesta_retrieval.service_layer.handlers import card_event
from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex

log = get_logger("attesta.retrieval.ingest")
CONSUMER = "retrieval-kb-ingest"


class KbIngest:
    def __init__(self, reader: KbTopicReader, index: KbIndex, messaging: Messaging,
                 progress_every_s: float = 2.0) -> None:
        self.reader = reader
        self.index = index
        self.messaging = messaging
        self.replayed = asyncio.Event()
        self.progress = (0, 0)
        self._progress_every_s = progress_every_s
        self._spec = lookup_topic(KB_CARDS)  # the payload contract, whatever the topic name

    async def _events(self, records) -> list[tuple[CardEvent, Delivery]]:
        events = []
        for rec in records:
            delivery = Delivery(rec.topic, rec.partition, rec.offset, rec.key, rec.value or b"")
            if rec.value is None:  # tombstone: the card was retracted
                if rec.key:
                    events.append((CardEvent(rec.key.decode("utf-8", "replace"), rec.partition,
                                             rec.offset, None), delivery))
                continue
            try:
                events.append((card_event(decode(self._spec, rec.value), delivery), delivery))
            except UndecodableMessage as exc:
                await self._dead_letter(delivery, str(exc))
            except Exception as exc:  # noqa: BLE001 - PermanentError and anything unforeseen
                await self._dead_letter(delivery, exc)
        return events

    async def _dead_letter(self, delivery: Delivery, reason) -> None:
        self.index.stats.dead_lettered += 1
        log.warning("dead-lettering card event", topic=delivery.topic, offset=delivery.offset,
                    reason=str(reason))
        await self.messaging.dead_letter(CONSUMER, delivery, reason, attempts=1)

    async def _apply(self, events: list[tuple[CardEvent, Delivery]]) -> None:
        """Apply a batch; a dependency failure is retried (forever, with backoff: the batch is
        held, so nothing is skipped); a batch that keeps failing for another reason is applied
        card by card and the failing cards are dead-lettered."""
        policy = self.messaging.retry
        attempt = 0
        while True:
            attempt += 1
            try:
                await asyncio.to_thread(self.index.apply, [ev for ev, _ in events])
                return
            except Exception as exc:  # noqa: BLE001 - classified below
                if not is_transient(exc) and attempt >= policy.attempts:
                    break
                log.warning("index write failed; retrying the batch", attempt=attempt,
                            error=repr(exc))
                await asyncio.sleep(policy.delay(min(attempt, 10)))
        for ev, delivery in events:
            try:
                await asyncio.to_thread(self.index.apply, [ev])
            except Exception as exc:  # noqa: BLE001 - this card cannot be indexed: say why
                await self._dead_letter(delivery, exc)

    async def run(self) -> None:
        started = last_log = time.monotonic()
        while True:
            records = await self.reader.read()
            if records:
                await self._apply(await self._events(records))
            if not self.replayed.is_set():
                self.progress = await self.reader.progress()
                now = time.monotonic()
                if now - last_log >= self._progress_every_s:
                    last_log = now
                    log.info("ingesting KB", records_read=self.progress[0], records_at_start=self.progress[1],
                             **self.index.stats.as_dict())
                if await self.reader.caught_up():
                    await asyncio.to_thread(self.index.sweep_unseen)
                    await asyncio.to_thread(self.index.rebuild_sparse)
                    self.replayed.set()
                    log.info("KB replayed: index ready", cards=len(self.index.cards),
                             seconds=round(time.monotonic() - started, 1),
                             **self.index.stats.as_dict())
            elif not records and self.index.sparse_dirty:
                # Changes after the replay: rebuild BM25 once the topic is quiet.
                await asyncio.to_thread(self.index.rebuild_sparse)
                log.info("KB changed: indexes updated", cards=len(self.index.cards),
                         **self.index.stats.as_dict())
