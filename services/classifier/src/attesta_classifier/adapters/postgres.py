"""PostgreSQL access for the classifier (asyncpg): rows in, domain objects out.

Functions take a connection so the caller (the service layer's transaction) decides what is
atomic. Bulk writes go through ``unnest`` arrays: one statement per table per batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import orjson

from attesta_classifier.domain.model import Brand, Fact, Run


async def create_pool(dsn: str, max_size: int = 10) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                     command_timeout=60)


# -- mapping --------------------------------------------------------------------------------
def brand_from_row(r: asyncpg.Record) -> Brand:
    return Brand(brand_id=r["brand_id"], workspace_id=r["workspace_id"], name=r["name"],
                 aliases=tuple(r["aliases"]), domains=tuple(r["domains"]),
                 competitors=tuple(r["competitors"]), sources=tuple(r["sources"]))


def fact_from_row(r: asyncpg.Record) -> Fact:
    return Fact(fact_id=r["fact_id"], brand_id=r["brand_id"], type=r["type"], text=r["text"],
                source_url=r["source_url"], fetched_at=r["fetched_at"],
                attribution=r["attribution"], content_sha256=r["content_sha256"])


def run_from_row(r: asyncpg.Record) -> Run:
    return Run(run_id=r["run_id"], workspace_id=r["workspace_id"], engine=r["engine"],
               model=r["model"], prompt=r["prompt"], answer=r["answer"],
               answer_sha256=r["answer_sha256"], brand_ids=tuple(r["brand_ids"]),
               requested_at=r["requested_at"], answered_at=r["answered_at"], source=r["source"])


# -- brands and facts ---------------------------------------------------------------------------
BRAND_COLUMNS = "workspace_id, brand_id, name, aliases, domains, competitors, sources, created_at, updated_at"
FACT_COLUMNS = ("fact_id, workspace_id, brand_id, type, text, source_url, fetched_at, attribution, "
                "content_sha256, active, superseded_at, created_at")


async def brands_of(conn: asyncpg.Connection, workspace_ids: Iterable[str]) -> dict[tuple[str, str], Brand]:
    rows = await conn.fetch(f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = ANY($1::text[])",
                            list(set(workspace_ids)))
    return {(r["workspace_id"], r["brand_id"]): brand_from_row(r) for r in rows}


async def superseded_facts(conn: asyncpg.Connection, workspace_id: str,
                           brand_id: str) -> list[asyncpg.Record]:
    """The brand's facts no longer active, most recently superseded first (nothing is ever
    deleted, so this is every fact a refresh has replaced and not re-activated since)."""
    return await conn.fetch(f"SELECT {FACT_COLUMNS} FROM ground_truth_facts WHERE workspace_id = $1 "
                            "AND brand_id = $2 AND NOT active ORDER BY superseded_at DESC, fact_id",
                            workspace_id, brand_id)


async def active_facts_of(conn: asyncpg.Connection, workspace_ids: Iterable[str],
                          brand_ids: Iterable[str] | None = None) -> dict[tuple[str, str], list[Fact]]:
    sql = ("SELECT fact_id, workspace_id, brand_id, type, text, source_url, fetched_at, attribution, "
           "content_sha256 FROM ground_truth_facts WHERE active AND workspace_id = ANY($1::text[])")
    args: list[Any] = [list(set(workspace_ids))]
    if brand_ids is not None:
        sql += " AND brand_id = ANY($2::text[])"
        args.append(list(set(brand_ids)))
    out: dict[tuple[str, str], list[Fact]] = {}
    for r in await conn.fetch(sql + " ORDER BY fact_id", *args):
        out.setdefault((r["workspace_id"], r["brand_id"]), []).append(fact_from_row(r))
    return out


# -- runs -------------------------------------------------------------------------------------
RUN_COLUMNS = ("run_id, workspace_id, engine, model, prompt, answer, answer_sha256, brand_ids, "
               "source, requested_at, answered_at, recorded_at")


async def insert_runs(conn: asyncpg.Connection, runs: Sequence[Run]) -> None:
    """Insert runs that are not stored yet (a run is immutable: a second copy changes nothing)."""
    if not runs:
        return
    await conn.execute(
        "INSERT INTO runs (run_id, workspace_id, engine, model, prompt, answer, answer_sha256, "
        "brand_ids, source, requested_at, answered_at, sources, prompt_context) "
        "SELECT r.run_id, r.workspace_id, r.engine, r.model, r.prompt, r.answer, r.answer_sha256, "
        "  coalesce((SELECT array_agg(x) FROM jsonb_array_elements_text(r.brand_ids) x), '{}'), "
        "  r.source, r.requested_at, r.answered_at, r.sources::jsonb, r.prompt_context::jsonb "
        "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
        "  $7::text[], $8::jsonb[], $9::text[], $10::timestamptz[], $11::timestamptz[], "
        "  $12::text[], $13::text[]) "
        "  AS r(run_id, workspace_id, engine, model, prompt, answer, answer_sha256, brand_ids, "
        "       source, requested_at, answered_at, sources, prompt_context) "
        "ON CONFLICT (run_id) DO NOTHING",
        [r.run_id for r in runs], [r.workspace_id for r in runs], [r.engine for r in runs],
        [r.model for r in runs], [r.prompt for r in runs], [r.answer for r in runs],
        [r.answer_sha256 for r in runs],
        [orjson.dumps(list(r.brand_ids)).decode() for r in runs],
        [r.source for r in runs], [r.requested_at for r in runs], [r.answered_at for r in runs],
        [sources_json(r) for r in runs], [prompt_context_json(r) for r in runs])


def sources_json(run: Run) -> str:
    return orjson.dumps([s.model_dump(mode="json", exclude_none=True) for s in run.sources]
                        ).decode()


def prompt_context_json(run: Run) -> str | None:
    c = run.prompt_context
    return None if c is None else c.model_dump_json(exclude_none=True)


RUN_COPY_COLUMNS = ("run_id", "workspace_id", "engine", "model", "prompt", "answer", "answer_sha256",
                    "brand_ids", "source", "requested_at", "answered_at", "sources",
                    "prompt_context")


async def copy_new_runs(conn: asyncpg.Connection, runs: Sequence[Run]) -> None:
    """COPY runs the caller checked are not stored yet (the consumer's hot path). A concurrent
    writer of the same run makes the COPY fail with a unique violation; the caller retries."""
    if runs:
        await conn.copy_records_to_table("runs", columns=RUN_COPY_COLUMNS, records=[
            (r.run_id, r.workspace_id, r.engine, r.model, r.prompt, r.answer, r.answer_sha256,
             list(r.brand_ids), r.source, r.requested_at, r.answered_at, sources_json(r),
             prompt_context_json(r)) for r in runs])


async def run_workspaces(conn: asyncpg.Connection, run_ids: Sequence[str]) -> dict[str, str]:
    rows = await conn.fetch("SELECT run_id, workspace_id FROM runs WHERE run_id = ANY($1::text[])",
                            list(run_ids))
    return {r["run_id"]: r["workspace_id"] for r in rows}


async def get_run(conn: asyncpg.Connection, workspace_id: str, run_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $1 AND workspace_id = $2",
                               run_id, workspace_id)


# -- decisions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryRow:
    classification_id: uuid.UUID
    run_id: str
    brand_id: str
    workspace_id: str
    citation_class: str
    decided_by: str
    judge_model: str | None
    ground_truth_hash: str
    fact_ids: list[str]
    reason: str
    trigger: str
    trigger_reason: str | None
    heuristic_version: str
    prompt_version: str | None
    evidence_sha256: str
    actor: str | None
    classified_at: datetime


HISTORY_FIELDS = ("classification_id", "run_id", "brand_id", "workspace_id", "citation_class",
                  "decided_by", "judge_model", "ground_truth_hash", "fact_ids", "reason", "trigger",
                  "trigger_reason", "heuristic_version", "prompt_version", "evidence_sha256",
                  "actor", "classified_at")


STATUS_COPY_COLUMNS = ("run_id", "brand_id", "workspace_id", "status", "classification_id",
                       "citation_class", "decided_by", "judge_model", "ground_truth_hash", "reason",
                       "updated_at")


async def _settle_pending(conn: asyncpg.Connection, pairs: Sequence[tuple[str, str]]) -> None:
    """A decision settles a pending judgment of the same pair (if there is one)."""
    run_ids = list({p[0] for p in pairs})
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pending_judgments WHERE run_id = ANY($1::text[]))",
                               run_ids):
        return
    await conn.execute(
        "DELETE FROM pending_judgments p USING unnest($1::text[], $2::text[]) AS t(run_id, brand_id) "
        "WHERE p.run_id = t.run_id AND p.brand_id = t.brand_id",
        [p[0] for p in pairs], [p[1] for p in pairs])


async def append_history(conn: asyncpg.Connection, rows: Sequence[HistoryRow],
                         new_runs: frozenset[str] = frozenset()) -> None:
    """Append history rows (COPY: the fastest path into PostgreSQL) and make each the current
    class of its (run, brand); a pending judgment of the pair is settled by it. Pairs of
    ``new_runs`` (runs first stored in this transaction) cannot have a state row yet, so theirs
    are COPYed; the others are upserted."""
    if not rows:
        return
    await conn.copy_records_to_table(
        "classification_history", columns=HISTORY_FIELDS,
        records=[tuple(getattr(r, f) for f in HISTORY_FIELDS) for r in rows])
    latest = list({(r.run_id, r.brand_id): r for r in rows}.values())  # one state per pair: the last
    fresh = [r for r in latest if r.run_id in new_runs]
    known = [r for r in latest if r.run_id not in new_runs]
    if fresh:
        await conn.copy_records_to_table("run_brand_status", columns=STATUS_COPY_COLUMNS, records=[
            (r.run_id, r.brand_id, r.workspace_id, "classified", r.classification_id, r.citation_class,
             r.decided_by, r.judge_model, r.ground_truth_hash, r.reason, r.classified_at) for r in fresh])
    if known:
        await conn.execute(
            "INSERT INTO run_brand_status AS s (run_id, brand_id, workspace_id, status, "
            "  classification_id, citation_class, decided_by, judge_model, ground_truth_hash, reason, "
            "  updated_at) "
            "SELECT run_id, brand_id, workspace_id, 'classified', cid, cls, dby, jm, gth, reason, at "
            "FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::text[], "
            "  $7::text[], $8::text[], $9::text[], $10::timestamptz[]) "
            "  AS t(run_id, brand_id, workspace_id, cid, cls, dby, jm, gth, reason, at) "
            "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'classified', "
            "  classification_id = excluded.classification_id, citation_class = excluded.citation_class, "
            "  decided_by = excluded.decided_by, judge_model = excluded.judge_model, "
            "  ground_truth_hash = excluded.ground_truth_hash, reason = excluded.reason, "
            "  updated_at = excluded.updated_at",
            [r.run_id for r in known], [r.brand_id for r in known], [r.workspace_id for r in known],
            [r.classification_id for r in known], [r.citation_class for r in known],
            [r.decided_by for r in known], [r.judge_model for r in known],
            [r.ground_truth_hash for r in known], [r.reason for r in known],
            [r.classified_at for r in known])
        await _settle_pending(conn, [(r.run_id, r.brand_id) for r in known])


async def mark_refused(conn: asyncpg.Connection, pairs: Sequence[tuple[str, str, str, str]],
                       at: datetime) -> None:
    """(run_id, brand_id, workspace_id, reason): explicit refused status; nothing is guessed."""
    if not pairs:
        return
    pairs = list({(p[0], p[1]): p for p in pairs}.values())
    await conn.execute(
        "INSERT INTO run_brand_status AS s (run_id, brand_id, workspace_id, status, reason, updated_at) "
        "SELECT run_id, brand_id, ws, 'refused', reason, $5 "
        "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(run_id, brand_id, ws, reason) "
        "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'refused', reason = excluded.reason, "
        "  updated_at = excluded.updated_at",
        [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs], [p[3] for p in pairs], at)
    await _settle_pending(conn, [(p[0], p[1]) for p in pairs])


@dataclass(frozen=True)
class PendingRow:
    run_id: str
    brand_id: str
    workspace_id: str
    trigger: str
    trigger_reason: str | None
    actor: str | None


async def mark_pending(conn: asyncpg.Connection, rows: Sequence[PendingRow], at: datetime) -> None:
    """Park ambiguous pairs for the judge worker. A pair with no class yet shows ``pending``; a
    pair that already has a class keeps it until the judge appends a new one."""
    if not rows:
        return
    rows = list({(r.run_id, r.brand_id): r for r in rows}.values())
    await conn.execute(
        "INSERT INTO run_brand_status (run_id, brand_id, workspace_id, status, reason, updated_at) "
        "SELECT run_id, brand_id, ws, 'pending', 'waiting for the judge', $4 "
        "FROM unnest($1::text[], $2::text[], $3::text[]) AS t(run_id, brand_id, ws) "
        "ON CONFLICT (run_id, brand_id) DO UPDATE SET status = 'pending', "
        "  reason = 'waiting for the judge', updated_at = excluded.updated_at "
        "  WHERE run_brand_status.status <> 'classified'",
        [r.run_id for r in rows], [r.brand_id for r in rows], [r.workspace_id for r in rows], at)
    await conn.execute(
        "INSERT INTO pending_judgments (run_id, brand_id, workspace_id, trigger, trigger_reason, actor) "
        "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) "
        "ON CONFLICT (run_id, brand_id) DO UPDATE SET trigger = excluded.trigger, "
        "  trigger_reason = excluded.trigger_reason, actor = excluded.actor, attempts = 0, "
        "  next_attempt_at = now(), last_error = NULL, claim_token = NULL",
        [r.run_id for r in rows], [r.brand_id for r in rows], [r.workspace_id for r in rows],
        [r.trigger for r in rows], [r.trigger_reason for r in rows], [r.actor for r in rows])


