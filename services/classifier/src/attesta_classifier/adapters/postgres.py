"""The classifier's repositories on PostgreSQL (asyncpg): rows in, domain objects out.

Every repository works on the connection of the unit of work's block, so the service layer
decides what is atomic. Bulk writes go through ``unnest`` arrays or COPY: one statement per
table per batch.

The driver's errors stay here: a value PostgreSQL cannot store or compare leaves a unit of
work as the service layer's ``Unstorable``; ``CONCURRENT_WRITE`` names the errors of a
concurrent writer (the runs subscriber retries on them; the ports keep the unique violation
that the store tests pin).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

import asyncpg
import orjson

from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_classifier.service_layer.errors import Unstorable
from attesta_classifier.service_layer.unit_of_work import (
    HISTORY_FIELDS, BrandRepository, BuildDay, ClaimedPair, DecisionRepository, FactRepository,
    ReviewRepository, RunRepository, HistoryRow, JudgeReview, PairState, PendingDetail, PendingRow,
    QueueCounts, QueueEntry, QueueQuery, ReviewedLabel, RunQuery, StoredBrand, StoredFact,
    StoredRun, Tally)
from attesta_contracts.runs import ModelBuild
from attesta_platform.unit_of_work import PostgresUnitOfWork


async def create_pool(dsn: str, max_size: int = 10) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                     command_timeout=60)


CONCURRENT_WRITE: tuple[type[Exception], ...] = (asyncpg.UniqueViolationError,)
_UNSTORABLE = "a value cannot be stored (e.g. a NUL character or a time out of range)"


class ClassifierUnitOfWork(PostgresUnitOfWork):
    brands: BrandRepository
    facts: FactRepository
    runs: RunRepository
    decisions: DecisionRepository
    reviews: ReviewRepository

    def unstorable(self, exc: asyncpg.DataError) -> Exception:
        return Unstorable(_UNSTORABLE)

    def bind(self, conn: asyncpg.Connection) -> None:
        self.brands = PostgresBrands(conn)
        self.facts = PostgresFacts(conn)
        self.runs = PostgresRuns(conn)
        self.decisions = PostgresDecisions(conn)
        self.reviews = PostgresReviews(conn)


# -- mapping --------------------------------------------------------------------------------
def _brand(r: asyncpg.Record) -> StoredBrand:
    return StoredBrand(brand_id=r["brand_id"], workspace_id=r["workspace_id"], name=r["name"],
                       aliases=tuple(r["aliases"]), domains=tuple(r["domains"]),
                       competitors=tuple(r["competitors"]), sources=tuple(r["sources"]),
                       created_at=r["created_at"], updated_at=r["updated_at"])


def _fact(r: asyncpg.Record) -> StoredFact:
    return StoredFact(fact_id=r["fact_id"], brand_id=r["brand_id"], type=r["type"], text=r["text"],
                      source_url=r["source_url"], fetched_at=r["fetched_at"],
                      attribution=r["attribution"], content_sha256=r["content_sha256"],
                      workspace_id=r["workspace_id"], active=r["active"],
                      superseded_at=r["superseded_at"], created_at=r["created_at"])


def _run(r: asyncpg.Record) -> StoredRun:
    return StoredRun(run_id=r["run_id"], workspace_id=r["workspace_id"], engine=r["engine"],
                     model=r["model"], prompt=r["prompt"], answer=r["answer"],
                     answer_sha256=r["answer_sha256"], brand_ids=tuple(r["brand_ids"]),
                     requested_at=r["requested_at"], answered_at=r["answered_at"],
                     source=r["source"], recorded_at=r["recorded_at"],
                     collection_method=r["collection_method"],
                     log_index=r.get("log_index"),
                     model_build=(None if r["model_build"] is None
                                  else ModelBuild.model_validate_json(r["model_build"])))


# A row's values in HISTORY_FIELDS order, as one C call per row (the COPY's hot loop).
_history_values = attrgetter(*HISTORY_FIELDS)


def _history(r: asyncpg.Record) -> HistoryRow:
    values: dict[str, Any] = {f: (list(r[f]) if f == "fact_ids" else r[f]) for f in HISTORY_FIELDS}
    return HistoryRow(**values)


# -- brands and facts ---------------------------------------------------------------------------
BRAND_COLUMNS = "workspace_id, brand_id, name, aliases, domains, competitors, sources, created_at, updated_at"
FACT_COLUMNS = ("fact_id, workspace_id, brand_id, type, text, source_url, fetched_at, attribution, "
                "content_sha256, active, superseded_at, created_at")


class PostgresBrands:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def add(self, brand: Brand) -> StoredBrand | None:
        row = await self.conn.fetchrow(
            "INSERT INTO brands (workspace_id, brand_id, name, aliases, domains, competitors, sources) "
            f"VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING {BRAND_COLUMNS}",
            brand.workspace_id, brand.brand_id, brand.name, list(brand.aliases),
            list(brand.domains), list(brand.competitors), list(brand.sources))
        return _brand(row) if row else None

    async def get(self, workspace_id: str, brand_id: str, *,
                  for_update: bool = False) -> StoredBrand | None:
        row = await self.conn.fetchrow(
            f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = $1 AND brand_id = $2"
            + (" FOR UPDATE" if for_update else ""), workspace_id, brand_id)
        return _brand(row) if row else None

    async def list(self, workspace_id: str) -> list[StoredBrand]:
        return [_brand(r) for r in await self.conn.fetch(
            f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = $1 ORDER BY brand_id",
            workspace_id)]

    async def update(self, workspace_id: str, brand_id: str,
                     changes: dict[str, Any]) -> StoredBrand:
        # Column names come from the service layer's fixed set of brand fields, never a caller.
        sets = ", ".join(f"{k} = ${i}" for i, k in enumerate(changes, start=3))
        row = await self.conn.fetchrow(
            f"UPDATE brands SET {sets}, updated_at = now() WHERE workspace_id = $1 AND brand_id = $2 "
            f"RETURNING {BRAND_COLUMNS}", workspace_id, brand_id, *changes.values())
        return _brand(row)

    async def existing(self, workspace_id: str, brand_ids: Sequence[str]) -> set[str]:
        return {r["brand_id"] for r in await self.conn.fetch(
            "SELECT brand_id FROM brands WHERE workspace_id = $1 AND brand_id = ANY($2::text[])",
            workspace_id, list(brand_ids))}

    async def of_workspaces(self, workspace_ids: Iterable[str]) -> dict[tuple[str, str], Brand]:
        rows = await self.conn.fetch(f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = ANY($1::text[])",
                                     list(set(workspace_ids)))
        return {(r["workspace_id"], r["brand_id"]): _brand(r).brand() for r in rows}

    async def lock_refresh(self, workspace_id: str, brand_id: str) -> bool:
        # A transaction lock: released by the commit or rollback that ends the unit of work,
        # also when the task holding it is cancelled (the pool rolls the connection back).
        return bool(await self.conn.fetchval(
            "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))",
            f"attesta:refresh:{workspace_id}:{brand_id}"))


class PostgresFacts:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def active_of(self, workspace_ids: Iterable[str], brand_ids: Iterable[str] | None = None
                        ) -> dict[tuple[str, str], list[Fact]]:
        sql = (f"SELECT {FACT_COLUMNS} FROM ground_truth_facts WHERE active "
               "AND workspace_id = ANY($1::text[])")
        args: list[Any] = [list(set(workspace_ids))]
        if brand_ids is not None:
            sql += " AND brand_id = ANY($2::text[])"
            args.append(list(set(brand_ids)))
        out: dict[tuple[str, str], list[Fact]] = {}
        for r in await self.conn.fetch(sql + " ORDER BY fact_id", *args):
            out.setdefault((r["workspace_id"], r["brand_id"]), []).append(_fact(r))
        return out

    async def active(self, workspace_id: str, brand_id: str) -> list[StoredFact]:
        return [_fact(r) for r in await self.conn.fetch(
            f"SELECT {FACT_COLUMNS} FROM ground_truth_facts WHERE workspace_id = $1 "
            "AND brand_id = $2 AND active ORDER BY fact_id", workspace_id, brand_id)]

    async def get(self, fact_id: str) -> StoredFact | None:
        row = await self.conn.fetchrow(
            f"SELECT {FACT_COLUMNS} FROM ground_truth_facts WHERE fact_id = $1", fact_id)
        return _fact(row) if row else None

    async def superseded(self, workspace_id: str, brand_id: str) -> list[StoredFact]:
        return [_fact(r) for r in await self.conn.fetch(
            f"SELECT {FACT_COLUMNS} FROM ground_truth_facts WHERE workspace_id = $1 "
            "AND brand_id = $2 AND NOT active ORDER BY superseded_at DESC, fact_id",
            workspace_id, brand_id)]

    async def activate(self, workspace_id: str, facts: Sequence[Fact], refresh_id: str) -> None:
        for f in facts:
            revived = await self.conn.fetchval(
                "UPDATE ground_truth_facts SET active = true, superseded_at = NULL, refresh_id = $2 "
                "WHERE fact_id = $1 AND NOT active RETURNING fact_id", f.fact_id, refresh_id)
            if revived is None:
                await self.conn.execute(
                    "INSERT INTO ground_truth_facts (fact_id, workspace_id, brand_id, type, text, "
                    "source_url, fetched_at, attribution, content_sha256, refresh_id) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (fact_id) DO NOTHING",
                    f.fact_id, workspace_id, f.brand_id, f.type, f.text, f.source_url, f.fetched_at,
                    f.attribution, f.content_sha256, refresh_id)

    async def supersede(self, fact_ids: Sequence[str], at: datetime, refresh_id: str) -> None:
        if fact_ids:
            await self.conn.execute(
                "UPDATE ground_truth_facts SET active = false, superseded_at = $2, refresh_id = $3 "
                "WHERE fact_id = ANY($1::text[])", list(fact_ids), at, refresh_id)


# -- runs -------------------------------------------------------------------------------------
RUN_COLUMNS = ("run_id, workspace_id, engine, model, prompt, answer, answer_sha256, brand_ids, "
               "source, requested_at, answered_at, recorded_at, collection_method, model_build")
RUN_COPY_COLUMNS = ("run_id", "workspace_id", "engine", "model", "prompt", "answer", "answer_sha256",
                    "brand_ids", "source", "requested_at", "answered_at", "sources",
                    "prompt_context", "collection_method", "model_build")


def sources_json(run: Run) -> str:
    return orjson.dumps([s.model_dump(mode="json", exclude_none=True) for s in run.sources]
                        ).decode()


def prompt_context_json(run: Run) -> str | None:
    c = run.prompt_context
    return None if c is None else c.model_dump_json(exclude_none=True)


def model_build_json(run: Run) -> str | None:
    b = run.model_build
    return None if b is None else b.model_dump_json(exclude_none=True)


class PostgresRuns:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def add(self, runs: Sequence[Run]) -> None:
        if not runs:
            return
        await self.conn.execute(
            "INSERT INTO runs (run_id, workspace_id, engine, model, prompt, answer, answer_sha256, "
            "brand_ids, source, requested_at, answered_at, sources, prompt_context, "
            "collection_method, model_build) "
            "SELECT r.run_id, r.workspace_id, r.engine, r.model, r.prompt, r.answer, r.answer_sha256, "
            "  coalesce((SELECT array_agg(x) FROM jsonb_array_elements_text(r.brand_ids) x), '{}'), "
            "  r.source, r.requested_at, r.answered_at, r.sources::jsonb, r.prompt_context::jsonb, "
            "  r.collection_method, r.model_build::jsonb "
            "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
            "  $7::text[], $8::jsonb[], $9::text[], $10::timestamptz[], $11::timestamptz[], "
            "  $12::text[], $13::text[], $14::text[], $15::text[]) "
            "  AS r(run_id, workspace_id, engine, model, prompt, answer, answer_sha256, brand_ids, "
            "       source, requested_at, answered_at, sources, prompt_context, collection_method, "
            "       model_build) "
            "ON CONFLICT (run_id) DO NOTHING",
            [r.run_id for r in runs], [r.workspace_id for r in runs], [r.engine for r in runs],
            [r.model for r in runs], [r.prompt for r in runs], [r.answer for r in runs],
            [r.answer_sha256 for r in runs],
            [orjson.dumps(list(r.brand_ids)).decode() for r in runs],
            [r.source for r in runs], [r.requested_at for r in runs], [r.answered_at for r in runs],
            [sources_json(r) for r in runs], [prompt_context_json(r) for r in runs],
            [r.collection_method for r in runs], [model_build_json(r) for r in runs])

    async def add_new(self, runs: Sequence[Run]) -> None:
        if runs:
            await self.conn.copy_records_to_table("runs", columns=RUN_COPY_COLUMNS, records=[
                (r.run_id, r.workspace_id, r.engine, r.model, r.prompt, r.answer, r.answer_sha256,
                 list(r.brand_ids), r.source, r.requested_at, r.answered_at, sources_json(r),
                 prompt_context_json(r), r.collection_method, model_build_json(r)) for r in runs])

    async def owners(self, run_ids: Sequence[str]) -> dict[str, str]:
        rows = await self.conn.fetch(
            "SELECT run_id, workspace_id FROM runs WHERE run_id = ANY($1::text[])", list(run_ids))
        return {r["run_id"]: r["workspace_id"] for r in rows}

    async def get(self, workspace_id: str, run_id: str) -> StoredRun | None:
        row = await self.conn.fetchrow(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $1 AND workspace_id = $2",
            run_id, workspace_id)
        return _run(row) if row else None

    async def get_many(self, run_ids: Iterable[str]) -> dict[str, Run]:
        rows = await self.conn.fetch(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ANY($1::text[])",
                                     list(set(run_ids)))
        return {r["run_id"]: _run(r) for r in rows}

    async def page(self, workspace_id: str, query: RunQuery, limit: int) -> list[StoredRun]:
        where = ["r.workspace_id = $1"]
        args: list[Any] = [workspace_id]

        def arg(value: Any) -> str:
            args.append(value)
            return f"${len(args)}"

        q = query
        if q.engine:
            where.append(f"r.engine = {arg(q.engine)}")
        if q.source:
            where.append(f"r.source = {arg(q.source)}")
        if q.collection_method:
            where.append(f"r.collection_method = {arg(q.collection_method)}")
        if q.from_:
            where.append(f"r.recorded_at >= {arg(q.from_)}")
        if q.to:
            where.append(f"r.recorded_at < {arg(q.to)}")
        if q.brand_id or q.status or q.citation_class or q.decided_by:
            cond = ["s.run_id = r.run_id"]
            if q.brand_id:
                cond.append(f"s.brand_id = {arg(q.brand_id)}")
            if q.status:
                cond.append(f"s.status = {arg(q.status)}")
            if q.citation_class:
                cond.append(f"s.citation_class = {arg(q.citation_class)} AND s.status = 'classified'")
            if q.decided_by:
                cond.append(f"s.decided_by = {arg(q.decided_by)} AND s.status = 'classified'")
            where.append(f"EXISTS (SELECT 1 FROM run_brand_status s WHERE {' AND '.join(cond)})")
        if q.tag:
            t = arg(q.tag)
            where.append(f"{t} IN (r.prompt_context->>'topic', r.prompt_context->>'persona', "
                         f"r.prompt_context->>'funnel')")
        if q.before:
            at, rid = q.before
            where.append(f"(r.recorded_at, r.run_id) < ({arg(at)}, {arg(rid)})")
        rows = await self.conn.fetch(
            f"SELECT {', '.join('r.' + c.strip() for c in RUN_COLUMNS.split(','))}, e.log_index "
            f"FROM runs r LEFT JOIN evidence_leaves e ON e.sha256 = r.answer_sha256 "
            f"WHERE {' AND '.join(where)} ORDER BY r.recorded_at DESC, r.run_id DESC "
            f"LIMIT {arg(limit)}", *args)
        return [_run(r) for r in rows]

    async def add_leaves(self, leaves: Sequence[tuple[str, int]]) -> int:
        if not leaves:
            return 0
        # ORDER BY: within one batch too, the lowest index of a SHA-256 is the one kept (the
        # log's first leaf for those bytes); DISTINCT ON, as one INSERT cannot touch a row twice.
        status = await self.conn.execute(
            "INSERT INTO evidence_leaves (sha256, log_index) "
            "SELECT DISTINCT ON (sha256) sha256, log_index "
            "FROM unnest($1::text[], $2::bigint[]) AS l(sha256, log_index) "
            "ORDER BY sha256, log_index ON CONFLICT (sha256) DO NOTHING",
            [s for s, _ in leaves], [i for _, i in leaves])
        return int(status.split()[-1])

    async def of_brand(self, workspace_id: str, brand_id: str, after: str, limit: int) -> list[Run]:
        rows = await self.conn.fetch(
            f"SELECT {RUN_COLUMNS} FROM runs r WHERE r.workspace_id = $1 AND r.run_id > $3 AND "
            "  ($2 = ANY(r.brand_ids) OR r.brand_ids = '{}' OR EXISTS (SELECT 1 FROM "
            "   run_brand_status s WHERE s.run_id = r.run_id AND s.brand_id = $2)) "
            "ORDER BY r.run_id LIMIT $4", workspace_id, brand_id, after, limit)
        return [_run(r) for r in rows]

    async def builds(self, workspace_id: str, engine: str | None, from_: datetime | None,
                     to: datetime | None) -> list[BuildDay]:
        rows = await self.conn.fetch(
            "SELECT engine, (coalesce(answered_at, recorded_at) AT TIME ZONE 'UTC')::date AS day, "
            "  model_build->>'model' AS model, "
            "  model_build->>'system_fingerprint' AS system_fingerprint, count(*) AS n "
            "FROM runs WHERE workspace_id = $1 AND model_build IS NOT NULL "
            "  AND ($2::text IS NULL OR engine = $2) "
            "  AND ($3::timestamptz IS NULL OR coalesce(answered_at, recorded_at) >= $3) "
            "  AND ($4::timestamptz IS NULL OR coalesce(answered_at, recorded_at) < $4) "
            "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3 NULLS FIRST, 4 NULLS FIRST",
            workspace_id, engine, from_, to)
        return [BuildDay(**dict(r)) for r in rows]


# -- decisions --------------------------------------------------------------------------------
STATUS_COLUMNS = ("run_id, brand_id, status, classification_id, citation_class, decided_by, "
                  "judge_model, ground_truth_hash, reason, updated_at, position, named_order")
STATUS_COPY_COLUMNS = ("run_id", "brand_id", "workspace_id", "status", "classification_id",
                       "citation_class", "decided_by", "judge_model", "ground_truth_hash", "reason",
                       "updated_at", "position", "named_order")


class PostgresDecisions:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def _settle_pending(self, pairs: Sequence[tuple[str, str]]) -> None:
        """A decision settles a pending judgment of the same pair (if there is one)."""
        run_ids = list({p[0] for p in pairs})
        if not await self.conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pending_judgments WHERE run_id = ANY($1::text[]))",
                run_ids):
            return
        await self.conn.execute(
            "DELETE FROM pending_judgments p USING unnest($1::text[], $2::text[]) AS t(run_id, brand_id) "
            "WHERE p.run_id = t.run_id AND p.brand_id = t.brand_id",
            [p[0] for p in pairs], [p[1] for p in pairs])

    async def append(self, rows: Sequence[HistoryRow], new_runs: frozenset[str] = frozenset()) -> None:
        # COPY: the fastest path into PostgreSQL. Pairs of runs first stored in this
        # transaction cannot have a state row yet, so theirs are COPYed; the others upserted.
        if not rows:
            return
        conn = self.conn
        await conn.copy_records_to_table(
            "classification_history", columns=HISTORY_FIELDS,
            records=[_history_values(r) for r in rows])
        latest = list({(r.run_id, r.brand_id): r for r in rows}.values())  # one state per pair: the last
        fresh = [r for r in latest if r.run_id in new_runs]
        known = [r for r in latest if r.run_id not in new_runs]
        if fresh:
            await conn.copy_records_to_table("run_brand_status", columns=STATUS_COPY_COLUMNS, records=[
                (r.run_id, r.brand_id, r.workspace_id, "classified", r.classification_id,
                 r.citation_class, r.decided_by, r.judge_model, r.ground_truth_hash, r.reason,
                 r.classified_at, r.position, r.named_order) for r in fresh])
        if known:
            await conn.execute(
                "INSERT INTO run_brand_status AS s (run_id, brand_id, workspace_id, status, "
                "  classification_id, citation_class, decided_by, judge_model, ground_truth_hash, reason, "
                "  updated_at, position, named_order) "
                "SELECT run_id, brand_id, workspace_id, 'classified', cid, cls, dby, jm, gth, reason, at, "
                "  pos, CASE WHEN named IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(named)) END "
                "FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::text[], "
                "  $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::int[], $12::jsonb[]) "
                "  AS t(run_id, brand_id, workspace_id, cid, cls, dby, jm, gth, reason, at, pos, named) "
                "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'classified', "
                "  classification_id = excluded.classification_id, citation_class = excluded.citation_class, "
                "  decided_by = excluded.decided_by, judge_model = excluded.judge_model, "
                "  ground_truth_hash = excluded.ground_truth_hash, reason = excluded.reason, "
                "  updated_at = excluded.updated_at, position = excluded.position, "
                "  named_order = excluded.named_order",
                [r.run_id for r in known], [r.brand_id for r in known], [r.workspace_id for r in known],
                [r.classification_id for r in known], [r.citation_class for r in known],
                [r.decided_by for r in known], [r.judge_model for r in known],
                [r.ground_truth_hash for r in known], [r.reason for r in known],
                [r.classified_at for r in known], [r.position for r in known],
                # a text[] per row cannot be one element of a 2-D array (ragged): JSON instead
                [None if r.named_order is None else orjson.dumps(r.named_order).decode()
                 for r in known])
            await self._settle_pending([(r.run_id, r.brand_id) for r in known])

    async def refuse(self, pairs: Sequence[tuple[str, str, str, str]], at: datetime) -> None:
        if not pairs:
            return
        pairs = list({(p[0], p[1]): p for p in pairs}.values())
        await self.conn.execute(
            "INSERT INTO run_brand_status AS s (run_id, brand_id, workspace_id, status, reason, updated_at) "
            "SELECT run_id, brand_id, ws, 'refused', reason, $5 "
            "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(run_id, brand_id, ws, reason) "
            "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'refused', reason = excluded.reason, "
            "  updated_at = excluded.updated_at",
            [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs], [p[3] for p in pairs], at)
        await self._settle_pending([(p[0], p[1]) for p in pairs])

    async def park(self, rows: Sequence[PendingRow], at: datetime) -> None:
        if not rows:
            return
        rows = list({(r.run_id, r.brand_id): r for r in rows}.values())
        await self.conn.execute(
            "INSERT INTO run_brand_status (run_id, brand_id, workspace_id, status, reason, updated_at) "
            "SELECT run_id, brand_id, ws, 'pending', 'waiting for the judge', $4 "
            "FROM unnest($1::text[], $2::text[], $3::text[]) AS t(run_id, brand_id, ws) "
            "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'pending', "
            "  reason = 'waiting for the judge', updated_at = excluded.updated_at "
            "  WHERE run_brand_status.status <> 'classified'",
            [r.run_id for r in rows], [r.brand_id for r in rows], [r.workspace_id for r in rows], at)
        await self.conn.execute(
            "INSERT INTO pending_judgments (run_id, brand_id, workspace_id, trigger, trigger_reason, actor) "
            "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) "
            "ON CONFLICT (run_id, brand_id) DO UPDATE SET trigger = excluded.trigger, "
            "  trigger_reason = excluded.trigger_reason, actor = excluded.actor, attempts = 0, "
            "  next_attempt_at = now(), last_error = NULL, claim_token = NULL",
            [r.run_id for r in rows], [r.brand_id for r in rows], [r.workspace_id for r in rows],
            [r.trigger for r in rows], [r.trigger_reason for r in rows], [r.actor for r in rows])

    async def states(self, run_ids: Sequence[str]) -> list[PairState]:
        rows = await self.conn.fetch(
            f"SELECT {STATUS_COLUMNS} FROM run_brand_status WHERE run_id = ANY($1::text[]) "
            "ORDER BY run_id, brand_id", list(run_ids))
        return [PairState(**dict(r)) for r in rows]

    async def history(self, run_id: str, as_of: datetime | None) -> list[HistoryRow]:
        return [_history(r) for r in await self.conn.fetch(
            f"SELECT {', '.join(HISTORY_FIELDS)} FROM classification_history WHERE run_id = $1 "
            "AND ($2::timestamptz IS NULL OR classified_at <= $2) ORDER BY classified_at, seq",
            run_id, as_of)]

    async def claim_due(self, token: uuid.UUID, limit: int, lease_s: float) -> list[ClaimedPair]:
        rows = await self.conn.fetch(
            "UPDATE pending_judgments p SET claim_token = $1, attempts = p.attempts + 1, "
            "  next_attempt_at = now() + make_interval(secs => $3) "
            "FROM (SELECT run_id, brand_id FROM pending_judgments WHERE next_attempt_at <= now() "
            "      ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED) due "
            "WHERE p.run_id = due.run_id AND p.brand_id = due.brand_id "
            "RETURNING p.run_id, p.brand_id, p.workspace_id, p.trigger, p.trigger_reason, p.actor, "
            "  p.attempts", token, limit, lease_s)
        return [ClaimedPair(**dict(r)) for r in rows]

    async def release_claim(self, run_id: str, brand_id: str, token: uuid.UUID) -> bool:
        return bool(await self.conn.fetchval(
            "DELETE FROM pending_judgments WHERE run_id = $1 AND brand_id = $2 AND claim_token = $3 "
            "RETURNING true", run_id, brand_id, token))

    async def defer(self, run_id: str, brand_id: str, token: uuid.UUID, delay_s: float,
                    error: str, status_reason: str | None = None,
                    judgment: dict[str, Any] | None = None) -> None:
        if status_reason is not None:
            await self.conn.execute(
                "UPDATE run_brand_status SET reason = $3 WHERE run_id = $1 AND brand_id = $2 "
                "AND status = 'pending'", run_id, brand_id, status_reason[:2000])
        await self.conn.execute(
            "UPDATE pending_judgments SET next_attempt_at = now() + make_interval(secs => $4), "
            "  last_error = $5, claim_token = NULL, judgment = coalesce($6::jsonb, judgment) "
            "WHERE run_id = $1 AND brand_id = $2 AND claim_token = $3",
            run_id, brand_id, token, delay_s, error[:2000],
            None if judgment is None else orjson.dumps(judgment).decode())

    async def tallies(self, workspace_id: str, period: str, engine: str | None,
                      from_: datetime | None, to: datetime | None, *,
                      include_chats: bool = False) -> list[Tally]:
        rows = await self.conn.fetch(
            "SELECT s.brand_id, r.engine, "
            "  date_trunc($2, coalesce(r.answered_at, r.recorded_at), 'UTC') AS bucket, "
            "  s.status, s.citation_class, r.prompt, r.prompt_context->>'topic' AS topic, "
            "  r.prompt_context->>'persona' AS persona, r.prompt_context->>'funnel' AS funnel, "
            # each distinct cited place once per run: 'host domain'
            "  ARRAY(SELECT DISTINCT coalesce(x->>'host', x->>'domain') || ' ' || (x->>'domain') "
            "        FROM jsonb_array_elements(r.sources) x) AS cited, "
            "  count(*) AS n, "
            # the current class's position; whether it was computed at all (before 0006: not)
            "  CASE WHEN s.status = 'classified' THEN s.position END AS position, "
            "  (s.status = 'classified' AND s.named_order IS NOT NULL) AS positioned, "
            "  r.source, r.collection_method "
            "FROM run_brand_status s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.workspace_id = $1 AND ($3::text IS NULL OR r.engine = $3) "
            "  AND ($4::timestamptz IS NULL OR coalesce(r.answered_at, r.recorded_at) >= $4) "
            "  AND ($5::timestamptz IS NULL OR coalesce(r.answered_at, r.recorded_at) < $5) "
            "  AND ($6 OR r.source <> 'assistant') "
            "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15",
            workspace_id, period, engine, from_, to, include_chats)
        return [Tally(**{**dict(r), "cited": tuple(r["cited"])}) for r in rows]


# -- the review queue -------------------------------------------------------------------------
# A pair's place in the blind sample, as domain.review.sample_key computes it: the first 4 bytes
# of SHA-256(run id, U+001F, brand id) as an unsigned integer.
SAMPLE_KEY_SQL = ("('x' || left(encode(sha256(convert_to(s.run_id || chr(31) || s.brand_id, "
                  "'UTF8')), 'hex'), 8))::bit(32)::bigint")
REVIEW_COLUMNS = ("review_id, workspace_id, run_id, brand_id, classification_id, human_class, "
                  "ground_truth_hash, reviewer, actor, note, reviewed_at")


class PostgresReviews:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def queue(self, workspace_id: str, query: QueueQuery, sample_below: int,
                    limit: int) -> list[QueueEntry]:
        args: list[Any] = [workspace_id, query.brand_id]

        def arg(value: Any) -> str:
            args.append(value)
            return f"${len(args)}"

        parts = []
        if query.kind in (None, "pending"):
            parts.append(
                "SELECT 0 AS rank, s.run_id, s.brand_id, 'pending' AS kind, s.updated_at AS since, "
                "  r.engine, s.reason, NULL::uuid AS classification_id "
                "FROM run_brand_status s JOIN runs r ON r.run_id = s.run_id "
                "WHERE s.workspace_id = $1 AND s.status = 'pending' "
                "  AND ($2::text IS NULL OR s.brand_id = $2)")
        if query.kind in (None, "sample"):
            parts.append(
                "SELECT 1 AS rank, s.run_id, s.brand_id, 'sample' AS kind, s.updated_at AS since, "
                "  r.engine, NULL AS reason, s.classification_id "
                "FROM run_brand_status s JOIN runs r ON r.run_id = s.run_id "
                "WHERE s.workspace_id = $1 AND s.status = 'classified' AND s.decided_by = 'judge' "
                f"  AND ($2::text IS NULL OR s.brand_id = $2) AND {SAMPLE_KEY_SQL} < {arg(sample_below)} "
                "  AND NOT EXISTS (SELECT 1 FROM judge_reviews v "
                "                  WHERE v.classification_id = s.classification_id)")
        after = ""
        if query.after is not None:
            rank, since, run_id, brand_id = query.after
            after = (f"WHERE (rank, since, run_id, brand_id) > "
                     f"({arg(rank)}::int, {arg(since)}::timestamptz, {arg(run_id)}::text, "
                     f"{arg(brand_id)}::text) ")
        rows = await self.conn.fetch(
            f"SELECT * FROM ({' UNION ALL '.join(parts)}) q {after}"
            f"ORDER BY rank, since, run_id, brand_id LIMIT {arg(limit)}", *args)
        return [QueueEntry(r["run_id"], r["brand_id"], r["kind"], r["since"], r["engine"],
                           r["reason"], r["classification_id"]) for r in rows]

    async def counts(self, workspace_id: str, brand_id: str | None,
                     sample_below: int) -> QueueCounts:
        row = await self.conn.fetchrow(
            "SELECT count(*) FILTER (WHERE s.status = 'pending') AS pending, "
            "  min(s.updated_at) FILTER (WHERE s.status = 'pending') AS oldest, "
            "  count(*) FILTER (WHERE s.status = 'classified' AND s.decided_by = 'judge' "
            f"    AND {SAMPLE_KEY_SQL} < $3 AND NOT EXISTS (SELECT 1 FROM judge_reviews v "
            "      WHERE v.classification_id = s.classification_id)) AS sample_open "
            "FROM run_brand_status s WHERE s.workspace_id = $1 "
            "  AND ($2::text IS NULL OR s.brand_id = $2) "
            "  AND (s.status = 'pending' OR s.decided_by = 'judge')",
            workspace_id, brand_id, sample_below)
        return QueueCounts(row["pending"], row["oldest"], row["sample_open"])

    async def pending_detail(self, run_id: str, brand_id: str) -> PendingDetail | None:
        row = await self.conn.fetchrow(
            "SELECT attempts, last_error, judgment, created_at FROM pending_judgments "
            "WHERE run_id = $1 AND brand_id = $2", run_id, brand_id)
        if row is None:
            return None
        judgment = orjson.loads(row["judgment"]) if row["judgment"] is not None else None
        return PendingDetail(row["attempts"], row["last_error"], judgment, row["created_at"])

    async def lock_pair(self, workspace_id: str, run_id: str, brand_id: str) -> PairState | None:
        # The parked judgment first: the judge worker settles a pair by deleting it, then
        # writing the state; locking in the same order means one waits, never a deadlock.
        await self.conn.execute("SELECT 1 FROM pending_judgments WHERE run_id = $1 AND brand_id = $2 "
                                "FOR UPDATE", run_id, brand_id)
        row = await self.conn.fetchrow(
            f"SELECT {STATUS_COLUMNS} FROM run_brand_status WHERE run_id = $1 AND brand_id = $2 "
            "AND workspace_id = $3 FOR UPDATE", run_id, brand_id, workspace_id)
        return PairState(**dict(row)) if row else None

    async def add(self, review: JudgeReview) -> bool:
        return bool(await self.conn.fetchval(
            f"INSERT INTO judge_reviews ({REVIEW_COLUMNS}) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING "
            "RETURNING true",
            review.review_id, review.workspace_id, review.run_id, review.brand_id,
            review.classification_id, review.human_class, review.ground_truth_hash,
            review.reviewer, review.actor, review.note, review.reviewed_at))

    async def get(self, review_id: uuid.UUID) -> JudgeReview | None:
        row = await self.conn.fetchrow(
            f"SELECT {REVIEW_COLUMNS} FROM judge_reviews WHERE review_id = $1", review_id)
        return JudgeReview(**dict(row)) if row else None

    async def of_label(self, classification_id: uuid.UUID) -> JudgeReview | None:
        row = await self.conn.fetchrow(
            f"SELECT {REVIEW_COLUMNS} FROM judge_reviews WHERE classification_id = $1",
            classification_id)
        return JudgeReview(**dict(row)) if row else None

    async def reviewed(self, workspace_id: str, judge_model: str | None) -> list[ReviewedLabel]:
        rows = await self.conn.fetch(
            "SELECT h.citation_class AS judge_class, v.human_class, h.judge_model "
            "FROM judge_reviews v JOIN classification_history h "
            "  ON h.classification_id = v.classification_id "
            "WHERE v.workspace_id = $1 AND ($2::text IS NULL OR h.judge_model = $2) "
            "ORDER BY v.reviewed_at, v.review_id", workspace_id, judge_model)
        return [ReviewedLabel(r["judge_class"], r["human_class"], r["judge_model"]) for r in rows]
