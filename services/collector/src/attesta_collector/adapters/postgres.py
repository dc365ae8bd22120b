"""PostgreSQL side of the collector (asyncpg): catalog rows, planned slots and the collection
work queue.

Work is shared between collector instances by row locks only (no in-memory timer decides who
does what): a planner locks a due schedule row with ``FOR UPDATE SKIP LOCKED`` and writes the
slot's collections in the same transaction; a worker claims pending collections with
``FOR UPDATE SKIP LOCKED`` and a lease. A crash loses at most a lease: when it expires the
collection is claimable again, and its deterministic id keeps it one sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import orjson


async def _init(conn: asyncpg.Connection) -> None:
    for t in ("json", "jsonb"):
        await conn.set_type_codec(t, encoder=lambda v: orjson.dumps(v).decode(),
                                  decoder=orjson.loads, schema="pg_catalog")


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10,
                      timeout: float = 20.0) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                                     init=_init)


# --------------------------------------------------------------------------- prompts

PROMPT_COLUMNS = ("workspace_id, prompt_id, prompt_set, text, locale, tags, brand_ids, branded, "
                  "branded_brand_ids, created_at, updated_at, retired_at")


async def insert_prompt(conn: asyncpg.Connection, row: dict[str, Any]) -> asyncpg.Record | None:
    """None when the workspace already has a prompt with the same key (set, locale, text)."""
    return await conn.fetchrow(
        f"INSERT INTO prompts (workspace_id, prompt_id, prompt_set, text, locale, tags, brand_ids, "
        f"branded, branded_brand_ids, prompt_key) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) "
        f"ON CONFLICT DO NOTHING RETURNING {PROMPT_COLUMNS}",
        row["workspace_id"], row["prompt_id"], row["prompt_set"], row["text"], row["locale"],
        row["tags"], row["brand_ids"], row["branded"], row["branded_brand_ids"], row["prompt_key"])


async def prompt_by_key(conn: asyncpg.Connection, ws: str, key: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 AND prompt_key=$2", ws, key)


async def get_prompt(conn: asyncpg.Connection, ws: str, prompt_id: str,
                     for_update: bool = False) -> asyncpg.Record | None:
    lock = " FOR UPDATE" if for_update else ""
    return await conn.fetchrow(
        f"SELECT {PROMPT_COLUMNS}, prompt_key FROM prompts WHERE workspace_id=$1 AND prompt_id=$2"
        + lock, ws, prompt_id)


async def update_prompt(conn: asyncpg.Connection, ws: str, prompt_id: str,
                        row: dict[str, Any]) -> asyncpg.Record:
    return await conn.fetchrow(
        f"UPDATE prompts SET prompt_set=$3, text=$4, locale=$5, tags=$6, brand_ids=$7, branded=$8, "
        f"branded_brand_ids=$9, prompt_key=$10, updated_at=now() "
        f"WHERE workspace_id=$1 AND prompt_id=$2 RETURNING {PROMPT_COLUMNS}",
        ws, prompt_id, row["prompt_set"], row["text"], row["locale"], row["tags"],
        row["brand_ids"], row["branded"], row["branded_brand_ids"], row["prompt_key"])


async def retire_prompt(conn: asyncpg.Connection, ws: str, prompt_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"UPDATE prompts SET retired_at=coalesce(retired_at, now()), updated_at=now() "
        f"WHERE workspace_id=$1 AND prompt_id=$2 RETURNING {PROMPT_COLUMNS}", ws, prompt_id)


async def list_prompts(conn: asyncpg.Connection, ws: str, *, prompt_set: str | None,
                       branded: bool | None, tag: str | None, include_retired: bool,
                       limit: int, after: str | None) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 "
        "AND ($2::text IS NULL OR prompt_set=$2) AND ($3::boolean IS NULL OR branded=$3) "
        "AND ($4::text IS NULL OR tags->>'topic'=$4 OR tags->>'persona'=$4 OR tags->>'funnel'=$4) "
        "AND ($5 OR retired_at IS NULL) AND ($6::text IS NULL OR prompt_id > $6) "
        "ORDER BY prompt_id LIMIT $7", ws, prompt_set, branded, tag, include_retired, after, limit)


async def live_prompts(conn: asyncpg.Connection, ws: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT prompt_id, prompt_set, text, tags, brand_ids FROM prompts "
        "WHERE workspace_id=$1 AND retired_at IS NULL ORDER BY prompt_id", ws)


# --------------------------------------------------------------------------- engines, schedules

async def upsert_engine(conn: asyncpg.Connection, ws: str, engine_id: str, spec: dict,
                        create_only: bool) -> asyncpg.Record | None:
    if create_only:
        return await conn.fetchrow(
            "INSERT INTO engines (workspace_id, engine_id, spec) VALUES ($1,$2,$3) "
            "ON CONFLICT DO NOTHING RETURNING *", ws, engine_id, spec)
    return await conn.fetchrow(
        "UPDATE engines SET spec=$3, updated_at=now() WHERE workspace_id=$1 AND engine_id=$2 "
        "RETURNING *", ws, engine_id, spec)


async def get_engine(conn: asyncpg.Connection, ws: str, engine_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM engines WHERE workspace_id=$1 AND engine_id=$2",
                               ws, engine_id)


async def list_engines(conn: asyncpg.Connection, ws: str | None) -> list[asyncpg.Record]:
    return await conn.fetch("SELECT * FROM engines WHERE ($1::text IS NULL OR workspace_id=$1) "
                            "ORDER BY workspace_id, engine_id", ws)


async def retire_engine(conn: asyncpg.Connection, ws: str, engine_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "UPDATE engines SET retired_at=coalesce(retired_at, now()), updated_at=now() "
        "WHERE workspace_id=$1 AND engine_id=$2 RETURNING *", ws, engine_id)


async def insert_schedule(conn: asyncpg.Connection, ws: str, schedule_id: str, spec: dict,
                          active: bool, next_due_at: datetime) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "INSERT INTO schedules (workspace_id, schedule_id, spec, active, next_due_at) "
        "VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING RETURNING *",
        ws, schedule_id, spec, active, next_due_at)


async def update_schedule(conn: asyncpg.Connection, ws: str, schedule_id: str, spec: dict,
                          active: bool, next_due_at: datetime) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "UPDATE schedules SET spec=$3, active=$4, updated_at=now(), next_due_at=$5 "
        "WHERE workspace_id=$1 AND schedule_id=$2 RETURNING *",
        ws, schedule_id, spec, active, next_due_at)


async def get_schedule(conn: asyncpg.Connection, ws: str, schedule_id: str,
                       for_update: bool = False) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT * FROM schedules WHERE workspace_id=$1 AND schedule_id=$2"
        + (" FOR UPDATE" if for_update else ""), ws, schedule_id)


async def list_schedules(conn: asyncpg.Connection, ws: str) -> list[asyncpg.Record]:
    return await conn.fetch("SELECT * FROM schedules WHERE workspace_id=$1 ORDER BY schedule_id", ws)


async def retire_schedule(conn: asyncpg.Connection, ws: str, schedule_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "UPDATE schedules SET retired_at=coalesce(retired_at, now()), active=false, "
        "updated_at=now() WHERE workspace_id=$1 AND schedule_id=$2 RETURNING *", ws, schedule_id)


async def claim_due_schedules(conn: asyncpg.Connection, now: datetime, limit: int
                              ) -> list[asyncpg.Record]:
    """Due schedule rows, locked for this transaction; another planner skips them."""
    return await conn.fetch(
        "SELECT * FROM schedules WHERE active AND retired_at IS NULL AND next_due_at <= $1 "
        "ORDER BY next_due_at LIMIT $2 FOR UPDATE SKIP LOCKED", now, limit)


async def mark_planned(conn: asyncpg.Connection, ws: str, schedule_id: str,
                       planned_through: datetime | None, next_due_at: datetime) -> None:
    await conn.execute(
        "UPDATE schedules SET planned_through=greatest(planned_through, $3), next_due_at=$4 "
        "WHERE workspace_id=$1 AND schedule_id=$2", ws, schedule_id, planned_through, next_due_at)


async def insert_planned_slot(conn: asyncpg.Connection, ws: str, schedule_id: str,
                              slot: datetime, collections: int, skipped_before: int,
                              trigger: str) -> bool:
    return bool(await conn.fetchval(
        "INSERT INTO planned_slots (workspace_id, schedule_id, slot, collections, skipped_before, "
        "trigger) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING RETURNING true",
        ws, schedule_id, slot, collections, skipped_before, trigger))


# --------------------------------------------------------------------------- collections

async def insert_collections(conn: asyncpg.Connection, rows: list[tuple]) -> int:
    """Rows: (collection_id, ws, schedule, prompt, engine, slot, sample, prompt_text, brand_ids,
    prompt_set, prompt_tags). Existing ids are kept as they are (a re-plan changes nothing)."""
    if not rows:
        return 0
    cols = list(zip(*rows, strict=True))
    return len(await conn.fetch(
        "INSERT INTO collections (collection_id, workspace_id, schedule_id, prompt_id, engine_id, "
        "slot, sample, prompt_text, brand_ids, prompt_set, prompt_tags) "
        "SELECT c, w, s, p, e, t, n, x, string_to_array(b, chr(31)), ps, g::jsonb FROM "
        "unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], "
        "$7::int[], $8::text[], $9::text[], $10::text[], $11::text[]) "
        "AS u(c, w, s, p, e, t, n, x, b, ps, g) "
        "ON CONFLICT DO NOTHING RETURNING 1",
        list(cols[0]), list(cols[1]), list(cols[2]), list(cols[3]), list(cols[4]), list(cols[5]),
        list(cols[6]), list(cols[7]), ["\x1f".join(b) for b in cols[8]], list(cols[9]),
        [orjson.dumps(g).decode() for g in cols[10]]))


async def claim_collections(conn: asyncpg.Connection, ws: str, engine_id: str, owner: str,
                            lease_s: float, limit: int, schedule_id: str | None = None
                            ) -> list[asyncpg.Record]:
    """Lease up to ``limit`` pending collections of one engine (oldest slot first)."""
    return await conn.fetch(
        "UPDATE collections c SET lease_owner=$3, lease_until=now() + make_interval(secs => $4), "
        "claims=claims+1 WHERE collection_id IN ("
        "  SELECT collection_id FROM collections WHERE workspace_id=$1 AND engine_id=$2 "
        "  AND status='pending' AND (lease_until IS NULL OR lease_until < now()) "
        "  AND ($6::text IS NULL OR schedule_id=$6) "
        "  ORDER BY slot, collection_id LIMIT $5 FOR UPDATE SKIP LOCKED) "
        "RETURNING c.*", ws, engine_id, owner, lease_s, limit, schedule_id)


async def engines_with_pending(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """The engine rows that have claimable collections, in one statement (a worker's round)."""
    return await conn.fetch(
        "SELECT e.* FROM engines e WHERE EXISTS (SELECT 1 FROM collections c "
        "WHERE c.workspace_id = e.workspace_id AND c.engine_id = e.engine_id "
        "AND c.status = 'pending' AND (c.lease_until IS NULL OR c.lease_until < now()))")


async def store_raws(conn: asyncpg.Connection, bodies: dict[str, bytes]) -> None:
    """Store raw bodies by their SHA-256 (known ones are left as they are): one statement."""
    await conn.execute("INSERT INTO raw_responses (sha256, body) "
                       "SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT DO NOTHING",
                       list(bodies), list(bodies.values()))


@dataclass(frozen=True)
class Collected:
    run_id: str | None
    model: str
    answer_sha256: str | None
    raw_sha256: str | None
    latency_ms: float | None
    usage: dict | None
    sources: list[dict]


async def finish_collected(conn: asyncpg.Connection, collection_id: str, c: Collected,
                           attempts: int, from_status: tuple[str, ...] = ("pending",)) -> bool:
    """Mark one collection collected; False when it already was (another instance or a
    redelivered reply got there first): the caller then stages nothing."""
    return bool(await conn.fetchval(
        "UPDATE collections SET status='collected', run_id=$2, model=$3, answer_sha256=$4, "
        "raw_sha256=$5, latency_ms=$6, usage=$7, sources=$8, attempts=attempts+$9, "
        "last_error=NULL, lease_owner=NULL, lease_until=NULL, finished_at=now() "
        "WHERE collection_id=$1 AND status = ANY($10::text[]) RETURNING true",
        collection_id, c.run_id, c.model, c.answer_sha256, c.raw_sha256, c.latency_ms, c.usage,
        c.sources, attempts, list(from_status)))


async def finish_collected_many(conn: asyncpg.Connection,
                                items: list[tuple[str, Collected, int]]) -> set[str]:
    """``finish_collected`` of many pending collections in one statement; returns the ids it
    moved (the others were already finished elsewhere: the caller stages nothing for them)."""
    rows = await conn.fetch(
        "UPDATE collections c SET status='collected', run_id=u.run_id, model=u.model, "
        "answer_sha256=u.answer_sha256, raw_sha256=u.raw_sha256, latency_ms=u.latency_ms, "
        "usage=u.usage::jsonb, sources=u.sources::jsonb, attempts=c.attempts+u.attempts, "
        "last_error=NULL, lease_owner=NULL, lease_until=NULL, finished_at=now() "
        "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], "
        "  $6::float8[], $7::text[], $8::text[], $9::int[]) "
        "  AS u(collection_id, run_id, model, answer_sha256, raw_sha256, latency_ms, usage, "
        "       sources, attempts) "
        "WHERE c.collection_id = u.collection_id AND c.status = 'pending' "
        "RETURNING c.collection_id",
        [i for i, _, _ in items], [c.run_id for _, c, _ in items], [c.model for _, c, _ in items],
        [c.answer_sha256 for _, c, _ in items], [c.raw_sha256 for _, c, _ in items],
        [c.latency_ms for _, c, _ in items],
        [None if c.usage is None else orjson.dumps(c.usage).decode() for _, c, _ in items],
        [orjson.dumps(c.sources).decode() for _, c, _ in items], [a for _, _, a in items])
    return {r["collection_id"] for r in rows}


async def finish_failed(conn: asyncpg.Connection, collection_id: str, reason: str,
                        attempts: int, from_status: tuple[str, ...] = ("pending",)
                        ) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "UPDATE collections SET status='failed', last_error=$2, attempts=attempts+$3, "
        "lease_owner=NULL, lease_until=NULL, finished_at=now() "
        "WHERE collection_id=$1 AND status = ANY($4::text[]) RETURNING *",
        collection_id, reason[:4000], attempts, list(from_status))


async def mark_awaiting(conn: asyncpg.Connection, collection_id: str) -> bool:
    return bool(await conn.fetchval(
        "UPDATE collections SET status='awaiting_reply', requested_at=now(), attempts=attempts+1, "
        "lease_owner=NULL, lease_until=NULL WHERE collection_id=$1 AND status='pending' "
        "RETURNING true", collection_id))


async def expired_awaiting(conn: asyncpg.Connection, older_than_s: float, limit: int
                           ) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT * FROM collections WHERE status='awaiting_reply' "
        "AND requested_at < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE SKIP LOCKED",
        older_than_s, limit)


async def get_collection(conn: asyncpg.Connection, collection_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM collections WHERE collection_id=$1", collection_id)


async def list_collections(conn: asyncpg.Connection, ws: str, *, schedule_id: str | None,
                           status: str | None, slot: datetime | None, limit: int,
                           after: str | None) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT * FROM collections WHERE workspace_id=$1 AND ($2::text IS NULL OR schedule_id=$2) "
        "AND ($3::text IS NULL OR status=$3) AND ($4::timestamptz IS NULL OR slot=$4) "
        "AND ($5::text IS NULL OR collection_id > $5) ORDER BY collection_id LIMIT $6",
        ws, schedule_id, status, slot, after, limit)


async def slot_progress(conn: asyncpg.Connection, ws: str, schedule_id: str,
                        slot: datetime) -> dict[str, int]:
    rows = await conn.fetch("SELECT status, count(*) AS n FROM collections WHERE workspace_id=$1 "
                            "AND schedule_id=$2 AND slot=$3 GROUP BY status", ws, schedule_id, slot)
    return {r["status"]: r["n"] for r in rows}


async def get_raw(conn: asyncpg.Connection, sha256: str) -> bytes | None:
    return await conn.fetchval("SELECT body FROM raw_responses WHERE sha256=$1", sha256)
