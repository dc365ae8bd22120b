"""Runs: record one (HTTP), read them, their history, and reclassify (manual, reverification).

Reclassification always appends a history row; the pair's current class moves to the newest.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from attesta_classifier.adapters import postgres as db
from attesta_classifier.domain.model import Run
from attesta_classifier.service_layer.brands import get_brand_row
from attesta_classifier.service_layer.errors import IdempotencyKeyReused, Invalid, NotFound
from attesta_classifier.service_layer.judge_worker import judge_pair
from attesta_classifier.service_layer.pipeline import (
    PRODUCER, Classified, Heuristic, NeedsJudge, Outcome, answer_sha256, count_outcomes,
    jobs_for_run, plan, write_outcomes)
from attesta_contracts import derived_id, utc_now
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import RUNS_RECORDED
from attesta_platform import outbox
from attesta_platform.logs import get_logger

log = get_logger("attesta.classifier.runs")

STATUS_COLUMNS = ("run_id, brand_id, status, classification_id, citation_class, decided_by, "
                  "judge_model, ground_truth_hash, reason, updated_at")
HISTORY_COLUMNS = ", ".join(db.HISTORY_FIELDS)


async def create_run(pool: asyncpg.Pool, workspace_id: str, body: Any,
                     idempotency_key: str | None = None) -> tuple[str, str]:
    """Store the run and stage ``runs.recorded.v1`` in one transaction. The classifier's own
    consumer classifies it from the topic, like every other run; the evidence service stores
    the answer from the same event.

    With the client's Idempotency-Key (the gateway passes it on) the run id is derived from
    (workspace, key), so a retry of a request whose run was already stored returns that run and
    stages nothing: the gateway's own record of the key can be missing (its PostgreSQL was down
    when it would have saved the answer, or it retried us after a lost reply), and only here can
    a second run for one key be refused. The same key with another run is a 422."""
    now = utc_now()
    run_id = str(derived_id("run", workspace_id, idempotency_key) if idempotency_key
                 else uuid.uuid4())
    run = Run(run_id=run_id, workspace_id=workspace_id, engine=body.engine,
              model=body.model, prompt=body.prompt, answer=body.answer,
              answer_sha256=answer_sha256(body.answer), brand_ids=tuple(dict.fromkeys(body.brand_ids)),
              requested_at=body.requested_at or now, answered_at=body.answered_at or now,
              source="external")
    async with pool.acquire() as conn, conn.transaction():
        if idempotency_key and (stored := await db.get_run(conn, workspace_id, run_id)):
            if (stored["engine"], stored["model"], stored["prompt"], stored["answer_sha256"],
                    tuple(stored["brand_ids"])) != (run.engine, run.model, run.prompt,
                                                    run.answer_sha256, run.brand_ids):
                raise IdempotencyKeyReused(
                    "this Idempotency-Key already recorded a different run; use a new key for "
                    "a new run")
            return run_id, stored["answer_sha256"]
        if run.brand_ids:
            known = {r["brand_id"] for r in await conn.fetch(
                "SELECT brand_id FROM brands WHERE workspace_id = $1 AND brand_id = ANY($2::text[])",
                workspace_id, list(run.brand_ids))}
            missing = [b for b in run.brand_ids if b not in known]
            if missing:
                raise Invalid(f"unknown brand ids in this workspace: {', '.join(missing)}")
        await db.insert_runs(conn, [run])
        payload = RunRecorded(run_id=run.run_id, workspace_id=workspace_id, engine=run.engine,
                              model=run.model, prompt=run.prompt, answer=run.answer,
                              answer_sha256=run.answer_sha256, brand_ids=list(run.brand_ids),
                              requested_at=run.requested_at, answered_at=run.answered_at,
                              source=run.source)
        # derived from the run id: two concurrent first tries with one key stage one event
        event_id = derived_id("runs.recorded", run_id) if idempotency_key else uuid.uuid4()
        await outbox.enqueue_many(conn, [outbox.staged(
            RUNS_RECORDED, run.run_id, payload, event_id=event_id, producer=PRODUCER,
            correlation_id=run.run_id)])
    return run.run_id, run.answer_sha256


async def _load_run(conn: asyncpg.Connection, workspace_id: str, run_id: str) -> asyncpg.Record:
    row = await db.get_run(conn, workspace_id, run_id)
    if row is None:
        raise NotFound(f"no run {run_id!r} in this workspace")
    return row


def brand_states(run: asyncpg.Record, statuses: Sequence[asyncpg.Record]) -> list[dict]:
    """Current state per brand; brands the run names but that were not processed yet show as
    pending."""
    out = {s["brand_id"]: dict(s) for s in statuses}
    for b in run["brand_ids"]:
        out.setdefault(b, {"brand_id": b, "status": "pending", "reason": "not classified yet",
                           "updated_at": run["recorded_at"]})
    return [out[k] for k in sorted(out)]


async def get_run(pool: asyncpg.Pool, workspace_id: str, run_id: str) -> tuple[asyncpg.Record, list[dict]]:
    async with pool.acquire() as conn:
        run = await _load_run(conn, workspace_id, run_id)
        statuses = await conn.fetch(f"SELECT {STATUS_COLUMNS} FROM run_brand_status WHERE run_id = $1",
                                    run_id)
    return run, brand_states(run, statuses)


def _cursor_encode(at: datetime, run_id: str) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{run_id}".encode()).decode()


def _cursor_decode(cursor: str) -> tuple[datetime, str]:
    try:
        at, run_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return datetime.fromisoformat(at), run_id
    except Exception:  # noqa: BLE001 - any garbage is the caller's error
        raise Invalid("cursor is not one this API returned") from None


@dataclass(frozen=True)
class RunFilter:
    engine: str | None = None
    brand_id: str | None = None
    status: str | None = None
    citation_class: str | None = None
    source: str | None = None
    from_: datetime | None = None
    to: datetime | None = None
    limit: int = 50
    cursor: str | None = None
    decided_by: str | None = None  # 'deterministic' or 'judge': a brand's current class's
    tag: str | None = None  # any of the collector prompt's tags (topic, persona, funnel)


async def list_runs(pool: asyncpg.Pool, workspace_id: str, f: RunFilter) -> tuple[list[tuple[asyncpg.Record, list[dict]]], str | None]:
    where = ["r.workspace_id = $1"]
    args: list[Any] = [workspace_id]

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if f.engine:
        where.append(f"r.engine = {arg(f.engine)}")
    if f.source:
        where.append(f"r.source = {arg(f.source)}")
    if f.tag:
        t = arg(f.tag)
        where.append(f"{t} IN (r.prompt_context->>'topic', r.prompt_context->>'persona', "
                     f"r.prompt_context->>'funnel')")
    if f.from_:
        where.append(f"r.recorded_at >= {arg(f.from_)}")
    if f.to:
        where.append(f"r.recorded_at < {arg(f.to)}")
    if f.brand_id or f.status or f.citation_class or f.decided_by:
        cond = ["s.run_id = r.run_id"]
        if f.brand_id:
            cond.append(f"s.brand_id = {arg(f.brand_id)}")
        if f.status:
            cond.append(f"s.status = {arg(f.status)}")
        if f.citation_class:
            cond.append(f"s.citation_class = {arg(f.citation_class)} AND s.status = 'classified'")
        if f.decided_by:
            cond.append(f"s.decided_by = {arg(f.decided_by)} AND s.status = 'classified'")
        where.append(f"EXISTS (SELECT 1 FROM run_brand_status s WHERE {' AND '.join(cond)})")
    if f.cursor:
        at, rid = _cursor_decode(f.cursor)
        where.append(f"(r.recorded_at, r.run_id) < ({arg(at)}, {arg(rid)})")
    sql = (f"SELECT {', '.join('r.' + c.strip() for c in db.RUN_COLUMNS.split(','))} FROM runs r "
           f"WHERE {' AND '.join(where)} ORDER BY r.recorded_at DESC, r.run_id DESC "
           f"LIMIT {arg(f.limit + 1)}")
    async with pool.acquire() as conn:
        rows = await conn.fetch(sql, *args)
        page = rows[: f.limit]
        statuses = await conn.fetch(f"SELECT {STATUS_COLUMNS} FROM run_brand_status "
                                    "WHERE run_id = ANY($1::text[])", [r["run_id"] for r in page])
    by_run: dict[str, list[asyncpg.Record]] = {}
    for s in statuses:
        by_run.setdefault(s["run_id"], []).append(s)
    items = [(r, brand_states(r, by_run.get(r["run_id"], []))) for r in page]
    next_cursor = _cursor_encode(page[-1]["recorded_at"], page[-1]["run_id"]) if len(rows) > f.limit else None
    return items, next_cursor


async def history(pool: asyncpg.Pool, workspace_id: str, run_id: str,
                  as_of: datetime | None) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    async with pool.acquire() as conn:
        await _load_run(conn, workspace_id, run_id)
        rows = await conn.fetch(
            f"SELECT {HISTORY_COLUMNS} FROM classification_history WHERE run_id = $1 "
            "AND ($2::timestamptz IS NULL OR classified_at <= $2) ORDER BY classified_at, seq",
            run_id, as_of)
    latest: dict[str, asyncpg.Record] = {}
    for r in rows:
        latest[r["brand_id"]] = r
    return rows, [latest[k] for k in sorted(latest)]


async def reclassify(pool: asyncpg.Pool, heuristic: Heuristic, judge: Any, workspace_id: str,
                     run_id: str, *, reason: str, actor: str, brand_ids: list[str] | None,
                     judge_timeout_s: float = 60.0) -> list[dict]:
    """Manual reclassification: decide again now (judging inline when needed) and append.
    If the judge is unavailable the pair is parked for the judge worker (status unchanged if
    it already had a class)."""
    request_id = str(uuid.uuid4())
    async with pool.acquire() as conn:
        run_row = await _load_run(conn, workspace_id, run_id)
        run = db.run_from_row(run_row)
        brands = await db.brands_of(conn, [workspace_id])
        facts = await db.active_facts_of(conn, [workspace_id])
        seen = [r["brand_id"] for r in await conn.fetch(
            "SELECT brand_id FROM run_brand_status WHERE run_id = $1", run_id)]
    if brand_ids:
        only = list(dict.fromkeys(brand_ids))
        unknown = [b for b in only if (workspace_id, b) not in brands]
        if unknown:
            raise Invalid(f"unknown brand ids in this workspace: {', '.join(unknown)}")
        # A reclassification decides again for the run's own brands; it must not attach the run
        # to a brand it was never submitted for (that would enter the brand's metrics). A run
        # submitted with no brand ids is for every brand of the workspace.
        if run.brand_ids:
            foreign = [b for b in only if b not in run.brand_ids and b not in seen]
            if foreign:
                raise Invalid(f"the run was not submitted for: {', '.join(foreign)} "
                              f"(its brands: {', '.join(run.brand_ids)})")
    else:
        only = list(dict.fromkeys([*run.brand_ids, *seen])) or None
    jobs = jobs_for_run(run, brands, trigger="manual", source_key=f"manual:{request_id}",
                        correlation_id=request_id, trigger_reason=reason, actor=actor, only=only)
    outcomes: list[Outcome] = []
    for o in plan(jobs, brands, facts, heuristic):
        if isinstance(o, NeedsJudge) and judge is not None:
            try:
                decision = await asyncio.wait_for(judge_pair(judge, run, o.brand, o.facts), judge_timeout_s)
                o = Classified(o.job, decision, o.gt_hash)
            except Exception as exc:  # noqa: BLE001 - unavailable judge: park, never guess
                log.warning("judge unavailable during manual reclassify; parked", run_id=run_id,
                            brand_id=o.job.brand_id, error=repr(exc))
        outcomes.append(o)
    async with pool.acquire() as conn, conn.transaction():
        await write_outcomes(conn, outcomes, heuristic.version)
    count_outcomes(outcomes)
    _, states = await get_run(pool, workspace_id, run_id)
    wanted = {j.brand_id for j in jobs}
    return [s for s in states if s["brand_id"] in wanted]


async def reverify_brand(pool: asyncpg.Pool, heuristic: Heuristic, workspace_id: str, brand_id: str,
                         *, actor: str | None = None, reason: str | None = None,
                         batch: int = 500) -> dict[str, Any]:
    """Reclassify every run of the brand against its current ground truth (trigger
    reverification), including runs recorded before the brand was tracked. Deterministic pairs are decided at once; ambiguous ones go to the judge
    worker. Each batch is its own transaction; every decision appends."""
    request_id = str(uuid.uuid4())
    counts = {"runs": 0, "recorded": 0, "refused": 0, "pending": 0}
    async with pool.acquire() as conn:
        await get_brand_row(conn, workspace_id, brand_id)
    after = ""
    while True:
        async with pool.acquire() as conn, conn.transaction():
            # The brand's runs: those naming it, those about every brand (no brand ids, e.g. our
            # assistant's, also the ones recorded before the brand existed) and any run that
            # already has a state for it.
            ids = [r["run_id"] for r in await conn.fetch(
                "SELECT r.run_id FROM runs r WHERE r.workspace_id = $1 AND r.run_id > $3 AND "
                "  ($2 = ANY(r.brand_ids) OR r.brand_ids = '{}' OR EXISTS (SELECT 1 FROM "
                "   run_brand_status s WHERE s.run_id = r.run_id AND s.brand_id = $2)) "
                "ORDER BY r.run_id LIMIT $4", workspace_id, brand_id, after, batch)]
            if not ids:
                break
            after = ids[-1]
            runs = [db.run_from_row(r) for r in await conn.fetch(
                f"SELECT {db.RUN_COLUMNS} FROM runs WHERE run_id = ANY($1::text[]) ORDER BY run_id", ids)]
            brands = await db.brands_of(conn, [workspace_id])
            facts = await db.active_facts_of(conn, [workspace_id], [brand_id])
            jobs = []
            for run in runs:
                jobs += jobs_for_run(run, brands, trigger="reverification",
                                     source_key=f"reverify:{request_id}", correlation_id=request_id,
                                     trigger_reason=reason, actor=actor, only=[brand_id])
            outcomes = plan(jobs, brands, facts, heuristic)
            written = await write_outcomes(conn, outcomes, heuristic.version)
        count_outcomes(outcomes)
        counts["runs"] += len(runs)
        for k, v in written.items():
            counts[k] += v
    async with pool.acquire() as conn:
        from attesta_classifier.domain.model import ground_truth_hash

        facts = await db.active_facts_of(conn, [workspace_id], [brand_id])
    counts["ground_truth_hash"] = ground_truth_hash(facts.get((workspace_id, brand_id), []))
    return counts
