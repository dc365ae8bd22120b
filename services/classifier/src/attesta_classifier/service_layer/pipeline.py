"""Classifying (run, brand) pairs: refusal first, heuristic before judge, history appended.

For every pair, in this order (ADR-031):
1. no non-empty active ground truth for the brand (or the brand is not tracked in the run's
   workspace) -> explicit ``refused`` status with the reason and ``classification.refused.v1``;
   nothing is guessed;
2. the deterministic heuristic (``decide``) -> STRONG / ABSENT / a sure ECHO;
3. otherwise the pair is ambiguous and goes to the judge. On the Kafka path the pair is parked
   in ``pending_judgments`` and the judge worker (``judge_worker.py``) judges it outside the
   consumer, so a slow or unavailable LLM never blocks a partition; manual reclassification
   judges inline and falls back to parking when the judge is unavailable.
Each decision appends a history row, moves the pair's current class and stages
``classification.recorded.v1`` in the outbox, all in the caller's transaction. The caller
counts what was written on /metrics (``count_outcomes``) once that transaction committed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from attesta_classifier.adapters import telemetry
from attesta_classifier.domain.commands import IncomingRun, RecordRuns
from attesta_classifier.domain import position
from attesta_classifier.domain.model import Brand, Decision, Fact, Run, ground_truth_hash
from attesta_classifier.service_layer.unit_of_work import HistoryRow, PendingRow, UnitOfWork
from attesta_contracts import derived_id, utc_now
from attesta_contracts.classification import ClassificationRefused
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import CLASSIFICATION_RECORDED, CLASSIFICATION_REFUSED
from attesta_platform import outbox
from attesta_platform.cited_sources import extract_sources

PRODUCER = "classifier"
Decide = Callable[[Run, Brand], Decision | None]


@dataclass(frozen=True)
class Heuristic:
    decide: Decide
    version: str


@dataclass(frozen=True)
class Job:
    """One (run, brand) to classify, and why."""

    run: Run
    brand_id: str
    trigger: str  # live | reverification | backfill | manual
    source_key: str  # what makes this decision unique (input event id, request id, ...)
    correlation_id: str
    trigger_reason: str | None = None
    actor: str | None = None
    causation_id: str | None = None  # the input event, when there is one


@dataclass(frozen=True)
class Classified:
    job: Job
    decision: Decision
    gt_hash: str


@dataclass(frozen=True)
class Refused:
    job: Job
    reason: str


@dataclass(frozen=True)
class NeedsJudge:
    job: Job
    brand: Brand
    facts: tuple[Fact, ...]
    gt_hash: str


Outcome = Classified | Refused | NeedsJudge


def refusal_reason(workspace_id: str, brand_id: str, brand: Brand | None,
                   facts: Sequence[Fact]) -> str | None:
    if brand is None:
        return f"brand {brand_id!r} is not tracked in workspace {workspace_id!r}"
    if not any(f.text.strip() for f in facts):
        return (f"no active ground truth for brand {brand_id!r}: refresh its sources or add a "
                "manual fact; the classifier does not guess")
    return None


def plan(jobs: Sequence[Job], brands: dict[tuple[str, str], Brand],
         facts: dict[tuple[str, str], list[Fact]], heuristic: Heuristic) -> list[Outcome]:
    """Decide what can be decided without a judge (pure given its inputs)."""
    hashes: dict[tuple[str, str], str] = {}
    out: list[Outcome] = []
    for job in jobs:
        key = (job.run.workspace_id, job.brand_id)
        brand = brands.get(key)
        brand_facts = facts.get(key, [])
        reason = refusal_reason(job.run.workspace_id, job.brand_id, brand, brand_facts)
        if reason is not None:
            out.append(Refused(job, reason))
            continue
        assert brand is not None
        if key not in hashes:
            hashes[key] = ground_truth_hash(brand_facts)
        decision = heuristic.decide(job.run, brand)
        if decision is None:
            out.append(NeedsJudge(job, brand, tuple(brand_facts), hashes[key]))
        else:
            if not decision.heuristic_version:
                decision = _with_version(decision, heuristic.version)
            out.append(Classified(job, decision, hashes[key]))
    return out


def _with_version(decision: Decision, version: str) -> Decision:
    return replace(decision, heuristic_version=version)


def jobs_for_run(run: Run, brands: dict[tuple[str, str], Brand], *, trigger: str, source_key: str,
                 correlation_id: str, trigger_reason: str | None = None,
                 actor: str | None = None, only: Sequence[str] | None = None,
                 causation_id: str | None = None) -> list[Job]:
    """One job per brand of the run: its brand ids, or every brand of the workspace when empty."""
    if only is not None:
        brand_ids = list(dict.fromkeys(only))
    elif run.brand_ids:
        brand_ids = list(dict.fromkeys(run.brand_ids))
    else:
        brand_ids = sorted(b for (ws, b) in brands if ws == run.workspace_id)
    return [Job(run, b, trigger, source_key, correlation_id, trigger_reason, actor, causation_id)
            for b in brand_ids]


def history_row(c: Classified, at: datetime, heuristic_version: str,
                ranking: position.Ranking | None = None) -> HistoryRow:
    """``ranking``: the order the answer names the brand and its competitors (None: not
    computed, the brand is no longer tracked)."""
    d, job = c.decision, c.job
    return HistoryRow(
        classification_id=derived_id("classification", job.source_key, job.run.run_id, job.brand_id,
                                     job.trigger),
        run_id=job.run.run_id, brand_id=job.brand_id, workspace_id=job.run.workspace_id,
        citation_class=str(d.citation_class), decided_by=str(d.decided_by),
        judge_model=d.judge_model, ground_truth_hash=c.gt_hash, fact_ids=list(d.fact_ids),
        reason=d.reason, trigger=job.trigger, trigger_reason=job.trigger_reason,
        heuristic_version=d.heuristic_version or heuristic_version,
        prompt_version=d.prompt_version, evidence_sha256=job.run.answer_sha256,
        actor=job.actor, classified_at=at, reviewer=d.reviewer, note=d.note,
        position=None if ranking is None else ranking.position(job.brand_id),
        named_order=None if ranking is None else list(ranking.order))


def ranking_of(c: Classified, brands: dict[tuple[str, str], Brand]) -> position.Ranking | None:
    """Where the answer names the pair's brand against its competitors (the workspace's brands
    as they are when the class is recorded)."""
    ws = c.job.run.workspace_id
    brand = brands.get((ws, c.job.brand_id))
    if brand is None:
        return None
    rivals = [brands[(ws, r)] for r in brand.competitors if (ws, r) in brands and r != brand.brand_id]
    return position.rank(c.job.run.answer, [brand, *rivals], c.job.run.prompt)


def recorded_event(row: HistoryRow, job: Job) -> outbox.OutboxRow:
    """``classification.recorded.v1`` for a history row, serialized straight from the row.

    This is the hot path of the consumer (one event per decision): building and validating two
    pydantic models per row cost as much as the rest of the write path. Every field comes from
    a row the database's CHECK constraints also guard; tests parse the staged bytes with
    ``Envelope[ClassificationRecorded]`` (the contract) to keep the two in step."""
    payload = {
        "classification_id": str(row.classification_id), "run_id": row.run_id,
        "brand_id": row.brand_id, "workspace_id": row.workspace_id,
        "citation_class": row.citation_class, "decided_by": row.decided_by,
        "judge_model": row.judge_model, "ground_truth_hash": row.ground_truth_hash,
        "fact_ids": row.fact_ids, "reason": row.reason, "trigger": row.trigger,
        "heuristic_version": row.heuristic_version, "prompt_version": row.prompt_version,
        "evidence_sha256": row.evidence_sha256, "actor": row.actor,
        "trigger_reason": row.trigger_reason, "classified_at": row.classified_at,
    }
    if row.reviewer is not None:  # a person's label: who, and their note (optional fields)
        payload["reviewer"], payload["note"] = row.reviewer, row.note
    return outbox.staged_json(CLASSIFICATION_RECORDED, row.run_id, payload,
                              event_id=row.classification_id, occurred_at=row.classified_at,
                              producer=PRODUCER, correlation_id=job.correlation_id,
                              causation_id=job.causation_id)


def refused_event(r: Refused, at: datetime) -> outbox.OutboxRow:
    job = r.job
    event_id = derived_id("refusal", job.source_key, job.run.run_id, job.brand_id, job.trigger)
    payload = ClassificationRefused(run_id=job.run.run_id, brand_id=job.brand_id,
                                    workspace_id=job.run.workspace_id, reason=r.reason,
                                    refused_at=at)
    return outbox.staged(CLASSIFICATION_REFUSED, job.run.run_id, payload, event_id=event_id,
                         producer=PRODUCER, correlation_id=job.correlation_id,
                         causation_id=job.causation_id)


async def write_outcomes(uow: UnitOfWork, outcomes: Sequence[Outcome],
                         heuristic_version: str, new_runs: frozenset[str] = frozenset(),
                         brands: dict[tuple[str, str], Brand] | None = None) -> dict[str, int]:
    """Persist outcomes in the caller's unit of work; returns counts per kind. ``new_runs``:
    runs first stored in this transaction (their pairs have no state row yet). ``brands``: the
    workspaces' brands when the caller has them already (else read here), for the position
    each recorded class carries (issue #25 item 3), whatever decided it.

    Event ids are derived from a source key that is unique per decision (a claimed input
    event, a request id, a judge claim token), so they are COPYed without a conflict check."""
    at = utc_now()
    history: list[HistoryRow] = []
    events: list[outbox.OutboxRow] = []
    refused: list[tuple[str, str, str, str]] = []
    pending: list[PendingRow] = []
    if brands is None and any(isinstance(o, Classified) for o in outcomes):
        brands = await uow.brands.of_workspaces(
            {o.job.run.workspace_id for o in outcomes if isinstance(o, Classified)})
    for o in outcomes:  # events staged in input order: per-run order is kept on the topic
        if isinstance(o, Classified):
            row = history_row(o, at, heuristic_version, ranking_of(o, brands or {}))
            history.append(row)
            events.append(recorded_event(row, o.job))
        elif isinstance(o, Refused):
            refused.append((o.job.run.run_id, o.job.brand_id, o.job.run.workspace_id, o.reason))
            events.append(refused_event(o, at))
        else:
            j = o.job
            pending.append(PendingRow(j.run.run_id, j.brand_id, j.run.workspace_id, j.trigger,
                                         j.trigger_reason, j.actor))
    await uow.decisions.append(history, new_runs)
    await uow.decisions.refuse(refused, at)
    await uow.decisions.park(pending, at)
    await uow.outbox.add_new(events)
    return {"recorded": len(history), "refused": len(refused), "pending": len(pending)}


def count_outcomes(outcomes: Iterable[Outcome]) -> None:
    """Count on /metrics the decisions a *committed* transaction wrote with ``write_outcomes``
    (a rolled-back batch that is retried must not count twice). Tallied first: one increment
    per label set and batch, not one locked counter update per decision."""
    tally: Counter[tuple[Any, tuple[str, ...]]] = Counter()  # (metric, its labels)
    for o in outcomes:
        if isinstance(o, Classified):
            tally[telemetry.CLASSIFICATIONS, (str(o.decision.citation_class),
                                              str(o.decision.decided_by), o.job.trigger)] += 1
        elif isinstance(o, Refused):
            tally[telemetry.REFUSALS, (o.job.trigger,)] += 1
        else:
            tally[telemetry.PARKED, (o.job.trigger,)] += 1
    for (metric, labels), n in tally.items():
        metric.labels(*labels).inc(n)


# -- runs arriving on runs.recorded.v1 (live and backfill) --------------------------------------
@dataclass(frozen=True)
class Rejected:
    item: IncomingRun
    reason: str


def run_from_event(p: RunRecorded) -> Run:
    return Run(run_id=p.run_id, workspace_id=p.workspace_id, engine=p.engine, model=p.model,
               prompt=p.prompt, answer=p.answer, answer_sha256=p.answer_sha256,
               brand_ids=tuple(p.brand_ids), requested_at=p.requested_at,
               answered_at=p.answered_at, source=p.source,
               # A run that arrives without its sources (our assistant's, one POSTed by hand)
               # gets the ones its text cites, by the collector's own extraction.
               sources=tuple(p.sources or extract_sources(p.answer)),
               prompt_context=p.prompt_context, collection_method=p.collection_method,
               model_build=p.model_build)


def answer_sha256(answer: str) -> str:
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


async def record_runs(cmd: RecordRuns, uow: UnitOfWork, heuristic: Heuristic
                      ) -> tuple[dict[str, int], list[Rejected]]:
    """Store and classify a batch of recorded runs in one transaction, exactly once per
    (consumer, event id); the decisions are counted on /metrics once it committed. Invalid
    items are returned as rejected (the caller dead-letters them); they do not fail the batch."""
    async with uow:
        counts, rejected, outcomes = await _record_runs(uow, cmd.items, consumer=cmd.consumer,
                                                        trigger=cmd.trigger, heuristic=heuristic)
        await uow.commit()
    count_outcomes(outcomes)
    return counts, rejected


async def _record_runs(uow: UnitOfWork, items: Sequence[IncomingRun], *, consumer: str,
                       trigger: str, heuristic: Heuristic
                       ) -> tuple[dict[str, int], list[Rejected], list[Outcome]]:
    rejected: list[Rejected] = []
    valid: list[IncomingRun] = []
    # A redelivery can land in the same batch as the original (a producer that crashed and
    # republished with the same derived event id): process each event id once, or the batch's
    # derived history ids collide and the batch can never commit.
    items = list({item.event_id: item for item in reversed(items)}.values())[::-1]
    for item in items:
        if answer_sha256(item.payload.answer) != item.payload.answer_sha256:
            rejected.append(Rejected(item, "answer_sha256 is not the SHA-256 of the answer's UTF-8 bytes"))
        else:
            valid.append(item)
    owners = await uow.runs.owners([i.payload.run_id for i in valid])
    first_ws: dict[str, str] = {}
    kept: list[IncomingRun] = []
    for item in valid:
        p = item.payload
        ws = owners.get(p.run_id) or first_ws.setdefault(p.run_id, p.workspace_id)
        if ws != p.workspace_id:
            rejected.append(Rejected(item, f"run {p.run_id} already belongs to another workspace"))
        else:
            kept.append(item)
    fresh = await uow.inbox.claim(consumer, [i.event_id for i in kept])
    kept = [i for i in kept if i.event_id in fresh]
    counts = {"runs": len(kept), "recorded": 0, "refused": 0, "pending": 0}
    if not kept:
        return counts, rejected, []
    runs = [run_from_event(i.payload) for i in kept]
    new = {r.run_id: r for r in runs if r.run_id not in owners}  # last copy of a run wins
    await uow.runs.add_new(list(new.values()))
    workspaces = {r.workspace_id for r in runs}
    brands = await uow.brands.of_workspaces(workspaces)
    facts = await uow.facts.active_of(workspaces)
    jobs: list[Job] = []
    for item, run in zip(kept, runs, strict=True):
        # Keyed by consumer too: a backfill group replaying an event appends its own row.
        jobs += jobs_for_run(run, brands, trigger=trigger, source_key=f"{consumer}:{item.event_id}",
                             correlation_id=item.correlation_id, causation_id=str(item.event_id))
    outcomes = plan(jobs, brands, facts, heuristic)
    counts.update(await write_outcomes(uow, outcomes, heuristic.version, frozenset(new), brands))
    return counts, rejected, outcomes
