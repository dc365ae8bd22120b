"""Runs: record one (HTTP), read them, their history, and reclassify (manual, reverification).

Reclassification always appends a history row; the pair's current class moves to the newest.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from attesta_classifier.domain.commands import (
    GetHistory, GetRun, ListRuns, Reclassify, RecordEvidenceLeaves, Reverify, SubmitRun)
from attesta_classifier.domain.model import Run, ground_truth_hash
from attesta_classifier.service_layer.brands import require_brand
from attesta_classifier.service_layer.errors import IdempotencyKeyReused, Invalid, NotFound
from attesta_classifier.service_layer.judge_worker import judge_pair
from attesta_classifier.service_layer.pipeline import (
    PRODUCER, Classified, Heuristic, NeedsJudge, Outcome, answer_sha256, count_outcomes,
    jobs_for_run, plan, write_outcomes)
from attesta_classifier.service_layer.unit_of_work import (
    HistoryRow, PairState, RunQuery, StoredRun, UnitOfWork)
from attesta_contracts import derived_id, utc_now
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import RUNS_RECORDED
from attesta_platform import outbox
from attesta_platform.logs import get_logger

log = get_logger("attesta.classifier.runs")
RunWithStates = tuple[StoredRun, list[PairState]]
RunPage = tuple[list[RunWithStates], str | None]  # (runs, the next page's cursor)


async def record_evidence_leaves(cmd: RecordEvidenceLeaves, uow: UnitOfWork) -> int:
    """Remember the Merkle log's leaf index of answers' bytes (evidence.recorded.v1), which
    the run exports carry so a report can be verified offline (issue #25 item 7)."""
    async with uow:
        added = await uow.runs.add_leaves(cmd.leaves)
        await uow.commit()
    return added


async def submit_run(cmd: SubmitRun, uow: UnitOfWork) -> tuple[str, str]:
    """Store the run and stage ``runs.recorded.v1`` in one transaction. The classifier's own
    consumer classifies it from the topic, like every other run; the evidence service stores
    the answer from the same event.

    With the client's Idempotency-Key (the gateway passes it on) the run id is derived from
    (workspace, key), so a retry of a request whose run was already stored returns that run and
    stages nothing: the gateway's own record of the key can be missing (its PostgreSQL was down
    when it would have saved the answer, or it retried us after a lost reply), and only here can
    a second run for one key be refused. The same key with another run is a 422."""
    now, workspace_id, idempotency_key = utc_now(), cmd.workspace_id, cmd.idempotency_key
    run_id = str(derived_id("run", workspace_id, idempotency_key) if idempotency_key
                 else uuid.uuid4())
    run = Run(run_id=run_id, workspace_id=workspace_id, engine=cmd.engine,
              model=cmd.model, prompt=cmd.prompt, answer=cmd.answer,
              answer_sha256=answer_sha256(cmd.answer), brand_ids=tuple(dict.fromkeys(cmd.brand_ids)),
              requested_at=cmd.requested_at or now, answered_at=cmd.answered_at or now,
              source="external")
    async with uow:
        if idempotency_key and (stored := await uow.runs.get(workspace_id, run_id)):
            if (stored.engine, stored.model, stored.prompt, stored.answer_sha256,
                    stored.brand_ids) != (run.engine, run.model, run.prompt, run.answer_sha256,
                                          run.brand_ids):
                raise IdempotencyKeyReused(
                    "this Idempotency-Key already recorded a different run; use a new key for "
                    "a new run")
            return run_id, stored.answer_sha256
        if run.brand_ids:
            known = await uow.brands.existing(workspace_id, run.brand_ids)
            missing = [b for b in run.brand_ids if b not in known]
            if missing:
                raise Invalid(f"unknown brand ids in this workspace: {', '.join(missing)}")
        await uow.runs.add([run])
        payload = RunRecorded(run_id=run.run_id, workspace_id=workspace_id, engine=run.engine,
                              model=run.model, prompt=run.prompt, answer=run.answer,
                              answer_sha256=run.answer_sha256, brand_ids=list(run.brand_ids),
                              requested_at=run.requested_at, answered_at=run.answered_at,
                              source=run.source)
        # derived from the run id: two concurrent first tries with one key stage one event
        event_id = derived_id("runs.recorded", run_id) if idempotency_key else uuid.uuid4()
        await uow.outbox.add([outbox.staged(
            RUNS_RECORDED, run.run_id, payload, event_id=event_id, producer=PRODUCER,
            correlation_id=run.run_id)])
        await uow.commit()
    return run.run_id, run.answer_sha256


async def _load_run(uow: UnitOfWork, workspace_id: str, run_id: str) -> StoredRun:
    run = await uow.runs.get(workspace_id, run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r} in this workspace")
    return run


def brand_states(run: StoredRun, states: Sequence[PairState]) -> list[PairState]:
    """Current state per brand; brands the run names but that were not processed yet show as
    pending."""
    out = {s.brand_id: s for s in states}
    for b in run.brand_ids:
        out.setdefault(b, PairState(run.run_id, b, "pending", "not classified yet", run.recorded_at))
    return [out[k] for k in sorted(out)]


async def get_run(query: GetRun, uow: UnitOfWork) -> RunWithStates:
    return await _run_states(uow, query.workspace_id, query.run_id)


async def _run_states(uow: UnitOfWork, workspace_id: str, run_id: str) -> RunWithStates:
    async with uow.read():
        run = await _load_run(uow, workspace_id, run_id)
        states = await uow.decisions.states([run_id])
    return run, brand_states(run, states)


def _cursor_encode(at: datetime, run_id: str) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{run_id}".encode()).decode()


def _cursor_decode(cursor: str) -> tuple[datetime, str]:
    try:
        at, run_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return datetime.fromisoformat(at), run_id
    except Exception:  # noqa: BLE001 - any garbage is the caller's error
        raise Invalid("cursor is not one this API returned") from None


async def list_runs(query: ListRuns, uow: UnitOfWork) -> RunPage:
    f, limit = query.filter, query.limit
    q = RunQuery(f.engine, f.brand_id, f.status, f.citation_class, f.source, f.from_, f.to,
                 _cursor_decode(query.cursor) if query.cursor else None, f.decided_by, f.tag,
                 f.collection_method)
    async with uow.read():
        runs = await uow.runs.page(query.workspace_id, q, limit + 1)
        page = runs[:limit]
        states = await uow.decisions.states([r.run_id for r in page])
    by_run: dict[str, list[PairState]] = {}
    for s in states:
        by_run.setdefault(s.run_id, []).append(s)
    items = [(r, brand_states(r, by_run.get(r.run_id, []))) for r in page]
    next_cursor = None
    if len(runs) > limit:
        last = page[-1]
        assert last.recorded_at is not None  # set by the store
        next_cursor = _cursor_encode(last.recorded_at, last.run_id)
    return items, next_cursor


async def history(query: GetHistory, uow: UnitOfWork) -> tuple[list[HistoryRow], list[HistoryRow]]:
    async with uow.read():
        await _load_run(uow, query.workspace_id, query.run_id)
        rows = await uow.decisions.history(query.run_id, query.as_of)
    latest: dict[str, HistoryRow] = {}
    for r in rows:
        latest[r.brand_id] = r
    return rows, [latest[k] for k in sorted(latest)]


async def reclassify(cmd: Reclassify, uow: UnitOfWork, heuristic: Heuristic, judge: Any,
                     judge_timeout_s: float = 60.0) -> list[PairState]:
    """Manual reclassification: decide again now (judging inline when needed) and append.
    If the judge is unavailable the pair is parked for the judge worker (status unchanged if
    it already had a class)."""
    request_id, workspace_id, run_id, brand_ids = (str(uuid.uuid4()), cmd.workspace_id,
                                                   cmd.run_id, cmd.brand_ids)
    async with uow.read():
        run = await _load_run(uow, workspace_id, run_id)
        brands = await uow.brands.of_workspaces([workspace_id])
        facts = await uow.facts.active_of([workspace_id])
        seen = [s.brand_id for s in await uow.decisions.states([run_id])]
    only: list[str] | None
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
                        correlation_id=request_id, trigger_reason=cmd.reason, actor=cmd.actor,
                        only=only)
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
    async with uow:
        await write_outcomes(uow, outcomes, heuristic.version)
        await uow.commit()
    count_outcomes(outcomes)
    _, states = await _run_states(uow, workspace_id, run_id)
    wanted = {j.brand_id for j in jobs}
    return [s for s in states if s.brand_id in wanted]


async def reverify_brand(cmd: Reverify, uow: UnitOfWork, heuristic: Heuristic,
                         batch: int = 500) -> dict[str, Any]:
    """Reclassify every run of the brand against its current ground truth (trigger
    reverification), including runs recorded before the brand was tracked. Deterministic pairs
    are decided at once; ambiguous ones go to the judge worker. Each batch is its own
    transaction; every decision appends."""
    request_id, workspace_id, brand_id = str(uuid.uuid4()), cmd.workspace_id, cmd.brand_id
    counts: dict[str, Any] = {"runs": 0, "recorded": 0, "refused": 0, "pending": 0}
    async with uow.read():
        await require_brand(uow, workspace_id, brand_id)
    after = ""
    while True:
        async with uow:
            # The brand's runs: those naming it, those about every brand (no brand ids, e.g. our
            # assistant's, also the ones recorded before the brand existed) and any run that
            # already has a state for it.
            runs = await uow.runs.of_brand(workspace_id, brand_id, after, batch)
            if not runs:
                break
            after = runs[-1].run_id
            brands = await uow.brands.of_workspaces([workspace_id])
            facts = await uow.facts.active_of([workspace_id], [brand_id])
            jobs = []
            for run in runs:
                jobs += jobs_for_run(run, brands, trigger="reverification",
                                     source_key=f"reverify:{request_id}", correlation_id=request_id,
                                     trigger_reason=cmd.reason, actor=cmd.actor, only=[brand_id])
            outcomes = plan(jobs, brands, facts, heuristic)
            written = await write_outcomes(uow, outcomes, heuristic.version)
            await uow.commit()
        count_outcomes(outcomes)
        counts["runs"] += len(runs)
        for k, v in written.items():
            counts[k] += v
    async with uow.read():
        facts = await uow.facts.active_of([workspace_id], [brand_id])
    counts["ground_truth_hash"] = ground_truth_hash(facts.get((workspace_id, brand_id), []))
    return counts
