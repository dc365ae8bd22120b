"""What the classifier can be asked to do: its commands (imperative) and queries, as data.

Every entrypoint (HTTP routes, the runs.recorded.v1 subscribers, the judge worker, the CLI)
builds one of these and hands it to the message bus; ``service_layer/handlers.py`` lists the
handler of each. Each message names what handling it returns (``Message[Result]``); the result
types are the service layer's read models, named here for the type checker only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from attesta_contracts.runs import RunRecorded
from attesta_platform.bus import Message

# The results' types, for the type checker only (named in strings below, which ruff does not
# read as uses): at run time the domain imports nothing from the service layer.
if TYPE_CHECKING:
    from typing import Any  # noqa: F401

    from attesta_classifier.service_layer.ground_truth import (  # noqa: F401
        GroundTruthView, RefreshOutcome)
    from attesta_classifier.service_layer.pipeline import Rejected  # noqa: F401
    from attesta_classifier.service_layer.metrics import MetricsReport  # noqa: F401
    from attesta_classifier.service_layer.review import (  # noqa: F401
        AgreementReport, Decided, QueuePage, ReviewItem)
    from attesta_classifier.service_layer.runs import RunPage, RunWithStates  # noqa: F401
    from attesta_classifier.service_layer.unit_of_work import (  # noqa: F401
        HistoryRow, PairState, StoredBrand, StoredFact)


# -- brands -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateBrand(Message["StoredBrand"]):
    workspace_id: str
    name: str
    brand_id: str | None = None  # None: a slug of the name
    aliases: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    competitors: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpdateBrand(Message["StoredBrand"]):
    """Only the fields given (not None) change."""

    workspace_id: str
    brand_id: str
    name: str | None = None
    aliases: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    competitors: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GetBrand(Message["StoredBrand"]):
    workspace_id: str
    brand_id: str


@dataclass(frozen=True)
class ListBrands(Message["list[StoredBrand]"]):
    workspace_id: str


# -- ground truth -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RefreshGroundTruth(Message["RefreshOutcome"]):
    workspace_id: str
    brand_id: str


@dataclass(frozen=True)
class GetGroundTruth(Message["GroundTruthView"]):
    workspace_id: str
    brand_id: str
    include_superseded: bool = False


@dataclass(frozen=True)
class AddManualFact(Message["tuple[bool, StoredFact]"]):
    """Returns (created, the fact): an identical active fact is not added twice."""

    workspace_id: str
    brand_id: str
    type: str
    text: str
    source_url: str
    attribution: str


@dataclass(frozen=True)
class Reverify(Message["dict[str, Any]"]):
    """Classify every run of the brand again against its current ground truth."""

    workspace_id: str
    brand_id: str
    actor: str | None = None
    reason: str | None = None


# -- runs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubmitRun(Message["tuple[str, str]"]):
    """A run given over HTTP: stored, and runs.recorded.v1 staged (classified from the topic).
    Returns (run id, answer SHA-256)."""

    workspace_id: str
    engine: str
    model: str
    prompt: str
    answer: str
    brand_ids: tuple[str, ...] = ()
    requested_at: datetime | None = None
    answered_at: datetime | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class IncomingRun:
    """One runs.recorded.v1 event."""

    event_id: uuid.UUID
    payload: RunRecorded
    correlation_id: str


@dataclass(frozen=True)
class RecordRuns(Message["tuple[dict[str, int], list[Rejected]]"]):
    """Store and classify a batch of runs.recorded.v1 events for ``consumer`` (a consumer
    group: exactly once per event id each). Returns (counts, the items rejected)."""

    items: tuple[IncomingRun, ...]
    consumer: str
    trigger: str  # live | backfill


@dataclass(frozen=True)
class RecordEvidenceLeaves(Message[int]):
    """The Merkle log's leaf index of answers' bytes, from evidence.recorded.v1 events:
    (sha256, log_index) pairs. The first index seen for a SHA-256 stays (the log's first leaf
    for those bytes); returns how many SHA-256s got their index now."""

    leaves: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class RunFilter:
    """The filters of the runs table (and of its export)."""

    engine: str | None = None
    brand_id: str | None = None
    status: str | None = None
    citation_class: str | None = None
    source: str | None = None
    from_: datetime | None = None
    to: datetime | None = None
    decided_by: str | None = None  # 'deterministic' or 'judge': a brand's current class's
    tag: str | None = None  # any of the collector prompt's tags (topic, persona, funnel)
    collection_method: str | None = None  # how the answer was collected (issue #25 item 4)


@dataclass(frozen=True)
class ListRuns(Message["RunPage"]):
    workspace_id: str
    filter: RunFilter = RunFilter()
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True)
class GetRun(Message["RunWithStates"]):
    workspace_id: str
    run_id: str


@dataclass(frozen=True)
class GetHistory(Message["tuple[list[HistoryRow], list[HistoryRow]]"]):
    """Every decision of the run up to ``as_of``, and each brand's latest of them."""

    workspace_id: str
    run_id: str
    as_of: datetime | None = None


@dataclass(frozen=True)
class Reclassify(Message["list[PairState]"]):
    workspace_id: str
    run_id: str
    reason: str
    actor: str
    brand_ids: tuple[str, ...] | None = None


@dataclass(frozen=True)
class JudgeDuePairs(Message["dict[str, int]"]):
    """Judge up to ``limit`` parked pairs that are due (the judge worker's step)."""

    limit: int


# -- metrics ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GetMetrics(Message["MetricsReport"]):
    """The figures per brand, period and ``group_by``, restricted to one segment: ``engine`` and
    the prompt's ``topic``/``persona``/``funnel`` tag and ``branded`` (None: any)."""

    workspace_id: str
    period: str = "week"
    brand_id: str | None = None
    engine: str | None = None
    from_: datetime | None = None
    to: datetime | None = None
    group_by: tuple[str, ...] = ("engine",)
    topic: str | None = None
    persona: str | None = None
    funnel: str | None = None
    branded: bool | None = None
    # Issue #25 item 6: the run's source; without it, our assistant's ad-hoc chats (source
    # "assistant") are left out of the figures unless ``include_chats``.
    source: str | None = None
    include_chats: bool = False
    # Issue #25 item 4: one method; ANY_METHOD: every method together; None (the default):
    # rows split by method, never averaged across methods.
    collection_method: str | None = None


ANY_METHOD = "any"


# -- the review queue -------------------------------------------------------------------------
@dataclass(frozen=True)
class Reviewer:
    name: str  # the API key's name (its id when the key has no name)
    key_id: str | None


@dataclass(frozen=True)
class ListReviewQueue(Message["QueuePage"]):
    workspace_id: str
    brand_id: str | None = None
    kind: str | None = None  # pending | sample; None: both
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True)
class GetReviewItem(Message["ReviewItem"]):
    workspace_id: str
    run_id: str
    brand_id: str


@dataclass(frozen=True)
class DecideReview(Message["Decided"]):
    workspace_id: str
    run_id: str
    brand_id: str
    citation_class: str
    note: str | None
    ground_truth_hash: str  # the facts the person decided against
    classification_id: str | None  # a sample item's judge label
    reviewer: Reviewer
    idempotency_key: str | None = None


@dataclass(frozen=True)
class GetJudgeAgreement(Message["AgreementReport"]):
    workspace_id: str
    judge_model: str | None = None
