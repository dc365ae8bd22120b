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
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import orjson
from pydantic import BaseModel

from attesta_contracts import Envelope, topic as lookup_topic
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging, encode, envelope_bytes

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


@dataclass(frozen=True)
class OutboxRow:
    """One event to stage: its topic, Kafka key, envelope id and envelope bytes."""

    topic: str
    key: str
    event_id: uuid.UUID
    value: bytes


def staged(topic: str, key: str, payload: BaseModel, *, event_id: uuid.UUID, producer: str,
           correlation_id: str, causation_id: str | None = None) -> OutboxRow:
    """The outbox row of ``payload``'s envelope (built like ``Messaging.envelope``)."""
    return OutboxRow(topic, key, event_id, envelope_bytes(
        topic, payload, event_id=event_id, producer=producer, correlation_id=correlation_id,
        causation_id=causation_id))


def staged_json(topic: str, key: str, payload: dict[str, Any], *, event_id: uuid.UUID,
                occurred_at: datetime, producer: str, correlation_id: str,
                causation_id: str | None = None) -> OutboxRow:
    """``staged`` for a hot path: the envelope serialised straight from the payload's fields
    (JSON-ready values, aware datetimes), building and validating no pydantic model, which
    costs more than the rest of a batched write. The caller's tests parse the bytes with the
    topic's contract model (``Envelope[<payload>]``) to keep the two in step."""
    spec = lookup_topic(topic)
    return OutboxRow(topic, key, event_id, orjson.dumps({
        "event_id": str(event_id), "event_type": spec.event_type,
        "schema_version": spec.schema_version, "occurred_at": occurred_at,
        "correlation_id": correlation_id, "causation_id": causation_id, "producer": producer,
        "payload": payload}, option=orjson.OPT_UTC_Z))  # "Z", as pydantic spells UTC


async def enqueue(conn: asyncpg.Connection, topic: str, key: str, envelope: Envelope[Any]) -> None:
    """Stage one event inside the caller's transaction (idempotent per event id)."""
    await enqueue_many(conn, [OutboxRow(topic, key, envelope.event_id, encode(envelope))])


async def enqueue_many(conn: asyncpg.Connection, rows: Sequence[OutboxRow]) -> None:
    """Stage events in the caller's transaction (idempotent per event id), in list order:
    one statement for the whole batch."""
    if not rows:
        return
    await conn.execute(
        "INSERT INTO messaging_outbox (topic, key, event_id, value) "
        "SELECT topic, key, event_id, value FROM unnest($1::text[], $2::text[], $3::uuid[], $4::bytea[]) "
        "WITH ORDINALITY AS t(topic, key, event_id, value, ord) ORDER BY ord "
        "ON CONFLICT (event_id) DO NOTHING",
        [r.topic for r in rows], [r.key for r in rows], [r.event_id for r in rows],
        [r.value for r in rows])


async def copy_many(conn: asyncpg.Connection, rows: Sequence[OutboxRow]) -> None:
    """Stage events whose ids cannot exist yet (derived from an input claimed in this same
    transaction, or fresh), by COPY, in list order: the fastest path for big batches."""
    if rows:
        await conn.copy_records_to_table("messaging_outbox", columns=("topic", "key", "event_id", "value"),
                                         records=[(r.topic, r.key, r.event_id, r.value) for r in rows])


async def relay_batch(pool: asyncpg.Pool, messaging: Messaging, limit: int = 1000) -> int:
    """Publish up to ``limit`` pending rows; returns how many were published.

    One statement claims the rows (``FOR UPDATE SKIP LOCKED``: a second relay takes others)
    and marks them published; the transaction commits only after every ack (``acks=all``),
    so a failure or a crash before the commit leaves them pending and they are sent again
    (at-least-once; consumers dedup by event id). The whole batch is handed to the idempotent
    producer in id order before any ack is awaited: per-partition order is kept by the
    producer, and the relay is not capped at one event per broker round trip.
    """
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            "UPDATE messaging_outbox SET published_at = now() WHERE id IN ("
            "  SELECT id FROM messaging_outbox WHERE published_at IS NULL "
            "  ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) "
            "RETURNING id, topic, key, value",
            limit,
        )
        if not rows:
            return 0
        pending = []
        for r in sorted(rows, key=_row_id):  # RETURNING has no order: hand them over by id
            value = r["value"]
            head = orjson.loads(value)  # the same headers publish_envelope sets
            pending.append(await messaging.send(
                r["topic"], value, key=r["key"].encode(), event_type=head.get("event_type"),
                schema_version=head.get("schema_version")))
        await asyncio.gather(*pending)
        return len(rows)


def _row_id(row: asyncpg.Record) -> int:
    return int(row["id"])


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
