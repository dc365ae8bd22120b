"""PostgreSQL side of the collector (asyncpg): catalog rows, planned slots and the collection
work queue, as the repositories of ``service_layer.unit_of_work``.

Work is shared between collector instances by row locks only (no in-memory timer decides who
does what): a planner locks a due schedule row with ``FOR UPDATE SKIP LOCKED`` and writes the
slot's collections in the same transaction; a worker claims pending collections with
``FOR UPDATE SKIP LOCKED`` and a lease. A crash loses at most a lease: when it expires the
collection is claimable again, and its deterministic id keeps it one sample.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Protocol

import asyncpg
import orjson

from attesta_collector.service_layer.unit_of_work import (
    Collected,
    CollectionRepository,
    EngineRepository,
    PlannedCollection,
    PromptRepository,
    Row,
    Rows,
    ScheduleRepository,
    SecretRepository,
)
from attesta_collector.domain.keys import SealedSecret
from attesta_collector.service_layer.errors import Invalid
from attesta_platform.unit_of_work import PostgresUnitOfWork


async def _init(conn: asyncpg.Connection) -> None:
    for t in ("json", "jsonb"):
        await conn.set_type_codec(t, encoder=lambda v: orjson.dumps(v).decode(),
                                  decoder=orjson.loads, schema="pg_catalog")


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10,
                      timeout: float = 20.0) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                                     init=_init)


class Connection(Protocol):
    """What the repositories use of asyncpg's connection (asyncpg ships no types)."""

    async def fetchrow(self, query: str, *args: Any) -> Row | None: ...

    async def fetch(self, query: str, *args: Any) -> Rows: ...

    async def fetchval(self, query: str, *args: Any) -> Any: ...

    async def execute(self, query: str, *args: Any) -> str: ...

    def transaction(self) -> Any: ...


class CollectorUnitOfWork(PostgresUnitOfWork):
    def unstorable(self, exc: asyncpg.DataError) -> Exception:
        """A value PostgreSQL cannot store leaves a block as the service layer's ``Invalid``
        (``invalid_request``, a 422 at the HTTP edge)."""
        return Invalid("invalid_request", f"unstorable value: {exc}")

    def bind(self, conn: asyncpg.Connection) -> None:
        self.prompts: PromptRepository = PostgresPrompts(conn)
        self.engines: EngineRepository = PostgresEngines(conn)
        self.secrets: SecretRepository = PostgresSecrets(conn)
        self.schedules: ScheduleRepository = PostgresSchedules(conn)
        self.collections: CollectionRepository = PostgresCollections(conn)

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        # asyncpg's transaction inside a transaction is a SAVEPOINT; an exception rolls back to
        # it and propagates.
        async with self.connection.transaction():
            yield


PROMPT_COLUMNS = ("workspace_id, prompt_id, prompt_set, text, locale, tags, brand_ids, branded, "
                  "branded_brand_ids, created_at, updated_at, retired_at")


class PostgresPrompts:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def add(self, row: dict[str, Any]) -> Row | None:
        return await self.conn.fetchrow(
            f"INSERT INTO prompts (workspace_id, prompt_id, prompt_set, text, locale, tags, "
            f"brand_ids, branded, branded_brand_ids, prompt_key) "
            f"VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT DO NOTHING "
            f"RETURNING {PROMPT_COLUMNS}",
            row["workspace_id"], row["prompt_id"], row["prompt_set"], row["text"], row["locale"],
            row["tags"], row["brand_ids"], row["branded"], row["branded_brand_ids"],
            row["prompt_key"])

    async def by_key(self, workspace_id: str, key: str) -> Row | None:
        return await self.conn.fetchrow(
            f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 AND prompt_key=$2",
            workspace_id, key)

    async def get(self, workspace_id: str, prompt_id: str, *,
                  for_update: bool = False) -> Row | None:
        return await self.conn.fetchrow(
            f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 AND prompt_id=$2"
            + (" FOR UPDATE" if for_update else ""), workspace_id, prompt_id)

    async def update(self, workspace_id: str, prompt_id: str, row: dict[str, Any]) -> Row | None:
        try:
            # A savepoint: the unique violation must not abort the caller's transaction.
            async with self.conn.transaction():
                return await self.conn.fetchrow(
                    f"UPDATE prompts SET prompt_set=$3, text=$4, locale=$5, tags=$6, "
                    f"brand_ids=$7, branded=$8, branded_brand_ids=$9, prompt_key=$10, "
                    f"updated_at=now() WHERE workspace_id=$1 AND prompt_id=$2 "
                    f"RETURNING {PROMPT_COLUMNS}",
                    workspace_id, prompt_id, row["prompt_set"], row["text"], row["locale"],
                    row["tags"], row["brand_ids"], row["branded"], row["branded_brand_ids"],
                    row["prompt_key"])
        except asyncpg.UniqueViolationError:
            return None

    async def retire(self, workspace_id: str, prompt_id: str) -> Row | None:
        return await self.conn.fetchrow(
            f"UPDATE prompts SET retired_at=coalesce(retired_at, now()), updated_at=now() "
            f"WHERE workspace_id=$1 AND prompt_id=$2 RETURNING {PROMPT_COLUMNS}",
            workspace_id, prompt_id)

    async def list(self, workspace_id: str, *, prompt_set: str | None, branded: bool | None,
                   tag: str | None, include_retired: bool, limit: int,
                   after: str | None) -> Rows:
        return await self.conn.fetch(
            f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 "
            "AND ($2::text IS NULL OR prompt_set=$2) AND ($3::boolean IS NULL OR branded=$3) "
            "AND ($4::text IS NULL OR tags->>'topic'=$4 OR tags->>'persona'=$4 "
            "     OR tags->>'funnel'=$4) "
            "AND ($5 OR retired_at IS NULL) AND ($6::text IS NULL OR prompt_id > $6) "
            "ORDER BY prompt_id LIMIT $7",
            workspace_id, prompt_set, branded, tag, include_retired, after, limit)

    async def live(self, workspace_id: str) -> Rows:
        return await self.conn.fetch(
            f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE workspace_id=$1 AND retired_at IS NULL "
            "ORDER BY prompt_id", workspace_id)


class PostgresEngines:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def add(self, workspace_id: str, engine_id: str, spec: dict[str, Any]) -> Row | None:
        return await self.conn.fetchrow(
            "INSERT INTO engines (workspace_id, engine_id, spec) VALUES ($1,$2,$3) "
            "ON CONFLICT DO NOTHING RETURNING *", workspace_id, engine_id, spec)

    async def replace(self, workspace_id: str, engine_id: str,
                      spec: dict[str, Any]) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE engines SET spec=$3, updated_at=now() WHERE workspace_id=$1 AND engine_id=$2 "
            "RETURNING *", workspace_id, engine_id, spec)

    async def get(self, workspace_id: str, engine_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "SELECT * FROM engines WHERE workspace_id=$1 AND engine_id=$2", workspace_id, engine_id)

    async def list(self, workspace_id: str | None) -> Rows:
        return await self.conn.fetch(
            "SELECT * FROM engines WHERE ($1::text IS NULL OR workspace_id=$1) "
            "ORDER BY workspace_id, engine_id", workspace_id)

    async def retire(self, workspace_id: str, engine_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE engines SET retired_at=coalesce(retired_at, now()), updated_at=now() "
            "WHERE workspace_id=$1 AND engine_id=$2 RETURNING *", workspace_id, engine_id)

    async def with_pending(self) -> Rows:
        """In one statement."""
        return await self.conn.fetch(
            "SELECT e.* FROM engines e WHERE EXISTS (SELECT 1 FROM collections c "
            "WHERE c.workspace_id = e.workspace_id AND c.engine_id = e.engine_id "
            "AND c.status = 'pending' AND (c.lease_until IS NULL OR c.lease_until < now()))")


CLEAR_PLAN_ERROR = "plan_error=NULL, plan_error_at=NULL, plan_failures=0"


class PostgresSchedules:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def add(self, workspace_id: str, schedule_id: str, spec: dict[str, Any], active: bool,
                  next_due_at: datetime) -> Row | None:
        return await self.conn.fetchrow(
            "INSERT INTO schedules (workspace_id, schedule_id, spec, active, next_due_at) "
            "VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING RETURNING *",
            workspace_id, schedule_id, spec, active, next_due_at)

    async def update(self, workspace_id: str, schedule_id: str, spec: dict[str, Any],
                     active: bool, next_due_at: datetime) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE schedules SET spec=$3, active=$4, updated_at=now(), next_due_at=$5, "
            f"{CLEAR_PLAN_ERROR} WHERE workspace_id=$1 AND schedule_id=$2 RETURNING *",
            workspace_id, schedule_id, spec, active, next_due_at)

    async def get(self, workspace_id: str, schedule_id: str, *,
                  for_update: bool = False) -> Row | None:
        return await self.conn.fetchrow(
            "SELECT * FROM schedules WHERE workspace_id=$1 AND schedule_id=$2"
            + (" FOR UPDATE" if for_update else ""), workspace_id, schedule_id)

    async def list(self, workspace_id: str) -> Rows:
        return await self.conn.fetch(
            "SELECT * FROM schedules WHERE workspace_id=$1 ORDER BY schedule_id", workspace_id)

    async def retire(self, workspace_id: str, schedule_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE schedules SET retired_at=coalesce(retired_at, now()), active=false, "
            "updated_at=now() WHERE workspace_id=$1 AND schedule_id=$2 RETURNING *",
            workspace_id, schedule_id)

    async def claim_due(self, now: datetime, limit: int) -> Rows:
        # The most overdue first (schedules_due index): a schedule whose planning fails moves
        # its next_due_at on (a retry delay), so it cannot hold the head of the queue.
        return await self.conn.fetch(
            "SELECT * FROM schedules WHERE active AND retired_at IS NULL AND next_due_at <= $1 "
            "ORDER BY next_due_at, workspace_id, schedule_id LIMIT $2 FOR UPDATE SKIP LOCKED",
            now, limit)

    async def mark_planned(self, workspace_id: str, schedule_id: str,
                           planned_through: datetime | None, next_due_at: datetime) -> None:
        await self.conn.execute(
            "UPDATE schedules SET planned_through=greatest(planned_through, $3), next_due_at=$4, "
            f"{CLEAR_PLAN_ERROR} WHERE workspace_id=$1 AND schedule_id=$2",
            workspace_id, schedule_id, planned_through, next_due_at)

    async def mark_plan_failed(self, workspace_id: str, schedule_id: str, reason: str,
                               at: datetime, next_due_at: datetime) -> None:
        await self.conn.execute(
            "UPDATE schedules SET plan_error=$3, plan_error_at=$4, plan_failures=plan_failures+1, "
            "next_due_at=$5 WHERE workspace_id=$1 AND schedule_id=$2",
            workspace_id, schedule_id, reason, at, next_due_at)

    async def add_slot(self, workspace_id: str, schedule_id: str, slot: datetime,
                       collections: int, skipped_before: int, trigger: str) -> bool:
        return bool(await self.conn.fetchval(
            "INSERT INTO planned_slots (workspace_id, schedule_id, slot, collections, "
            "skipped_before, trigger) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING "
            "RETURNING true", workspace_id, schedule_id, slot, collections, skipped_before,
            trigger))

    async def complete_slots(self, limit: int) -> Rows:
        # Two statements: the first locks open slots with nothing left to do (SKIP LOCKED: two
        # sweepers never take one slot; a slot once completed stays so, and a collection never
        # goes back to pending, so the check cannot turn stale); the second reads the counts.
        done = await self.conn.fetch(
            "UPDATE planned_slots p SET completed_at = now() FROM ("
            "  SELECT workspace_id, schedule_id, slot FROM planned_slots s "
            "  WHERE s.completed_at IS NULL AND NOT EXISTS (SELECT 1 FROM collections c "
            "    WHERE c.workspace_id = s.workspace_id AND c.schedule_id = s.schedule_id "
            "    AND c.slot = s.slot AND c.status IN ('pending', 'awaiting_reply')) "
            "  ORDER BY s.slot LIMIT $1 FOR UPDATE SKIP LOCKED) d "
            "WHERE p.workspace_id = d.workspace_id AND p.schedule_id = d.schedule_id "
            "AND p.slot = d.slot RETURNING p.workspace_id, p.schedule_id, p.slot, p.completed_at",
            limit)
        if not done:
            return []
        counts = {(r["workspace_id"], r["schedule_id"], r["slot"]): r for r in await self.conn.fetch(
            "SELECT c.workspace_id, c.schedule_id, c.slot, count(*) AS planned, "
            "  count(*) FILTER (WHERE c.status = 'collected') AS collected, "
            "  count(*) FILTER (WHERE c.status = 'failed') AS failed, "
            "  coalesce(array_agg(c.run_id ORDER BY c.run_id) FILTER (WHERE c.status = "
            "    'collected' AND c.run_id IS NOT NULL), '{}') AS run_ids "
            "FROM collections c JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) "
            "  AS u(w, s, t) ON c.workspace_id = u.w AND c.schedule_id = u.s AND c.slot = u.t "
            "GROUP BY 1, 2, 3", [r["workspace_id"] for r in done],
            [r["schedule_id"] for r in done], [r["slot"] for r in done])}
        out: Rows = []
        for r in done:
            c = counts.get((r["workspace_id"], r["schedule_id"], r["slot"]))
            out.append({**dict(r), "planned": c["planned"] if c else 0,
                        "collected": c["collected"] if c else 0,
                        "failed": c["failed"] if c else 0,
                        "run_ids": list(c["run_ids"]) if c else []})
        return out


class PostgresCollections:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def add(self, planned: Sequence[PlannedCollection]) -> int:
        """One statement for the whole slot."""
        if not planned:
            return 0
        return len(await self.conn.fetch(
            "INSERT INTO collections (collection_id, workspace_id, schedule_id, prompt_id, "
            "engine_id, slot, sample, prompt_text, brand_ids, prompt_set, prompt_tags) "
            "SELECT c, w, s, p, e, t, n, x, string_to_array(b, chr(31)), ps, g::jsonb FROM "
            "unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], "
            "$6::timestamptz[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[]) "
            "AS u(c, w, s, p, e, t, n, x, b, ps, g) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            [p.collection_id for p in planned], [p.workspace_id for p in planned],
            [p.schedule_id for p in planned], [p.prompt_id for p in planned],
            [p.engine_id for p in planned], [p.slot for p in planned],
            [p.sample for p in planned], [p.prompt_text for p in planned],
            ["\x1f".join(p.brand_ids) for p in planned], [p.prompt_set for p in planned],
            [orjson.dumps(p.prompt_tags).decode() for p in planned]))

    async def claim(self, workspace_id: str, engine_id: str, owner: str, lease_s: float,
                    limit: int, schedule_id: str | None = None) -> Rows:
        return await self.conn.fetch(
            "UPDATE collections c SET lease_owner=$3, "
            "lease_until=now() + make_interval(secs => $4), claims=claims+1 "
            "WHERE collection_id IN ("
            "  SELECT collection_id FROM collections WHERE workspace_id=$1 AND engine_id=$2 "
            "  AND status='pending' AND (lease_until IS NULL OR lease_until < now()) "
            "  AND ($6::text IS NULL OR schedule_id=$6) "
            "  ORDER BY slot, collection_id LIMIT $5 FOR UPDATE SKIP LOCKED) "
            "RETURNING c.*", workspace_id, engine_id, owner, lease_s, limit, schedule_id)

    async def store_raws(self, bodies: dict[str, bytes]) -> None:
        """One statement."""
        await self.conn.execute(
            "INSERT INTO raw_responses (sha256, body) "
            "SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT DO NOTHING",
            list(bodies), list(bodies.values()))

    async def finish_collected(self, collection_id: str, c: Collected, attempts: int,
                               from_status: tuple[str, ...] = ("pending",)) -> bool:
        return bool(await self.conn.fetchval(
            "UPDATE collections SET status='collected', run_id=$2, model=$3, answer_sha256=$4, "
            "raw_sha256=$5, latency_ms=$6, usage=$7, sources=$8, attempts=attempts+$9, "
            "collection_method=$11, model_build=$12, "
            "last_error=NULL, lease_owner=NULL, lease_until=NULL, finished_at=now() "
            "WHERE collection_id=$1 AND status = ANY($10::text[]) RETURNING true",
            collection_id, c.run_id, c.model, c.answer_sha256, c.raw_sha256, c.latency_ms,
            c.usage, c.sources, attempts, list(from_status), c.collection_method,
            c.model_build))

    async def finish_collected_many(self, items: Sequence[tuple[str, Collected, int]]) -> set[str]:
        """One statement."""
        rows = await self.conn.fetch(
            "UPDATE collections c SET status='collected', run_id=u.run_id, model=u.model, "
            "answer_sha256=u.answer_sha256, raw_sha256=u.raw_sha256, latency_ms=u.latency_ms, "
            "usage=u.usage::jsonb, sources=u.sources::jsonb, attempts=c.attempts+u.attempts, "
            "collection_method=u.collection_method, model_build=u.model_build::jsonb, "
            "last_error=NULL, lease_owner=NULL, lease_until=NULL, finished_at=now() "
            "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], "
            "  $6::float8[], $7::text[], $8::text[], $9::int[], $10::text[], $11::text[]) "
            "  AS u(collection_id, run_id, model, answer_sha256, raw_sha256, latency_ms, usage, "
            "       sources, attempts, collection_method, model_build) "
            "WHERE c.collection_id = u.collection_id AND c.status = 'pending' "
            "RETURNING c.collection_id",
            [i for i, _, _ in items], [c.run_id for _, c, _ in items],
            [c.model for _, c, _ in items], [c.answer_sha256 for _, c, _ in items],
            [c.raw_sha256 for _, c, _ in items], [c.latency_ms for _, c, _ in items],
            [None if c.usage is None else orjson.dumps(c.usage).decode() for _, c, _ in items],
            [orjson.dumps(c.sources).decode() for _, c, _ in items], [a for _, _, a in items],
            [c.collection_method for _, c, _ in items],
            [None if c.model_build is None else orjson.dumps(c.model_build).decode()
             for _, c, _ in items])
        return {r["collection_id"] for r in rows}

    async def finish_failed(self, collection_id: str, reason: str, attempts: int,
                            from_status: tuple[str, ...] = ("pending",)) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE collections SET status='failed', last_error=$2, attempts=attempts+$3, "
            "lease_owner=NULL, lease_until=NULL, finished_at=now() "
            "WHERE collection_id=$1 AND status = ANY($4::text[]) RETURNING *",
            collection_id, reason[:4000], attempts, list(from_status))

    async def mark_awaiting(self, collection_id: str) -> bool:
        return bool(await self.conn.fetchval(
            "UPDATE collections SET status='awaiting_reply', requested_at=now(), "
            "attempts=attempts+1, lease_owner=NULL, lease_until=NULL "
            "WHERE collection_id=$1 AND status='pending' RETURNING true", collection_id))

    async def expired_awaiting(self, older_than_s: float, limit: int) -> Rows:
        return await self.conn.fetch(
            "SELECT * FROM collections WHERE status='awaiting_reply' "
            "AND requested_at < now() - make_interval(secs => $1) "
            "ORDER BY requested_at LIMIT $2 FOR UPDATE SKIP LOCKED", older_than_s, limit)

    async def get(self, collection_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "SELECT * FROM collections WHERE collection_id=$1", collection_id)

    async def list(self, workspace_id: str, *, schedule_id: str | None, status: str | None,
                   slot: datetime | None, limit: int, after: str | None) -> Rows:
        return await self.conn.fetch(
            "SELECT * FROM collections WHERE workspace_id=$1 "
            "AND ($2::text IS NULL OR schedule_id=$2) AND ($3::text IS NULL OR status=$3) "
            "AND ($4::timestamptz IS NULL OR slot=$4) AND ($5::text IS NULL OR collection_id > $5) "
            "ORDER BY collection_id LIMIT $6", workspace_id, schedule_id, status, slot, after, limit)

    async def progress(self, workspace_id: str, schedule_id: str,
                       slot: datetime) -> dict[str, int]:
        rows = await self.conn.fetch(
            "SELECT status, count(*) AS n FROM collections WHERE workspace_id=$1 "
            "AND schedule_id=$2 AND slot=$3 GROUP BY status", workspace_id, schedule_id, slot)
        return {r["status"]: r["n"] for r in rows}

    async def raw(self, sha256: str) -> bytes | None:
        body = await self.conn.fetchval("SELECT body FROM raw_responses WHERE sha256=$1", sha256)
        return None if body is None else bytes(body)


SECRET_COLUMNS = "workspace_id, secret_id, name, created_at, retired_at"


class PostgresSecrets:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def add(self, workspace_id: str, secret_id: str, name: str,
                  sealed: SealedSecret) -> Row | None:
        return await self.conn.fetchrow(
            "INSERT INTO engine_secrets (workspace_id, secret_id, name, kek_id, wrapped_key, "
            "ciphertext) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING "
            f"RETURNING {SECRET_COLUMNS}", workspace_id, secret_id, name, sealed.kek_id,
            sealed.wrapped_key, sealed.ciphertext)

    async def get(self, workspace_id: str, secret_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "SELECT * FROM engine_secrets WHERE workspace_id=$1 AND secret_id=$2",
            workspace_id, secret_id)

    async def list(self, workspace_id: str, include_retired: bool) -> Rows:
        return await self.conn.fetch(
            f"SELECT {SECRET_COLUMNS} FROM engine_secrets WHERE workspace_id=$1 "
            "AND ($2 OR retired_at IS NULL) ORDER BY created_at, secret_id",
            workspace_id, include_retired)

    async def retire(self, workspace_id: str, secret_id: str) -> Row | None:
        return await self.conn.fetchrow(
            "UPDATE engine_secrets SET retired_at=coalesce(retired_at, now()), kek_id=NULL, "
            "wrapped_key=NULL, ciphertext=NULL WHERE workspace_id=$1 AND secret_id=$2 "
            f"RETURNING {SECRET_COLUMNS}", workspace_id, secret_id)

    async def sealed_under_other_kek(self, kek_id: str, limit: int) -> Rows:
        return await self.conn.fetch(
            "SELECT * FROM engine_secrets WHERE retired_at IS NULL AND kek_id <> $1 "
            "ORDER BY workspace_id, secret_id LIMIT $2 FOR UPDATE SKIP LOCKED", kek_id, limit)

    async def rewrap(self, workspace_id: str, secret_id: str, sealed: SealedSecret) -> bool:
        return bool(await self.conn.fetchval(
            "UPDATE engine_secrets SET kek_id=$3, wrapped_key=$4 WHERE workspace_id=$1 "
            "AND secret_id=$2 AND retired_at IS NULL AND ciphertext=$5 RETURNING true",
            workspace_id, secret_id, sealed.kek_id, sealed.wrapped_key, sealed.ciphertext))
