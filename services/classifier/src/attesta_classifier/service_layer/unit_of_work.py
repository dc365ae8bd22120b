"""The classifier's unit of work and repositories (the ports its service layer writes through).

``adapters/postgres.py`` implements them on PostgreSQL, ``adapters/memory.py`` in memory (the
fakes of the service layer's unit tests); ``tests/test_stores.py`` runs one suite against both.
Repositories return the domain's objects and the read models below, never database rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import date, datetime
from types import TracebackType
from typing import Any, Protocol

from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_platform.unit_of_work import Inbox, Outbox


# -- read models ------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredBrand(Brand):
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def brand(self) -> Brand:
        """The domain object alone (what the heuristic and judges see)."""
        return Brand(self.brand_id, self.workspace_id, self.name, self.aliases, self.domains,
                     self.competitors, self.sources)


@dataclass(frozen=True)
class StoredFact(Fact):
    workspace_id: str = ""
    active: bool = True
    superseded_at: datetime | None = None
    created_at: datetime | None = None  # when it was first recorded


@dataclass(frozen=True)
class StoredRun(Run):
    recorded_at: datetime | None = None
    # The Merkle log's leaf index of the answer's bytes (evidence.recorded.v1); None until the
    # evidence service's event for them has been seen.
    log_index: int | None = None


@dataclass(frozen=True)
class HistoryRow:
    """One appended decision of ``classification_history``."""

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
    reviewer: str | None = None  # decided_by "human": the API key's name
    note: str | None = None
    # Where the answer names the brand against its competitors (domain/position.py): the brand
    # ids in the order first named, and the brand's place (None: not named). ``named_order``
    # None: not computed (rows from before migration 0006).
    position: int | None = None
    named_order: list[str] | None = None


HISTORY_FIELDS = tuple(HistoryRow.__dataclass_fields__)


@dataclass(frozen=True)
class PairState:
    """The current state of a (run, brand): classified, refused or pending."""

    run_id: str
    brand_id: str
    status: str
    reason: str | None
    updated_at: datetime | None
    classification_id: uuid.UUID | None = None
    citation_class: str | None = None
    decided_by: str | None = None
    judge_model: str | None = None
    ground_truth_hash: str | None = None
    position: int | None = None  # of the current class's history row
    named_order: list[str] | None = None


@dataclass(frozen=True)
class PendingRow:
    run_id: str
    brand_id: str
    workspace_id: str
    trigger: str
    trigger_reason: str | None
    actor: str | None


@dataclass(frozen=True)
class ClaimedPair(PendingRow):
    """A parked pair the judge worker claimed (``attempts`` counts this claim)."""

    attempts: int = 1


@dataclass(frozen=True)
class RunQuery:
    """Filters of a page of runs, newest first; ``before`` is the (recorded_at, run_id) of the
    last run of the previous page."""

    engine: str | None = None
    brand_id: str | None = None
    status: str | None = None
    citation_class: str | None = None
    source: str | None = None
    from_: datetime | None = None
    to: datetime | None = None
    before: tuple[datetime, str] | None = None
    decided_by: str | None = None  # of a brand's current class
    tag: str | None = None  # any of the collector prompt's tags (topic, persona, funnel)
    collection_method: str | None = None


@dataclass(frozen=True)
class Tally:
    """How many (run, brand) pairs share a brand, engine, period, state, prompt, prompt tags
    and cited places (each distinct ``"host domain"`` the run cites, once)."""

    brand_id: str
    engine: str
    bucket: datetime
    status: str
    citation_class: str | None
    prompt: str
    topic: str | None
    persona: str | None
    funnel: str | None
    cited: tuple[str, ...]
    n: int
    # Additive (issue #25): the current class's position (None: not named) and whether one was
    # computed (``named_order`` stored), the run's source ("assistant": an ad-hoc chat), and how
    # it was collected (None: not recorded).
    position: int | None = None
    positioned: bool = False
    source: str = "external"
    collection_method: str | None = None


@dataclass(frozen=True)
class BuildDay:
    """How many runs of an engine answered on a UTC day with one reported model build."""

    engine: str
    day: date
    model: str | None
    system_fingerprint: str | None
    n: int


@dataclass(frozen=True)
class QueueQuery:
    """Filters of a page of the review queue, in its order: pending pairs first (oldest first),
    then the blind sample; ``after`` is the (kind rank, since, run id, brand id) of the last
    entry of the previous page."""

    brand_id: str | None = None
    kind: str | None = None  # "pending" or "sample"; None: both
    after: tuple[int, datetime, str, str] | None = None


@dataclass(frozen=True)
class QueueEntry:
    run_id: str
    brand_id: str
    kind: str  # "pending" | "sample"
    since: datetime  # pending since, or when the judge decided (sample)
    engine: str
    reason: str | None = None  # why it is pending
    classification_id: uuid.UUID | None = None  # sample: the judge's label to review


@dataclass(frozen=True)
class QueueCounts:
    pending: int
    oldest_pending_at: datetime | None
    sample_open: int


@dataclass(frozen=True)
class PendingDetail:
    """What the judge worker left on a parked pair (``pending_judgments``)."""

    attempts: int
    last_error: str | None
    judgment: dict[str, Any] | None  # the judge's reason and per-claim verdicts, when stored
    parked_at: datetime


@dataclass(frozen=True)
class JudgeReview:
    """A person's blind label of a judge's label (the agreement sample); append-only."""

    review_id: uuid.UUID
    workspace_id: str
    run_id: str
    brand_id: str
    classification_id: uuid.UUID
    human_class: str
    ground_truth_hash: str
    reviewer: str
    actor: str | None
    note: str | None
    reviewed_at: datetime


@dataclass(frozen=True)
class ReviewedLabel:
    """A blind review next to the judge's label it reviewed (what agreement is computed from)."""

    judge_class: str
    human_class: str
    judge_model: str | None


# -- repositories -----------------------------------------------------------------------------
class BrandRepository(Protocol):
    async def add(self, brand: Brand) -> StoredBrand | None:
        """None when the workspace already has a brand with this id."""

    async def get(self, workspace_id: str, brand_id: str, *,
                  for_update: bool = False) -> StoredBrand | None: ...

    async def list(self, workspace_id: str) -> list[StoredBrand]: ...

    async def update(self, workspace_id: str, brand_id: str,
                     changes: dict[str, Any]) -> StoredBrand: ...

    async def existing(self, workspace_id: str, brand_ids: Sequence[str]) -> set[str]: ...

    async def of_workspaces(self, workspace_ids: Iterable[str]) -> dict[tuple[str, str], Brand]: ...

    async def lock_refresh(self, workspace_id: str, brand_id: str) -> bool:
        """Take the brand's refresh lock until the unit of work ends; False if another holds it."""


class FactRepository(Protocol):
    async def active_of(self, workspace_ids: Iterable[str], brand_ids: Iterable[str] | None = None
                        ) -> dict[tuple[str, str], list[Fact]]: ...

    async def active(self, workspace_id: str, brand_id: str) -> list[StoredFact]: ...

    async def get(self, fact_id: str) -> StoredFact | None: ...

    async def superseded(self, workspace_id: str, brand_id: str) -> list[StoredFact]:
        """The brand's facts no longer active, most recently superseded first (nothing is ever
        deleted: every fact a refresh replaced and did not re-activate since)."""

    async def activate(self, workspace_id: str, facts: Sequence[Fact], refresh_id: str) -> None:
        """Insert the facts, or re-activate the superseded ones with the same id."""

    async def supersede(self, fact_ids: Sequence[str], at: datetime, refresh_id: str) -> None: ...


class RunRepository(Protocol):
    async def add(self, runs: Sequence[Run]) -> None:
        """Store runs not stored yet (a run is immutable: a second copy changes nothing)."""

    async def add_new(self, runs: Sequence[Run]) -> None:
        """Store runs the caller checked are not stored yet (the fast path; a concurrent writer
        of the same run makes it fail with a unique violation)."""

    async def owners(self, run_ids: Sequence[str]) -> dict[str, str]:
        """run id -> workspace id of the stored ones."""

    async def get(self, workspace_id: str, run_id: str) -> StoredRun | None: ...

    async def get_many(self, run_ids: Iterable[str]) -> dict[str, Run]: ...

    async def page(self, workspace_id: str, query: RunQuery, limit: int) -> list[StoredRun]: ...

    async def of_brand(self, workspace_id: str, brand_id: str, after: str, limit: int) -> list[Run]:
        """Runs about the brand (naming it, naming no brand, or with a state for it), by id."""

    async def builds(self, workspace_id: str, engine: str | None, from_: datetime | None,
                     to: datetime | None) -> list[BuildDay]:
        """Runs per engine, UTC day of the answer and reported model build (runs that report
        none left out), in the window."""

    async def add_leaves(self, leaves: Sequence[tuple[str, int]]) -> int:
        """Store (sha256, log_index) pairs; a SHA-256 that has an index keeps it. Returns how
        many were new. ``page`` returns each run with its answer's index."""


class DecisionRepository(Protocol):
    async def append(self, rows: Sequence[HistoryRow], new_runs: frozenset[str] = frozenset()) -> None:
        """Append history rows; each becomes the current class of its pair and settles a
        pending judgment of it. Pairs of ``new_runs`` have no state yet (the fast path)."""

    async def refuse(self, pairs: Sequence[tuple[str, str, str, str]], at: datetime) -> None:
        """(run_id, brand_id, workspace_id, reason): explicit refused state."""

    async def park(self, rows: Sequence[PendingRow], at: datetime) -> None:
        """Park pairs for the judge worker; a pair that has a class keeps it meanwhile."""

    async def states(self, run_ids: Sequence[str]) -> list[PairState]: ...

    async def history(self, run_id: str, as_of: datetime | None) -> list[HistoryRow]:
        """Every decision of the run up to ``as_of``, oldest first."""

    async def claim_due(self, token: uuid.UUID, limit: int, lease_s: float) -> list[ClaimedPair]: ...

    async def release_claim(self, run_id: str, brand_id: str, token: uuid.UUID) -> bool:
        """Delete the parked pair if ``token`` still holds it."""

    async def defer(self, run_id: str, brand_id: str, token: uuid.UUID, delay_s: float,
                    error: str, status_reason: str | None = None,
                    judgment: dict[str, Any] | None = None) -> None:
        """Leave the claimed pair pending for ``delay_s``; ``judgment`` (the judge's reason and
        per-claim verdicts of an abstention, JSON) is kept for the review queue."""

    async def tallies(self, workspace_id: str, period: str, engine: str | None,
                      from_: datetime | None, to: datetime | None, *,
                      include_chats: bool = False) -> list[Tally]:
        """Pairs counted by brand, engine, period of the answer (UTC), state, prompt, prompt
        tags, cited places, position, source and collection method. Runs of ad-hoc chats with
        our assistant (source ``assistant``) are left out unless ``include_chats``: a brand's
        headline figures are over its prompts (issue #25 item 6), and every reader of the
        figures (the metrics, the alerts) gets that by default."""


class ReviewRepository(Protocol):
    """The review queue (pending pairs and the blind sample of judge labels) and blind reviews.
    ``sample_below``: a judge-decided pair is in the sample when ``domain.review.sample_key`` of
    it is below this (``domain.review.sample_bound`` of the configured share)."""

    async def queue(self, workspace_id: str, query: QueueQuery, sample_below: int,
                    limit: int) -> list[QueueEntry]: ...

    async def counts(self, workspace_id: str, brand_id: str | None,
                     sample_below: int) -> QueueCounts: ...

    async def pending_detail(self, run_id: str, brand_id: str) -> PendingDetail | None: ...

    async def lock_pair(self, workspace_id: str, run_id: str, brand_id: str) -> PairState | None:
        """The pair's state, locked until the unit of work ends (the parked judgment first, in
        the judge worker's order, so the two never deadlock)."""

    async def add(self, review: JudgeReview) -> bool:
        """False when that judge label already has a review (one per label)."""

    async def get(self, review_id: uuid.UUID) -> JudgeReview | None: ...

    async def of_label(self, classification_id: uuid.UUID) -> JudgeReview | None: ...

    async def reviewed(self, workspace_id: str, judge_model: str | None) -> list[ReviewedLabel]:
        """Every blind review of the workspace with the judge's label it reviewed."""


class UnitOfWork(Protocol):
    brands: BrandRepository
    facts: FactRepository
    runs: RunRepository
    decisions: DecisionRepository
    reviews: ReviewRepository
    outbox: Outbox
    inbox: Inbox

    async def __aenter__(self) -> UnitOfWork: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def commit(self) -> None: ...

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A block that only reads (no transaction)."""


# -- alerts (issue #25) -----------------------------------------------------------------------
@dataclass(frozen=True)
class StoredRule:
    """An alert rule of a workspace (``segment``: engine, tag, branded; absent keys: any)."""

    rule_id: uuid.UUID
    workspace_id: str
    brand_id: str
    metric: str
    name: str | None
    segment: dict[str, Any]
    direction: str
    min_n: int
    min_prompts: int
    alpha: float
    muted: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class StoredChannel:
    channel_id: uuid.UUID
    workspace_id: str
    kind: str  # webhook | slack | email
    target: str
    name: str | None
    secret: str  # the webhook signing key (shown to the tenant once, at creation)
    created_at: datetime


@dataclass(frozen=True)
class StoredAlert:
    """A fired (or test) alert; ``before``/``after``: the ``AlertPeriod`` fields of each period
    (value, n, prompts, intervals, period_start), JSON-ready."""

    alert_id: uuid.UUID
    workspace_id: str
    rule_id: uuid.UUID
    test: bool
    brand_id: str
    metric: str
    segment: dict[str, Any]
    direction: str
    period_start: datetime
    previous_period_start: datetime
    before: dict[str, Any]
    after: dict[str, Any]
    change: float | None
    p_value: float | None
    p_adjusted: float | None
    correction: str
    family_size: int
    run_ids: dict[str, list[str]]
    raised_at: datetime


@dataclass(frozen=True)
class StoredDelivery:
    delivery_id: uuid.UUID
    alert_id: uuid.UUID
    channel_id: uuid.UUID
    workspace_id: str
    kind: str
    status: str  # pending | sending | delivered | failed | dead
    attempts: int
    last_error: str | None
    next_attempt_at: datetime | None
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None


@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery a worker claimed (``delivery.attempts`` counts this claim), with what it
    needs to send it."""

    delivery: StoredDelivery
    channel: StoredChannel
    alert: StoredAlert


@dataclass(frozen=True)
class RunLink:
    """A run behind an alert's figure, with what its segment is decided on."""

    run_id: str
    engine: str
    prompt: str
    tags: tuple[str, ...]  # the collector prompt's topic, persona and funnel, when present
    collection_method: str | None = None  # None: not recorded (runs before migration 0005)


class AlertRepository(Protocol):
    async def add_rule(self, rule: StoredRule) -> None: ...

    async def get_rule(self, workspace_id: str, rule_id: uuid.UUID) -> StoredRule | None:
        """None when deleted or another workspace's."""

    async def rules(self, workspace_id: str) -> list[StoredRule]:
        """The workspace's rules, oldest first (deleted ones left out)."""

    async def update_rule(self, workspace_id: str, rule_id: uuid.UUID,
                          changes: dict[str, Any]) -> StoredRule | None: ...

    async def delete_rule(self, workspace_id: str, rule_id: uuid.UUID) -> bool: ...

    async def add_channel(self, channel: StoredChannel) -> None: ...

    async def channels(self, workspace_id: str) -> list[StoredChannel]: ...

    async def delete_channel(self, workspace_id: str, channel_id: uuid.UUID) -> bool: ...

    async def workspaces_with_rules(self) -> list[str]:
        """Workspaces with at least one rule that is neither muted nor deleted."""

    async def evaluated(self, workspace_id: str, period_start: datetime) -> bool: ...

    async def record_evaluation(self, workspace_id: str, period_start: datetime, rules: int,
                                fired: int) -> bool:
        """False when that (workspace, period) was evaluated already (by anyone)."""

    async def run_links(self, workspace_id: str, brand_id: str, start: datetime,
                        end: datetime) -> list[RunLink]:
        """Runs of the brand's pairs answered in [start, end), newest first (at most 2,000)."""

    async def add_alert(self, alert: StoredAlert, channel_ids: Sequence[uuid.UUID]) -> bool:
        """Store the alert and one pending delivery per channel; False (nothing stored) when
        the rule already fired in that period (a fired alert is once per (rule, period))."""

    async def slot_evaluated(self, workspace_id: str, schedule_id: str, slot: datetime) -> bool:
        ...

    async def record_slot_evaluation(self, workspace_id: str, schedule_id: str, slot: datetime,
                                     period_start: datetime, runs: int, rules: int,
                                     fired: int) -> bool:
        """False when that slot was evaluated before (nothing written)."""

    async def recorded_runs(self, workspace_id: str, run_ids: Sequence[str]) -> int:
        """How many of ``run_ids`` are recorded here (each recorded run is classified, or
        refused, in the transaction that recorded it)."""

    async def get_alert(self, workspace_id: str, alert_id: uuid.UUID) -> StoredAlert | None: ...

    async def alerts(self, workspace_id: str, before: tuple[datetime, uuid.UUID] | None,
                     limit: int) -> list[StoredAlert]:
        """Newest first; ``before``: the (raised_at, alert_id) of the previous page's last."""

    async def deliveries(self, alert_id: uuid.UUID) -> list[StoredDelivery]: ...

    async def claim_deliveries(self, limit: int, lease_s: float) -> list[ClaimedDelivery]:
        """Claim due deliveries (pending, failed and due, or sending with a lapsed lease) for
        ``lease_s``: status ``sending``, attempts + 1, committed before anything is sent."""

    async def finish_delivery(self, delivery_id: uuid.UUID, attempt: int, status: str,
                              error: str | None, receipt: str | None,
                              next_attempt_at: datetime | None) -> bool:
        """Record the outcome of claim number ``attempt``; False when that claim lapsed and
        another worker claimed the delivery since (then nothing changes)."""


class AlertsUnitOfWork(UnitOfWork, Protocol):
    """The classifier's unit of work with the alert tables (``adapters/alerts_postgres.py``)."""

    alerts: AlertRepository
