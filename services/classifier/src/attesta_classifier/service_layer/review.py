"""The review queue (issue #28): pairs the judge did not decide, which a person decides, and a
blind sample of the pairs it did decide, which a person labels to measure the judge.

- A **pending** pair's label from a person is a decision like any other: appended to the
  history with ``decided_by = human``, the reviewer (the API key's name) and their note, made
  the pair's current class, staged as ``classification.recorded.v1`` and counted on /metrics,
  all through ``pipeline.write_outcomes`` in one transaction.
- A **sample** pair keeps the judge's label; the person's blind label is stored apart
  (``judge_reviews``) and only feeds the published agreement (docs/review.md says why).

Both record the ground-truth hash the person was shown and refuse (409) when the facts, the
pair or the judge's label changed since the item was read. With an Idempotency-Key the ids are
derived from it, so a retry returns what the first request recorded.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import orjson

from attesta_classifier.domain.commands import (
    DecideReview, GetJudgeAgreement, GetReviewItem, ListReviewQueue)
from attesta_classifier.domain.model import Decision, ground_truth_hash
from attesta_classifier.domain.review import (
    KIND_RANK, Agreement, JudgeNote, agreement, answer_segments, in_sample, judge_note,
    sample_bound)
from attesta_classifier.service_layer.errors import (
    Conflict, IdempotencyKeyReused, Invalid, NotFound)
from attesta_classifier.service_layer.pipeline import (
    Classified, Heuristic, Job, count_outcomes, write_outcomes)
from attesta_classifier.service_layer.unit_of_work import (
    HistoryRow, JudgeReview, PairState, QueueCounts, QueueEntry, QueueQuery, StoredBrand,
    StoredFact, StoredRun, UnitOfWork)
from attesta_contracts import derived_id, utc_now
from attesta_contracts.classification import CitationClass

MAX_REASON = 1000


@dataclass(frozen=True)
class QueuePage:
    entries: list[QueueEntry]
    brand_names: dict[str, str]
    counts: QueueCounts
    next_cursor: str | None
    now: datetime
    sample_share: float


@dataclass(frozen=True)
class ReviewItem:
    kind: str
    state: PairState
    run: StoredRun
    brand: StoredBrand
    facts: list[StoredFact]
    ground_truth_hash: str
    segments: list[tuple[str, str | None]]
    judge: JudgeNote | None  # None on a sample item: the person labels it blind


@dataclass(frozen=True)
class Decided:
    kind: str
    citation_class: str
    reviewer: str
    note: str | None
    reviewed_at: datetime
    label: HistoryRow | None = None  # pending: the history row appended
    review: JudgeReview | None = None  # sample: the blind review stored


@dataclass(frozen=True)
class AgreementReport:
    agreement: Agreement
    sample_share: float


# -- the queue --------------------------------------------------------------------------------
def _cursor(entry: QueueEntry) -> str:
    raw = orjson.dumps([KIND_RANK[entry.kind], entry.since.isoformat(), entry.run_id,
                        entry.brand_id])
    return base64.urlsafe_b64encode(raw).decode()


def _after(cursor: str) -> tuple[int, datetime, str, str]:
    try:
        rank, since, run_id, brand_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
        return int(rank), datetime.fromisoformat(since), str(run_id), str(brand_id)
    except Exception:  # noqa: BLE001 - any garbage is the caller's error
        raise Invalid("cursor is not one this API returned") from None


async def queue(query: ListReviewQueue, uow: UnitOfWork, review_sample_share: float) -> QueuePage:
    ws, limit, cursor = query.workspace_id, query.limit, query.cursor
    q = QueueQuery(query.brand_id, query.kind, _after(cursor) if cursor else None)
    bound = sample_bound(review_sample_share)
    async with uow.read():
        entries = await uow.reviews.queue(ws, q, bound, limit + 1)
        counts = await uow.reviews.counts(ws, query.brand_id, bound)
        names = {b.brand_id: b.name for b in await uow.brands.list(ws)}
    page = entries[:limit]
    nxt = _cursor(page[-1]) if len(entries) > limit else None
    return QueuePage(page, names, counts, nxt, utc_now(), review_sample_share)


def _kind(state: PairState, share: float, reviewed: bool) -> str | None:
    """Why the pair is in the queue now, or None when it is not."""
    if state.status == "pending":
        return "pending"
    if (state.status == "classified" and state.decided_by == "judge" and not reviewed
            and in_sample(state.run_id, state.brand_id, share)):
        return "sample"
    return None


def _not_in_queue(state: PairState) -> str:
    if state.status == "classified":
        return (f"the pair is not in the review queue: it is {state.citation_class}, decided by "
                f"{state.decided_by}")
    return f"the pair is not in the review queue: it is {state.status}"


async def _load(uow: UnitOfWork, workspace_id: str, state: PairState
                ) -> tuple[StoredRun, StoredBrand, list[StoredFact]]:
    run = await uow.runs.get(workspace_id, state.run_id)
    brand = await uow.brands.get(workspace_id, state.brand_id)
    if run is None or brand is None:
        raise NotFound(f"no pair ({state.run_id!r}, {state.brand_id!r}) in this workspace")
    return run, brand, await uow.facts.active(workspace_id, state.brand_id)


async def _reviewed(uow: UnitOfWork, state: PairState) -> bool:
    cid = state.classification_id
    return cid is not None and await uow.reviews.of_label(cid) is not None


async def item(query: GetReviewItem, uow: UnitOfWork, review_sample_share: float) -> ReviewItem:
    workspace_id, run_id, brand_id = query.workspace_id, query.run_id, query.brand_id
    async with uow.read():
        states = [s for s in await uow.decisions.states([run_id]) if s.brand_id == brand_id]
        if not states:
            raise NotFound(f"no pair ({run_id!r}, {brand_id!r}) in this workspace")
        state = states[0]
        run, brand, facts = await _load(uow, workspace_id, state)  # 404 for another workspace
        kind = _kind(state, review_sample_share, await _reviewed(uow, state))
        if kind is None:
            raise NotFound(_not_in_queue(state))
        detail = await uow.reviews.pending_detail(run_id, brand_id) if kind == "pending" else None
    judge = None
    if kind == "pending":
        judge = judge_note(state.reason, detail.attempts if detail else 0,
                           detail.last_error if detail else None,
                           detail.judgment if detail else None)
    return ReviewItem(kind, state, run, brand, facts, ground_truth_hash(facts),
                      answer_segments(run.answer, brand.names, brand.domains), judge)


# -- a person's decision ----------------------------------------------------------------------
async def decide(body: DecideReview, uow: UnitOfWork, review_sample_share: float,
                 heuristic: Heuristic) -> Decided:
    workspace_id, run_id, brand_id, reviewer, idempotency_key = (
        body.workspace_id, body.run_id, body.brand_id, body.reviewer, body.idempotency_key)
    source = f"review:{workspace_id}:{idempotency_key}" if idempotency_key else \
        f"review:{uuid.uuid4()}"
    async with uow:
        state = await uow.reviews.lock_pair(workspace_id, run_id, brand_id)
        if state is None:
            raise NotFound(f"no pair ({run_id!r}, {brand_id!r}) in this workspace")
        replay = await _replay(uow, source, state, body) if idempotency_key else None
        if replay is not None:
            return replay
        run, _, facts = await _load(uow, workspace_id, state)
        kind = _kind(state, review_sample_share, await _reviewed(uow, state))
        if kind is None:
            raise Conflict(_not_in_queue(state))
        gt_hash = ground_truth_hash(facts)
        if not facts:
            raise Conflict("the brand has no active ground truth: no label is recorded without "
                           "it, by a person either")
        if body.ground_truth_hash != gt_hash:
            raise Conflict("the brand's facts changed since this item was read: read it again "
                           "and decide against the current facts")
        if kind == "pending":
            job = Job(run, brand_id, "review", source, correlation_id=run.run_id,
                      actor=reviewer.key_id)
            reason = "decided by a person in the review queue; the judge had left it pending" + (
                f" ({state.reason})" if state.reason else "")
            decision = Decision(CitationClass(body.citation_class), reason[:MAX_REASON], "human",
                                reviewer=reviewer.name, note=body.note)
            outcome = Classified(job, decision, gt_hash)
            await write_outcomes(uow, [outcome], heuristic.version)
            label = await _label(uow, source, state)
            await uow.commit()
            count_outcomes([outcome])
            assert label is not None  # written just now, in this transaction
            return Decided(kind, body.citation_class, reviewer.name, body.note,
                           label.classified_at, label=label)
        review = await _blind_review(uow, source, state, body, gt_hash)
        await uow.commit()
        return Decided(kind, body.citation_class, reviewer.name, body.note, review.reviewed_at,
                       review=review)


async def _blind_review(uow: UnitOfWork, source: str, state: PairState, body: DecideReview,
                        gt_hash: str) -> JudgeReview:
    if body.classification_id != str(state.classification_id):
        raise Conflict("the judge's label of this pair changed since the item was read: read it "
                       "again" if body.classification_id else
                       "a sample item's decision needs the item's classification_id")
    assert state.classification_id is not None
    review = JudgeReview(
        review_id=derived_id("review", source, state.run_id, state.brand_id),
        workspace_id=body.workspace_id, run_id=state.run_id, brand_id=state.brand_id,
        classification_id=state.classification_id, human_class=body.citation_class,
        ground_truth_hash=gt_hash, reviewer=body.reviewer.name, actor=body.reviewer.key_id,
        note=body.note, reviewed_at=utc_now())
    if not await uow.reviews.add(review):
        raise Conflict("this judge label already has a blind review")
    return review


async def _label(uow: UnitOfWork, source: str, state: PairState) -> HistoryRow | None:
    cid = derived_id("classification", source, state.run_id, state.brand_id, "review")
    return next((r for r in await uow.decisions.history(state.run_id, None)
                 if r.classification_id == cid), None)


async def _replay(uow: UnitOfWork, source: str, state: PairState,
                  body: DecideReview) -> Decided | None:
    """What a first request with this Idempotency-Key recorded, or None. The same key with
    another decision is a 422."""
    label = await _label(uow, source, state)
    review = await uow.reviews.get(derived_id("review", source, state.run_id, state.brand_id))
    if label is not None:
        recorded = (label.citation_class, label.note, label.ground_truth_hash)
    elif review is not None:
        recorded = (review.human_class, review.note, review.ground_truth_hash)
    else:
        return None
    if recorded != (body.citation_class, body.note, body.ground_truth_hash):
        raise IdempotencyKeyReused("this Idempotency-Key already recorded another decision; use "
                                   "a new key for a new decision")
    if label is not None:
        return Decided("pending", label.citation_class, label.reviewer or body.reviewer.name,
                       label.note, label.classified_at, label=label)
    assert review is not None
    return Decided("sample", review.human_class, review.reviewer, review.note,
                   review.reviewed_at, review=review)


# -- agreement --------------------------------------------------------------------------------
async def judge_agreement(query: GetJudgeAgreement, uow: UnitOfWork,
                          review_sample_share: float) -> AgreementReport:
    async with uow.read():
        reviewed = await uow.reviews.reviewed(query.workspace_id, query.judge_model)
    pairs: Sequence[tuple[str, str]] = [(r.judge_class, r.human_class) for r in reviewed]
    # In a thread: the first call imports scikit-learn (about a second), off the event loop.
    return AgreementReport(await asyncio.to_thread(agreement, pairs), review_sample_share)
