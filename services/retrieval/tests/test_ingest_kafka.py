"""KB ingest through real Kafka: seeding, replay by every instance, live changes and
retractions, dead letters with reasons, re-seeding that publishes nothing."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from attesta_contracts.topics import DEAD_LETTERED, KB_CARDS
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_testing.infra import kafka_bootstrap, publish_raw
from attesta_retrieval.adapters.dense_store import DenseStore, make_client
from attesta_retrieval.adapters.sparse import SparseIndex
from attesta_retrieval.bootstrap import build_bus
from attesta_retrieval.domain.chunking import chunk_card
from attesta_retrieval.entrypoints.kb_ingest import CONSUMER, KbIngest
from attesta_retrieval.service_layer.indexing import KbIndex
from attesta_retrieval.service_layer.seeding import published, retract, seed_kb

pytestmark = pytest.mark.integration


async def _dlq_end(bootstrap: str) -> dict[TopicPartition, int]:
    await ensure_topics(bootstrap, [DEAD_LETTERED])
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await c.start()
    try:
        parts = [TopicPartition(DEAD_LETTERED, p)
                 for p in (await c._client.fetch_all_metadata()).partitions_for_topic(DEAD_LETTERED)]  # noqa: SLF001 - aiokafka has no public API
        return await c.end_offsets(parts)
    finally:
        await c.stop()


async def _dead_letters(bootstrap: str, since: dict, topic: str, want: int,
                        timeout: float = 30) -> list[dict]:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await c.start()
    found: list[dict] = []
    try:
        c.assign(list(since))
        for tp, off in since.items():
            c.seek(tp, off)
        deadline = asyncio.get_running_loop().time() + timeout
        while len(found) < want and asyncio.get_running_loop().time() < deadline:
            for recs in (await c.getmany(timeout_ms=500)).values():
                for r in recs:
                    p = orjson.loads(r.value)["payload"]
                    if p["source_topic"] == topic:
                        found.append(p)
    finally:
        await c.stop()
    return found


class Instance:
    """One retrieval instance's ingest side, in process: its own reader and state dir."""

    def __init__(self, bootstrap, topic, state, embedder_cls, messaging) -> None:
        self.embedder = embedder_cls()
        dense = DenseStore(make_client(state / "chroma", None), "kb-ingest-test")
        self.index = KbIndex(dense, self.embedder, SparseIndex(state / "bm25"),
                             chunk_words=40, overlap_words=10)
        self.ingest = KbIngest(messaging, topic, self.index, build_bus(index=self.index),
                               client_id=f"test-{uuid.uuid4().hex[:6]}")
        self.task = None

    async def __aenter__(self):
        await self.ingest.start()
        self.task = asyncio.create_task(self.ingest.run())
        await asyncio.wait_for(self.ingest.replayed.wait(), 60)
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.ingest.stop()

    def state(self) -> dict[str, str]:
        return {cid: c.content_sha256 for cid, c in self.index.cards.items()}


async def _until(cond, timeout=30.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


async def test_kb_topic_round_trip(tmp_path, hashing_embedder):
    from attesta_kb import load_cards
    from attesta_kb_tools.fixtures import load_degraded_cards

    bootstrap = kafka_bootstrap()
    topic = f"kb.cards.test-{uuid.uuid4().hex[:8]}"
    cards = load_cards()[:20]
    first = await seed_kb(bootstrap, topic, cards=cards, progress=False)
    assert first["published"] == 20 and first["unchanged"] == 0
    again = await seed_kb(bootstrap, topic, cards=cards, progress=False)
    assert again["published"] == 0 and again["unchanged"] == 20  # re-seeding does nothing

    # Poison on the topic: the degraded card whose metadata is a string, a card whose hash
    # does not match its content, bytes that are not UTF-8, and a duplicate of a good card.
    messaging = Messaging(bootstrap, "retrieval-test")
    await messaging.start()
    dlq_from = await _dlq_end(bootstrap)
    try:
        bad_meta = next(c for c in load_degraded_cards() if not isinstance(c["metadata"], dict))
        env = messaging.envelope(KB_CARDS, published(cards[0]), correlation_id="t")
        raw = env.model_dump(mode="json")
        raw["payload"]["card"] = bad_meta
        await publish_raw(messaging, topic, orjson.dumps(raw), key=bad_meta["card_id"].encode())
        tampered = published(cards[1]).model_copy(update={"content_sha256": "f" * 64})
        env = messaging.envelope(KB_CARDS, tampered, correlation_id="t")
        await messaging.publish_envelope(topic, env, key=cards[1]["card_id"])
        await publish_raw(messaging, topic, b"\xff\xfe not utf-8", key=b"whatever")
        env = messaging.envelope(KB_CARDS, published(cards[2]), correlation_id="dup")
        await messaging.publish_envelope(topic, env, key=cards[2]["card_id"])

        async with Instance(bootstrap, topic, tmp_path / "a", hashing_embedder, messaging) as a, \
                Instance(bootstrap, topic, tmp_path / "b", hashing_embedder, messaging) as b:
            # Every instance builds the full index (no shared group splitting the cards).
            expected = {c["card_id"]: published(c).content_sha256 for c in cards}
            assert a.state() == b.state() == expected
            assert a.index.dense.stored_hashes() == expected
            assert a.index.stats.dead_lettered == 3
            letters = await _dead_letters(bootstrap, dlq_from, topic, want=6)
            reasons = [(letter["consumer"], letter["error"]) for letter in letters]
            assert all(consumer == CONSUMER for consumer, _ in reasons)
            assert any("card.metadata" in r and "object" in r for _, r in reasons), reasons
            assert any("does not match" in r for _, r in reasons), reasons
            assert any("not UTF-8" in r for _, r in reasons), reasons
            assert base64.b64decode(letters[0]["original_b64"])  # the original bytes travel

            # A changed card propagates to the running instances; only it is re-embedded.
            before = a.embedder.texts_embedded
            changed = {**cards[3], "text": cards[3]["text"] + " Revised in 2026."}
            res = await seed_kb(bootstrap, topic, cards=[*cards[:3], changed, *cards[4:]],
                                progress=False)
            # The changed card, and the good version of the card whose latest copy on the topic
            # was the refused (tampered) one: re-seeding repairs what compaction would keep.
            assert res["published"] == 2
            new_sha = published(changed).content_sha256
            await _until(lambda: a.state().get(changed["card_id"]) == new_sha
                         and b.state().get(changed["card_id"]) == new_sha)
            one_card = len(chunk_card(changed["card_id"], changed["title"], changed["text"], 40, 10))
            assert a.embedder.texts_embedded - before == one_card  # that card's chunks, no more
            await _until(lambda: not a.index.sparse_dirty)
            hits = a.index.sparse.search("Revised 2026", 3)
            assert hits and hits[0][0] == changed["card_id"]

            # A retraction (a tombstone: a null value) removes it everywhere.
            await retract(messaging, topic, cards[5]["card_id"])
            await _until(lambda: cards[5]["card_id"] not in a.state()
                         and cards[5]["card_id"] not in b.state())
            assert cards[5]["card_id"] not in a.index.dense.stored_hashes()
    finally:
        await messaging.stop()

    # A restarted instance on the same state dir replays the topic and embeds nothing new.
    restarted = Instance(bootstrap, topic, tmp_path / "a", hashing_embedder, messaging)
    await messaging.start()
    try:
        async with restarted as a2:
            assert a2.embedder.texts_embedded == 0
            assert cards[5]["card_id"] not in a2.state() and len(a2.state()) == 19
    finally:
        await messaging.stop()
    assert json.dumps(a2.index.stats.as_dict())
