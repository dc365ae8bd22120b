"""Reading the compacted KB topic from the beginning with manual partition assignment.

No consumer group: every retrieval instance must see *every* card (a shared group would split
the partitions between instances), and each start replays the whole topic, so there is no
offset to commit. Tombstones (``None`` values) come through as deletions.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition


class KbTopicReader:
    def __init__(self, bootstrap_servers: str, topic: str, client_id: str,
                 max_records: int = 256) -> None:
        self.topic = topic
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers, client_id=client_id, group_id=None,
            enable_auto_commit=False, auto_offset_reset="earliest", isolation_level="read_committed",
        )
        self._max_records = max_records
        self._partitions: list[TopicPartition] = []
        self.end_at_start: dict[TopicPartition, int] = {}

    async def start(self, timeout_s: float = 30.0) -> None:
        await self._consumer.start()
        try:
            await self._assign(timeout_s)
        except BaseException:
            await self._consumer.stop()
            raise

    async def _assign(self, timeout_s: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            # A fresh metadata fetch: the consumer's cache knows no topic it is not assigned.
            metadata = await self._consumer._client.fetch_all_metadata()  # noqa: SLF001
            parts = metadata.partitions_for_topic(self.topic)
            if parts:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"topic {self.topic} has no partitions")
            await asyncio.sleep(0.2)
        self._partitions = [TopicPartition(self.topic, p) for p in sorted(parts)]
        self._consumer.assign(self._partitions)
        await self._consumer.seek_to_beginning(*self._partitions)
        self.end_at_start = await self._consumer.end_offsets(self._partitions)

    async def stop(self) -> None:
        await self._consumer.stop()

    async def read(self, timeout_ms: int = 500) -> list[ConsumerRecord]:
        got = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=self._max_records)
        return [rec for tp in sorted(got, key=lambda t: t.partition) for rec in got[tp]]

    async def progress(self) -> tuple[int, int]:
        """(records read, records that existed at start) over all partitions."""
        done = total = 0
        for tp, end in self.end_at_start.items():
            pos = await self._consumer.position(tp)
            total += end
            done += min(pos, end)
        return done, total

    async def caught_up(self) -> bool:
        for tp, end in self.end_at_start.items():
            if await self._consumer.position(tp) < end:
                return False
        return True


async def publish_tombstone(bootstrap_servers: str, topic: str, key: str) -> None:
    """A null value for ``key``: what log compaction keeps of a retracted card. (The messaging
    core sends ``None`` as empty bytes, which is not a tombstone.)"""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, acks="all",
                                enable_idempotence=True)
    await producer.start()
    try:
        await producer.send_and_wait(topic, value=None, key=key.encode())
    finally:
        await producer.stop()
