"""Idempotent consumption backed by PostgreSQL: an inbox row per (consumer, event id), written
in the same transaction as the handler's effect. A redelivered event finds its row and the
effect is skipped, so at-least-once delivery changes state exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

INBOX_DDL = """
CREATE TABLE IF NOT EXISTS messaging_inbox (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
)
"""


async def process_once(
    pool: asyncpg.Pool,
    consumer: str,
    event_id: uuid.UUID,
    effect: Callable[[asyncpg.Connection], Awaitable[Any]],
) -> bool:
    """Run ``effect`` inside one transaction with the inbox claim. Returns False (and does
    nothing) when this consumer already processed ``event_id``."""
    async with pool.acquire() as conn, conn.transaction():
        claimed = await conn.fetchval(
            "INSERT INTO messaging_inbox (consumer, event_id) VALUES ($1, $2) "
            "ON CONFLICT DO NOTHING RETURNING true",
            consumer,
            event_id,
        )
        if not claimed:
            return False
        await effect(conn)
        return True
