"""Seeding the KB topic from the shipped cards (``attesta retrieval seed-kb``).

The topic is read first (from the beginning, no consumer group) to learn the content hash of
every card's current version; only new or changed cards are published, so a second run
publishes nothing. Each card is keyed by its card id (the compaction key).
"""

from __future__ import annotations

import asyncio
import uuid

from attesta_contracts.kb import KbCard, KbCardPublished
from attesta_contracts.topics import KB_CARDS, topic as lookup_topic
from attesta_platform.messaging import Messaging, UndecodableMessage, decode, ensure_topics
from attesta_retrieval.adapters.kb_topic import KbTopicReader, publish_tombstone
from attesta_retrieval.domain.model import card_content_sha256


async def current_hashes(bootstrap: str, topic: str) -> dict[str, str | None]:
    """card id -> content hash of its latest version on the topic (None when retracted)."""
    reader = KbTopicReader(bootstrap, topic, client_id=f"attesta-seed-kb-{uuid.uuid4().hex[:6]}",
                           max_records=2000)
    spec = lookup_topic(KB_CARDS)
    state: dict[str, str | None] = {}
    await reader.start()
    try:
        while not await reader.caught_up():
            for rec in await reader.read(timeout_ms=200):
                key = rec.key.decode("utf-8", "replace") if rec.key else None
                if rec.value is None:
                    if key:
                        state[key] = None
                    continue
                try:
                    pub = decode(spec, rec.value).payload
                except UndecodableMessage:
                    continue  # the consumers dead-letter it; the next version replaces it
                state[pub.card.card_id] = None if pub.deleted else pub.content_sha256
    finally:
        await reader.stop()
    return state


def published(card: dict) -> KbCardPublished:
    model = KbCard.model_validate(card)
    return KbCardPublished(card=model, content_sha256=card_content_sha256(model.model_dump(mode="json")))


async def seed_kb(bootstrap: str, topic: str, cards: list[dict] | None = None,
                  progress: bool = True, prune: bool = False) -> dict:
    from tqdm import tqdm

    if cards is None:
        from attesta_kb import load_cards

        cards = load_cards()
    await ensure_topics(bootstrap, [topic])
    state = await current_hashes(bootstrap, topic)
    messaging = Messaging(bootstrap, "retrieval-seed-kb", linger_ms=5)
    await messaging.start()
    summary = {"topic": topic, "cards": len(cards), "published": 0, "unchanged": 0, "retracted": 0}
    try:
        wanted = set()
        pending = []
        bar = tqdm(total=len(cards), desc=f"seed-kb -> {topic}", unit="card", disable=not progress)
        for card in cards:
            pub = published(card)
            wanted.add(pub.card.card_id)
            if state.get(pub.card.card_id) == pub.content_sha256:
                summary["unchanged"] += 1
                bar.update(1)
                continue
            env = messaging.envelope(KB_CARDS, pub, correlation_id=f"seed-kb:{pub.content_sha256}")
            pending.append(messaging.publish_envelope(topic, env, key=pub.card.card_id))
            summary["published"] += 1
            if len(pending) >= 256:  # a window of in-flight sends, each still awaiting its ack
                await asyncio.gather(*pending)
                bar.update(len(pending))
                pending = []
        await asyncio.gather(*pending)
        bar.update(len(pending))
        bar.close()
        if prune:
            for card_id, sha in state.items():
                if sha is None or card_id in wanted:
                    continue
                await retract(messaging, bootstrap, topic, card_id)
                summary["retracted"] += 1
    finally:
        await messaging.stop()
    return summary


async def retract(messaging: Messaging, bootstrap: str, topic: str, card_id: str) -> None:
    """A ``deleted`` event (what live consumers act on), then a tombstone (what compaction
    keeps), both keyed by the card id."""
    placeholder = KbCard(card_id=card_id, title="(retracted)", text="(retracted)")
    pub = KbCardPublished(card=placeholder, content_sha256="0" * 64, deleted=True)
    env = messaging.envelope(KB_CARDS, pub, correlation_id=f"retract:{card_id}")
    await messaging.publish_envelope(topic, env, key=card_id)
    await publish_tombstone(bootstrap, topic, card_id)
