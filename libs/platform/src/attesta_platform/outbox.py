"""Transactional outbox: events are written to PostgreSQL in the same transaction as the state
change that caused them, and a relay publishes them to Kafka afterwards.

This avoids "write the database, then publish" (a crash between the two loses the event). The
relay claims rows with ``FOR UPDATE SKIP LOCKED`` in id order and marks them published only
after the broker acknowledged them, so delivery is at-least-once; consumers dedup by the
envelope's ``event_id``. It never reads "id > last seen", which would skip rows whose ids were
assigned before a slower transaction committed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from attesta_contracts import Envelope
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging, encode

log = get_logger("attesta.outbox")

OUTBOX_DDL = """
CREATE TABLE IF NOT EXISTS messaging_outbox (
    id           bigserial   PRIMARY KEY,
    topic        text        NOT NULL,
    key          text        NOT NULL,
    event_id     uuid        NOT NULL UNIQUE,
    value        bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX IF NOT EXISTS messaging_outbox_pending
    ON messaging_outbox (id) WHERE published_at IS NULL;
"""


async def enqueue(conn: asyncpg.Connection, topic: str, key: str, envelope: Envelope[Any]) -> None:
    """Stage an event inside the caller's transaction (idempotent per event id)."""
    await conn.execute(
        "INSERT INTO messaging_outbox (topic, key, event_id, value) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (event_id) DO NOTHING",
        topic,
        key,
        envelope.event_id,
        encode(envelope),
    )


async def relay_batch(pool: asyncpg.Pool, messaging: Messaging, limit: int = 1000) -> int:
    """Publish up to ``limit`` pending rows; returns how many were published.

    The whole batch is handed to the idempotent producer in id order first, then every ack
    (``acks=all``) is awaited before the rows are marked: per-partition order is kept by the
    producer, and the relay is not capped at one event per broker round trip. A failure rolls
    the claim back, so the rows are sent again (at-least-once; consumers dedup by event id).
    """
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            "SELECT id, topic, key, value FROM messaging_outbox WHERE published_at IS NULL "
            "ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
            limit,
        )
        if not rows:
            return 0
        pending = [await messaging.broker.publish(bytes(r["value"]), topic=r["topic"],
                                                  key=r["key"].encode(), no_confirm=True)
                   for r in rows]  # appended to the producer in id order
        await asyncio.gather(*pending)
        await conn.execute(
            "UPDATE messaging_outbox SET published_at = now() WHERE id = ANY($1::bigint[])",
            [r["id"] for r in rows],
        )
        return len(rows)


async def run_relay(
    pool: asyncpg.Pool, messaging: Messaging, stop: asyncio.Event, idle_s: float = 0.05
) -> None:
    """Relay until ``stop`` is set; a failure (broker or database away) is retried after a pause."""
    delay = idle_s
    while not stop.is_set():
        try:
            published = await relay_batch(pool, messaging)
            delay = idle_s
        except Exception as exc:  # noqa: BLE001 - the relay must outlive outages
            log.warning("outbox relay failed; retrying", error=repr(exc))
            published, delay = 0, min(delay * 2, 5.0)
        if not published:
            try:
                await asyncio.wait_for(stop.wait(), timeout=delay)
            except TimeoutError:
                pass
