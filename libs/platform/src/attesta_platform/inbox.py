"""Idempotent consumption backed by PostgreSQL: an inbox row per (consumer, event id), claimed
in the same transaction as the handler's effect. A redelivered event finds its row and the
effect is skipped, so at-least-once delivery changes state exactly once.

Every service whose effect is not idempotent by itself claims through here, one event
(``claim``) or a whole batch in one statement (``claim_many``); the table is ``INBOX_DDL``,
imported by each service's migration.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg

INBOX_DDL = """
CREATE TABLE IF NOT EXISTS messaging_inbox (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
)
"""


async def claim_many(conn: asyncpg.Connection, consumer: str,
                     event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Claim event ids for ``consumer`` in the caller's transaction; returns the ones not seen
    before. (Rolled back with the effect, so a failed effect leaves no claim.)"""
    rows = await conn.fetch(
        "INSERT INTO messaging_inbox (consumer, event_id) SELECT $1, unnest($2::uuid[]) "
        "ON CONFLICT DO NOTHING RETURNING event_id", consumer, list(event_ids))
    return {r["event_id"] for r in rows}


async def claim(conn: asyncpg.Connection, consumer: str, event_id: uuid.UUID) -> bool:
    """True when this is the first time ``consumer`` sees ``event_id``."""
    return bool(await claim_many(conn, consumer, [event_id]))
