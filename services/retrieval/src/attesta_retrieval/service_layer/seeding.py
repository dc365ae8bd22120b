"""Seeding the KB topic from the shipped cards (``attesta retrieval seed-kb``).

The topic is read first (from the beginning, no consumer group) to learn the content hash of
every card's current version; only new or changed cards are published, so a second run
publishes nothing. Each card is keyed by its card id (the compaction key).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Sequence
from typing import Any, TypedDict

from tqdm import tqdm

from attesta_contracts.kb import KbCard, KbCardPublished
from attesta_contracts.topics import KB_CARDS
from attesta_kb import load_cards
from attesta_platform.consuming import ReplayItem
from attesta_platform.kafka import KafkaOptions
from attesta_platform.messaging import Messaging, ensure_topics, topic_or_copy
from attesta_retrieval.domain.model import card_content_sha256


class SeedSummary(TypedDict):
    """What ``seed-kb`` prints: the cards shipped and what became of them on the topic."""

    topic: str
    cards: int
    published: int
    unchanged: int
    retracted: int


def kafka_options(settings: Any, bootstrap: str | None = None) -> KafkaOptions:
    """The settings' client (TLS, SASL, replication factor), at ``bootstrap`` if given."""
    return dataclasses.replace(KafkaOptions.from_settings(settings),
                               bootstrap_servers=bootstrap or settings.kafka_bootstrap_servers)


def _options(kafka: str | KafkaOptions) -> KafkaOptions:
    return kafka if isinstance(kafka, KafkaOptions) else KafkaOptions(kafka)


async def current_hashes(kafka: str | KafkaOptions, topic: str) -> dict[str, str | None]:
    """card id -> content hash of its latest version on the topic (None when retracted)."""
    state: dict[str, str | None] = {}

    async def note(items: Sequence[ReplayItem]) -> list[tuple[ReplayItem, str]]:
        for key, env, _ in items:
            if env is None:  # tombstone
                state[key] = None
            else:
                pub = env.payload
                state[pub.card.card_id] = None if pub.deleted else pub.content_sha256
        return []

    # Undecodable records are skipped here: the retrieval consumers dead-letter them, and the
    # next version replaces them. (This messaging object is never started: it only reads.)
    options = _options(kafka)
    reader = Messaging(options.bootstrap_servers, "retrieval-seed-kb", kafka=options).replay(
        topic_or_copy(KB_CARDS, topic), name="retrieval-seed-kb", handler=note, max_records=2000,
        client_id=f"attesta-seed-kb-{uuid.uuid4().hex[:6]}", dead_letters=False)
    await reader.start()
    try:
        while not reader.caught_up.is_set():
            await reader.poll(timeout_ms=200)
    finally:
        await reader.stop()
    return state


def published(card: dict[str, Any]) -> KbCardPublished:
    model = KbCard.model_validate(card)
    return KbCardPublished(card=model, content_sha256=card_content_sha256(model.model_dump(mode="json")))


async def seed_kb(kafka: str | KafkaOptions, topic: str, cards: list[dict[str, Any]] | None = None,
                  progress: bool = True, prune: bool = False) -> SeedSummary:
    """``kafka``: a bootstrap address, or the settings' KafkaOptions (TLS, SASL and the
    replication factor of the topic it creates: a cluster's topics need three replicas)."""
    if cards is None:
        cards = load_cards()
    options = _options(kafka)
    await ensure_topics(options, [topic])
    state = await current_hashes(options, topic)
    messaging = Messaging(options.bootstrap_servers, "retrieval-seed-kb", linger_ms=5, kafka=options)
    await messaging.start()
    summary = SeedSummary(topic=topic, cards=len(cards), published=0, unchanged=0, retracted=0)
    try:
        wanted: set[str] = set()
        pending: list[Awaitable[None]] = []
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
                await retract(messaging, topic, card_id)
                summary["retracted"] += 1
    finally:
        await messaging.stop()
    return summary


async def retract(messaging: Messaging, topic: str, card_id: str) -> None:
    """A tombstone keyed by the card id: live consumers delete the card, and compaction
    keeps nothing else of it."""
    await messaging.publish_tombstone(topic, card_id)
