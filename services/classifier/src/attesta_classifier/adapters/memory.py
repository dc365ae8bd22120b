"""In-memory repositories that behave like the PostgreSQL ones (the fakes of the service
layer's unit tests; ``tests/test_stores.py`` runs one suite against both). Units of work that
share a ``ClassifierState`` are one database for tests that run them one after another: a
rollback puts back the state as the block found it."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_classifier.domain.review import sample_key
from attesta_classifier.service_layer.unit_of_work import (
    BuildDay,
    ClaimedPair, HistoryRow, JudgeReview, PairState, PendingDetail, PendingRow, QueueCounts,
    QueueEntry, QueueQuery, ReviewedLabel, RunQuery, StoredBrand, StoredFact, StoredRun, Tally)
from attesta_platform.unit_of_work import InMemoryUnitOfWork, MemoryState


@dataclass
class _Pending:
    row: PendingRow
    attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str | None = None
    claim_token: uuid.UUID | None = None
    judgment: dict[str, Any] | None = None
    parked_at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class ClassifierState(MemoryState):
    brands: dict[tuple[str, str], StoredBrand] = field(default_factory=dict)
    facts: dict[str, StoredFact] = field(default_factory=dict)
    runs: dict[str, StoredRun] = field(default_factory=dict)
    history: list[HistoryRow] = field(default_factory=list)
    states: dict[tuple[str, str], PairState] = field(default_factory=dict)
    pending: dict[tuple[str, str], _Pending] = field(default_factory=dict)
    refresh_locks: set[tuple[str, str]] = field(default_factory=set)
    reviews: list[JudgeReview] = field(default_factory=list)
    leaves: dict[str, int] = field(default_factory=dict)  # sha256 -> Merkle log leaf index


def _now() -> datetime:
    return datetime.now(UTC)


class InMemoryBrands:
    def __init__(self, state: ClassifierState, held: set[tuple[str, str]]) -> None:
        self.state, self.held = state, held

    async def add(self, brand: Brand) -> StoredBrand | None:
        key = (brand.workspace_id, brand.brand_id)
        if key in self.state.brands:
            return None
        now = _now()
        stored = StoredBrand(**vars(brand), created_at=now, updated_at=now)
        self.state.brands[key] = stored
        return stored

    async def get(self, workspace_id: str, brand_id: str, *,
                  for_update: bool = False) -> StoredBrand | None:
        return self.state.brands.get((workspace_id, brand_id))

    async def list(self, workspace_id: str) -> list[StoredBrand]:
        return sorted((b for (ws, _), b in self.state.brands.items() if ws == workspace_id),
                      key=lambda b: b.brand_id)

    async def update(self, workspace_id: str, brand_id: str,
                     changes: dict[str, Any]) -> StoredBrand:
        key = (workspace_id, brand_id)
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}
        self.state.brands[key] = replace(self.state.brands[key], **fields, updated_at=_now())
        return self.state.brands[key]

    async def existing(self, workspace_id: str, brand_ids: Sequence[str]) -> set[str]:
        return {b for b in brand_ids if (workspace_id, b) in self.state.brands}

    async def of_workspaces(self, workspace_ids: Iterable[str]) -> dict[tuple[str, str], Brand]:
        wanted = set(workspace_ids)
        return {k: b.brand() for k, b in self.state.brands.items() if k[0] in wanted}

    async def lock_refresh(self, workspace_id: str, brand_id: str) -> bool:
        key = (workspace_id, brand_id)
        if key in self.state.refresh_locks and key not in self.held:
            return False
        self.state.refresh_locks.add(key)
        self.held.add(key)
        return True


class InMemoryFacts:
    def __init__(self, state: ClassifierState) -> None:
        self.state = state

    async def active_of(self, workspace_ids: Iterable[str], brand_ids: Iterable[str] | None = None
                        ) -> dict[tuple[str, str], list[Fact]]:
        wanted_ws = set(workspace_ids)
        wanted_brands = None if brand_ids is None else set(brand_ids)
        out: dict[tuple[str, str], list[Fact]] = {}
        for f in sorted(self.state.facts.values(), key=lambda f: f.fact_id):
            if f.active and f.workspace_id in wanted_ws and (
                    wanted_brands is None or f.brand_id in wanted_brands):
                out.setdefault((f.workspace_id, f.brand_id), []).append(f)
        return out

    async def active(self, workspace_id: str, brand_id: str) -> list[StoredFact]:
        return sorted((f for f in self.state.facts.values() if f.active
                       and (f.workspace_id, f.brand_id) == (workspace_id, brand_id)),
                      key=lambda f: f.fact_id)

    async def get(self, fact_id: str) -> StoredFact | None:
        return self.state.facts.get(fact_id)

    async def superseded(self, workspace_id: str, brand_id: str) -> list[StoredFact]:
        gone = [f for f in self.state.facts.values() if not f.active
                and (f.workspace_id, f.brand_id) == (workspace_id, brand_id)]
        gone.sort(key=lambda f: f.fact_id)
        return sorted(gone, key=lambda f: f.superseded_at or _now(), reverse=True)

    async def activate(self, workspace_id: str, facts: Sequence[Fact], refresh_id: str) -> None:
        for f in facts:
            if (workspace_id, f.brand_id) not in self.state.brands:
                raise asyncpg.ForeignKeyViolationError("ground_truth_facts: no such brand")
            old = self.state.facts.get(f.fact_id)
            if old is None:
                self.state.facts[f.fact_id] = StoredFact(**vars(f), workspace_id=workspace_id,
                                                         created_at=_now())
            elif not old.active:
                self.state.facts[f.fact_id] = replace(old, active=True, superseded_at=None)

    async def supersede(self, fact_ids: Sequence[str], at: datetime, refresh_id: str) -> None:
        for fid in fact_ids:
            if fid in self.state.facts:
                self.state.facts[fid] = replace(self.state.facts[fid], active=False,
                                                superseded_at=at)


class InMemoryRuns:
    def __init__(self, state: ClassifierState) -> None:
        self.state = state

    async def add(self, runs: Sequence[Run]) -> None:
        for r in runs:
            if r.run_id not in self.state.runs:
                self.state.runs[r.run_id] = StoredRun(**vars(r), recorded_at=_now())

    async def add_new(self, runs: Sequence[Run]) -> None:
        if any(r.run_id in self.state.runs for r in runs):
            raise asyncpg.UniqueViolationError("runs_pkey")  # what the COPY raises
        await self.add(runs)

    async def owners(self, run_ids: Sequence[str]) -> dict[str, str]:
        return {i: self.state.runs[i].workspace_id for i in run_ids if i in self.state.runs}

    async def get(self, workspace_id: str, run_id: str) -> StoredRun | None:
        run = self.state.runs.get(run_id)
        return run if run is not None and run.workspace_id == workspace_id else None

    async def get_many(self, run_ids: Iterable[str]) -> dict[str, Run]:
        return {i: self.state.runs[i] for i in set(run_ids) if i in self.state.runs}

    def _matches(self, run: StoredRun, q: RunQuery) -> bool:
        at = run.recorded_at
        assert at is not None
        if (q.engine and run.engine != q.engine) or (q.source and run.source != q.source):
            return False
        if q.collection_method and run.collection_method != q.collection_method:
            return False
        if (q.from_ and at < q.from_) or (q.to and at >= q.to):
            return False
        if q.before and (at, run.run_id) >= q.before:
            return False
        c = run.prompt_context
        if q.tag and (c is None or q.tag not in (c.topic, c.persona, c.funnel)):
            return False
        if q.brand_id or q.status or q.citation_class or q.decided_by:
            return any(
                s.run_id == run.run_id and (not q.brand_id or s.brand_id == q.brand_id)
                and (not q.status or s.status == q.status)
                and (not q.citation_class or (s.citation_class == q.citation_class
                                              and s.status == "classified"))
                and (not q.decided_by or (s.decided_by == q.decided_by
                                          and s.status == "classified"))
                for s in self.state.states.values())
        return True

    async def page(self, workspace_id: str, query: RunQuery, limit: int) -> list[StoredRun]:
        runs = [r for r in self.state.runs.values()
                if r.workspace_id == workspace_id and self._matches(r, query)]
        runs.sort(key=lambda r: (r.recorded_at, r.run_id), reverse=True)
        return [replace(r, log_index=self.state.leaves.get(r.answer_sha256)) for r in runs[:limit]]

    async def add_leaves(self, leaves: Sequence[tuple[str, int]]) -> int:
        added = 0
        for sha, index in sorted(leaves):
            if sha not in self.state.leaves:
                self.state.leaves[sha] = index
                added += 1
        return added

    async def of_brand(self, workspace_id: str, brand_id: str, after: str, limit: int) -> list[Run]:
        runs = [r for r in self.state.runs.values()
                if r.workspace_id == workspace_id and r.run_id > after
                and (brand_id in r.brand_ids or not r.brand_ids
                     or (r.run_id, brand_id) in self.state.states)]
        return sorted(runs, key=lambda r: r.run_id)[:limit]

    async def builds(self, workspace_id: str, engine: str | None, from_: datetime | None,
                     to: datetime | None) -> list[BuildDay]:
        counts: Counter[tuple[str, Any, str | None, str | None]] = Counter()
        for r in self.state.runs.values():
            at = r.answered_at or r.recorded_at
            assert at is not None
            b = r.model_build
            if (r.workspace_id != workspace_id or b is None or (engine and r.engine != engine)
                    or (from_ and at < from_) or (to and at >= to)):
                continue
            counts[(r.engine, at.astimezone(UTC).date(), b.model, b.system_fingerprint)] += 1
        return [BuildDay(*k, n=n) for k, n in sorted(counts.items(), key=lambda kv: (
            kv[0][0], kv[0][1], str(kv[0][2]), str(kv[0][3])))]


_TRUNCATE = {
    "day": lambda t: t.replace(hour=0, minute=0, second=0, microsecond=0),
    "week": lambda t: (t - timedelta(days=t.weekday())).replace(hour=0, minute=0, second=0,
                                                                microsecond=0),
    "month": lambda t: t.replace(day=1, hour=0, minute=0, second=0, microsecond=0),
}


class InMemoryDecisions:
    def __init__(self, state: ClassifierState) -> None:
        self.state = state

    async def append(self, rows: Sequence[HistoryRow], new_runs: frozenset[str] = frozenset()) -> None:
        ids = {r.classification_id for r in self.state.history}
        if any(r.classification_id in ids for r in rows):
            raise asyncpg.UniqueViolationError("classification_history_pkey")
        for r in rows:
            self.state.history.append(r)
            self.state.states[(r.run_id, r.brand_id)] = PairState(
                r.run_id, r.brand_id, "classified", r.reason, r.classified_at,
                r.classification_id, r.citation_class, r.decided_by, r.judge_model,
                r.ground_truth_hash, r.position, r.named_order)
            self.state.pending.pop((r.run_id, r.brand_id), None)

    async def refuse(self, pairs: Sequence[tuple[str, str, str, str]], at: datetime) -> None:
        for run_id, brand_id, _, reason in pairs:
            self.state.states[(run_id, brand_id)] = PairState(run_id, brand_id, "refused", reason, at)
            self.state.pending.pop((run_id, brand_id), None)

    async def park(self, rows: Sequence[PendingRow], at: datetime) -> None:
        for r in rows:
            key = (r.run_id, r.brand_id)
            old = self.state.states.get(key)
            if old is None or old.status != "classified":
                self.state.states[key] = PairState(r.run_id, r.brand_id, "pending",
                                                   "waiting for the judge", at)
            old_pending = self.state.pending.get(key)
            self.state.pending[key] = _Pending(r, next_attempt_at=time.time(), parked_at=(
                old_pending.parked_at if old_pending else at))

    async def states(self, run_ids: Sequence[str]) -> list[PairState]:
        wanted = set(run_ids)
        return [s for k, s in sorted(self.state.states.items()) if k[0] in wanted]

    async def history(self, run_id: str, as_of: datetime | None) -> list[HistoryRow]:
        rows = [r for r in self.state.history
                if r.run_id == run_id and (as_of is None or r.classified_at <= as_of)]
        return sorted(rows, key=lambda r: r.classified_at)  # stable: append order breaks ties

    async def claim_due(self, token: uuid.UUID, limit: int, lease_s: float) -> list[ClaimedPair]:
        now = time.time()
        due = sorted((p for p in self.state.pending.values() if p.next_attempt_at <= now),
                     key=lambda p: p.next_attempt_at)[:limit]
        out = []
        for p in due:
            p.claim_token, p.attempts, p.next_attempt_at = token, p.attempts + 1, now + lease_s
            r = p.row
            out.append(ClaimedPair(r.run_id, r.brand_id, r.workspace_id, r.trigger,
                                   r.trigger_reason, r.actor, p.attempts))
        return out

    async def release_claim(self, run_id: str, brand_id: str, token: uuid.UUID) -> bool:
        p = self.state.pending.get((run_id, brand_id))
        if p is None or p.claim_token != token:
            return False
        del self.state.pending[(run_id, brand_id)]
        return True

    async def defer(self, run_id: str, brand_id: str, token: uuid.UUID, delay_s: float,
                    error: str, status_reason: str | None = None,
                    judgment: dict[str, Any] | None = None) -> None:
        key = (run_id, brand_id)
        s = self.state.states.get(key)
        if status_reason is not None and s is not None and s.status == "pending":
            self.state.states[key] = replace(s, reason=status_reason[:2000])
        p = self.state.pending.get(key)
        if p is not None and p.claim_token == token:
            p.next_attempt_at, p.last_error, p.claim_token = time.time() + delay_s, error[:2000], None
            if judgment is not None:
                p.judgment = judgment

    async def tallies(self, workspace_id: str, period: str, engine: str | None,
                      from_: datetime | None, to: datetime | None, *,
                      include_chats: bool = False) -> list[Tally]:
        counts: dict[tuple[Any, ...], int] = {}
        for (run_id, brand_id), s in self.state.states.items():
            run = self.state.runs[run_id]
            at = (run.answered_at or run.recorded_at)
            assert at is not None
            if run.workspace_id != workspace_id or (engine is not None and run.engine != engine):
                continue
            if (from_ is not None and at < from_) or (to is not None and at >= to):
                continue
            if run.source == "assistant" and not include_chats:
                continue
            context = run.prompt_context
            cited = tuple(sorted({f"{x.host or x.domain} {x.domain}" for x in run.sources}))
            key = (brand_id, run.engine, _TRUNCATE[period](at.astimezone(UTC)), s.status,
                   s.citation_class, run.prompt, context and context.topic,
                   context and context.persona, context and context.funnel, cited,
                   s.position if s.status == "classified" else None,
                   s.status == "classified" and s.named_order is not None, run.source,
                   run.collection_method)
            counts[key] = counts.get(key, 0) + 1
        return [Tally(*k[:10], n=n, position=k[10], positioned=k[11], source=k[12],
                      collection_method=k[13]) for k, n in counts.items()]


class InMemoryReviews:
    def __init__(self, state: ClassifierState) -> None:
        self.state = state

    def _entries(self, workspace_id: str, brand_id: str | None,
                 sample_below: int) -> list[tuple[int, QueueEntry]]:
        reviewed = {r.classification_id for r in self.state.reviews}
        out = []
        for (run_id, b), s in self.state.states.items():
            run = self.state.runs[run_id]
            if run.workspace_id != workspace_id or (brand_id is not None and b != brand_id):
                continue
            assert s.updated_at is not None
            if s.status == "pending":
                out.append((0, QueueEntry(run_id, b, "pending", s.updated_at, run.engine, s.reason)))
            elif (s.status == "classified" and s.decided_by == "judge"
                  and s.classification_id not in reviewed and sample_key(run_id, b) < sample_below):
                out.append((1, QueueEntry(run_id, b, "sample", s.updated_at, run.engine, None,
                                          s.classification_id)))
        return sorted(out, key=lambda e: (e[0], e[1].since, e[1].run_id, e[1].brand_id))

    async def queue(self, workspace_id: str, query: QueueQuery, sample_below: int,
                    limit: int) -> list[QueueEntry]:
        entries = [(rank, e) for rank, e in self._entries(workspace_id, query.brand_id, sample_below)
                   if query.kind in (None, e.kind)
                   and (query.after is None
                        or (rank, e.since, e.run_id, e.brand_id) > query.after)]
        return [e for _, e in entries[:limit]]

    async def counts(self, workspace_id: str, brand_id: str | None,
                     sample_below: int) -> QueueCounts:
        entries = [e for _, e in self._entries(workspace_id, brand_id, sample_below)]
        pending = [e.since for e in entries if e.kind == "pending"]
        return QueueCounts(len(pending), min(pending, default=None),
                           sum(e.kind == "sample" for e in entries))

    async def pending_detail(self, run_id: str, brand_id: str) -> PendingDetail | None:
        p = self.state.pending.get((run_id, brand_id))
        if p is None:
            return None
        return PendingDetail(p.attempts, p.last_error, p.judgment, p.parked_at)

    async def lock_pair(self, workspace_id: str, run_id: str, brand_id: str) -> PairState | None:
        run = self.state.runs.get(run_id)
        if run is None or run.workspace_id != workspace_id:
            return None
        return self.state.states.get((run_id, brand_id))

    async def add(self, review: JudgeReview) -> bool:
        if any(r.review_id == review.review_id or r.classification_id == review.classification_id
               for r in self.state.reviews):
            return False
        self.state.reviews.append(review)
        return True

    async def get(self, review_id: uuid.UUID) -> JudgeReview | None:
        return next((r for r in self.state.reviews if r.review_id == review_id), None)

    async def of_label(self, classification_id: uuid.UUID) -> JudgeReview | None:
        return next((r for r in self.state.reviews if r.classification_id == classification_id),
                    None)

    async def reviewed(self, workspace_id: str, judge_model: str | None) -> list[ReviewedLabel]:
        labels = {h.classification_id: h for h in self.state.history}
        out = []
        for r in self.state.reviews:
            h = labels[r.classification_id]
            if r.workspace_id == workspace_id and judge_model in (None, h.judge_model):
                out.append(ReviewedLabel(h.citation_class, r.human_class, h.judge_model))
        return out


class InMemoryClassifierUnitOfWork(InMemoryUnitOfWork):
    state: ClassifierState

    def __init__(self, state: ClassifierState | None = None) -> None:
        self._held: set[tuple[str, str]] = set()
        super().__init__(state or ClassifierState())

    def bind(self) -> None:
        self.brands = InMemoryBrands(self.state, self._held)
        self.facts = InMemoryFacts(self.state)
        self.runs = InMemoryRuns(self.state)
        self.decisions = InMemoryDecisions(self.state)
        self.reviews = InMemoryReviews(self.state)

    async def __aexit__(self, *exc_info: Any) -> None:
        await super().__aexit__(*exc_info)
        self.state.refresh_locks -= self._held  # locks end with the unit of work
        self._held.clear()
