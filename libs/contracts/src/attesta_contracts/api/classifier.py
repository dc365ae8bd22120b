"""HTTP models of the classifier's API (internal on :8081; the gateway serves the same paths).

The gateway imports these to build the public OpenAPI document. Every error answers with the
shared shape ``{"error": {"code", "reason"}}`` (``attesta_platform.http.ErrorResponse``).
Lists are plain JSON arrays under ``items``; times are UTC ISO-8601.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field,
                      StringConstraints, model_validator)
from pydantic_core import PydanticCustomError

from attesta_contracts.classification import CitationClass, DecidedBy, Trigger
from attesta_contracts.runs import ModelBuild

BrandId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")]
Domain = Annotated[str, StringConstraints(
    pattern=r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9-]{2,63}$", max_length=253,
    to_lower=True, strip_whitespace=True)]
HttpUrlText = Annotated[str, StringConstraints(pattern=r"^[hH][tT][tT][pP][sS]?://[^\s]+$",
                                              max_length=2048, strip_whitespace=True)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


# RFC 3339 ``date-time`` (the profile of ISO-8601 the schemas document as ``format: date-time``):
# a full date, ``T``, a full time with optional fraction, and ``Z`` or a numeric offset.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_TIME_EXAMPLE = "2026-12-01T00:00:00Z"
_EARLIEST, _LATEST = datetime(1000, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


def _iso_only(value: object) -> object:
    """The one rule for times in the API, request bodies and query strings alike: RFC 3339 text
    with a timezone (or, from Python, an aware ``datetime``). Pydantic's lax mode would also
    take a JSON number as a Unix timestamp; the documented schema (string, date-time) does not
    allow it, so a number is refused with a reason instead of being guessed at."""
    if isinstance(value, datetime):
        return value  # AwareDatetime then refuses a naive one
    if isinstance(value, (bool, int, float)):
        raise PydanticCustomError(
            "iso_datetime_type",
            "a time must be an ISO-8601 (RFC 3339) string such as {example}, not a number "
            "(Unix timestamps are not accepted)", {"example": _TIME_EXAMPLE})
    if not isinstance(value, str):
        raise PydanticCustomError(
            "iso_datetime_type", "a time must be an ISO-8601 (RFC 3339) string such as {example}",
            {"example": _TIME_EXAMPLE})
    if not _RFC3339.match(value):
        raise PydanticCustomError(
            "iso_datetime",
            "not an ISO-8601 (RFC 3339) date-time: give a date, a time and a timezone, "
            "e.g. {example}", {"example": _TIME_EXAMPLE})
    try:
        parsed = datetime.fromisoformat(value.upper())  # 3.11 reads "Z", not "z"
    except ValueError:  # e.g. month 13, or a leap second (23:59:60), which datetime cannot hold
        raise PydanticCustomError("iso_datetime", "not a valid date-time (e.g. {example})",
                                  {"example": _TIME_EXAMPLE}) from None
    # Stored and compared in UTC: a year-1 or year-9999 time with an offset falls outside what
    # datetime (and the database's date arithmetic) can hold once converted.
    try:
        in_range = _EARLIEST <= parsed.astimezone(UTC) < _LATEST
    except OverflowError:
        in_range = False
    if not in_range:
        raise PydanticCustomError("iso_datetime_range",
                                  "a time must lie between the years 1000 and 8999 (UTC)")
    return parsed


IsoTime = Annotated[AwareDatetime, BeforeValidator(_iso_only)]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False


class _Strict(BaseModel):
    """A request body: no unknown fields, and no NUL character anywhere (PostgreSQL text cannot
    hold one; refused here with a reason instead of failing in the database)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        if _has_nul(data):
            raise PydanticCustomError("nul_character",
                                      "text must not contain a NUL character (U+0000)")
        return data


# -- brands -----------------------------------------------------------------------------------
class BrandCreate(_Strict):
    """A tracked brand. ``brand_id`` is optional (a slug is generated from the name when
    absent); ids are unique within a workspace."""

    brand_id: BrandId | None = None
    name: ShortText
    aliases: list[ShortText] = Field(default_factory=list, max_length=50)
    domains: list[Domain] = Field(default_factory=list, max_length=20)
    competitors: list[BrandId] = Field(default_factory=list, max_length=50,
                                       description="brand ids of the same workspace")
    sources: list[HttpUrlText] = Field(default_factory=list, max_length=50,
                                       description="http(s) pages ground truth is fetched from")


class BrandUpdate(_Strict):
    """PATCH: only the fields present change."""

    name: ShortText | None = None
    aliases: list[ShortText] | None = Field(default=None, max_length=50)
    domains: list[Domain] | None = Field(default=None, max_length=20)
    competitors: list[BrandId] | None = Field(default=None, max_length=50)
    sources: list[HttpUrlText] | None = Field(default=None, max_length=50)


class Brand(BaseModel):
    brand_id: str
    workspace_id: str
    name: str
    aliases: list[str]
    domains: list[str]
    competitors: list[str]
    sources: list[str]
    created_at: datetime
    updated_at: datetime


class BrandList(BaseModel):
    items: list[Brand]


# -- ground truth ---------------------------------------------------------------------------
class GroundTruthFactView(BaseModel):
    """A ``GroundTruthFact``: type, source URL, fetchedAt, attribution, SHA-256 of the content."""

    fact_id: str
    brand_id: str
    type: str
    text: str
    source_url: str
    fetched_at: datetime
    attribution: str
    content_sha256: str
    active: bool
    superseded_at: datetime | None = None
    # When the fact was first recorded. Its validity is recorded_at .. superseded_at (or now);
    # a fact re-activated by a later refresh is one row again active, so an earlier gap is not
    # listed (the table keeps one row per fact; the refresh events keep every change).
    recorded_at: datetime | None = None


class GroundTruth(BaseModel):
    """The brand's active facts and ``ground_truth_hash`` = SHA-256 of their canonical text
    (empty list: the classifier refuses to classify this brand). ``superseded``: the facts no
    longer active, most recently superseded first, only when asked for
    (``include_superseded=true``); they are not part of the hash."""

    brand_id: str
    ground_truth_hash: str
    facts: list[GroundTruthFactView]
    superseded: list[GroundTruthFactView] | None = None


class ManualFactCreate(_Strict):
    type: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,39}$")] = "manual"
    text: Annotated[str, StringConstraints(min_length=1, max_length=4000, strip_whitespace=True)]
    source_url: HttpUrlText
    attribution: Annotated[str, StringConstraints(min_length=1, max_length=500,
                                                  strip_whitespace=True)]


class SourceFetchOutcome(BaseModel):
    url: str
    ok: bool
    http_status: int | None = None
    sha256: str | None = None
    bytes: int | None = None
    facts_extracted: int = 0
    error: str | None = None


class RefreshResult(BaseModel):
    """``changed`` is false when the fetched facts equal the active ones (nothing is written)."""

    refresh_id: str
    brand_id: str
    changed: bool
    ground_truth_hash: str
    active_fact_ids: list[str]
    added_fact_ids: list[str]
    superseded_fact_ids: list[str]
    sources: list[SourceFetchOutcome]


class ReverifyResult(BaseModel):
    brand_id: str
    ground_truth_hash: str
    runs: int
    recorded: int
    refused: int
    pending: int


# -- runs -------------------------------------------------------------------------------------
class RunStatus(StrEnum):
    PENDING = "pending"
    CLASSIFIED = "classified"
    REFUSED = "refused"


class RunCreate(_Strict):
    """A run to classify: a prompt put to an AI engine and the engine's answer. Times are
    RFC 3339 text with a timezone; a JSON number is refused (422), not read as a Unix time."""

    engine: Annotated[str, StringConstraints(min_length=1, max_length=100, strip_whitespace=True)]
    model: Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=20_000)]
    answer: Annotated[str, StringConstraints(max_length=200_000)]
    brand_ids: list[BrandId] = Field(default_factory=list, max_length=100,
                                     description="empty: every brand of the workspace")
    requested_at: IsoTime | None = None
    answered_at: IsoTime | None = None


class RunAccepted(BaseModel):
    run_id: str
    answer_sha256: str
    status: str = "accepted"


class RunBrandState(BaseModel):
    """Current state of one (run, brand): the latest classification, or why there is none."""

    brand_id: str
    status: RunStatus
    citation_class: CitationClass | None = None
    decided_by: DecidedBy | None = None
    judge_model: str | None = None
    classification_id: str | None = None
    ground_truth_hash: str | None = None
    reason: str | None = None  # the decision's reason, or the refusal's
    updated_at: datetime


class PositionedBrandState(RunBrandState):
    """A (run, brand) state with the brand's position in the answer (issue #25 item 3; in
    ``GET /v1/runs/{run_id}``)."""

    position: int | None = Field(default=None, description="the brand's place among it and its "
                                                          "competitors, in the order the answer "
                                                          "first names them; null: not named")
    named_order: list[str] | None = Field(
        default=None, description="the brand ids named, in that order (null: not computed)")


class RunView(BaseModel):
    run_id: str
    workspace_id: str
    engine: str
    model: str
    prompt: str
    answer: str
    answer_sha256: str
    brand_ids: list[str]
    source: str
    requested_at: datetime | None = None
    answered_at: datetime | None = None
    recorded_at: datetime
    brands: list[PositionedBrandState]
    # Additive (issue #25 item 4): how the answer was collected and the build that answered.
    collection_method: str | None = Field(
        default=None, description="the engine's declared collection method: api, "
                                  "api_with_search, assistant (null: not recorded)")
    model_build: ModelBuild | None = Field(
        default=None, description="the model build the endpoint reported (null: none)")


class RunSummary(BaseModel):
    run_id: str
    engine: str
    model: str
    answer_sha256: str
    source: str
    answered_at: datetime | None = None
    recorded_at: datetime
    brands: list[RunBrandState]
    log_index: int | None = Field(default=None, description=(
        "the Merkle log's leaf index of the answer's bytes (evidence.recorded.v1); null until "
        "the evidence service has logged them. With answer_sha256 it is what a reader "
        "verifies offline (docs/metrics.md)"))


class RunList(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None = Field(default=None, description="pass as ?cursor= for the next page")


class Classification(BaseModel):
    """One ``CitationClassification`` history row (append-only)."""

    classification_id: str
    run_id: str
    brand_id: str
    citation_class: CitationClass
    decided_by: DecidedBy
    judge_model: str | None = None
    ground_truth_hash: str
    fact_ids: list[str]
    reason: str
    trigger: Trigger
    trigger_reason: str | None = None
    heuristic_version: str
    prompt_version: str | None = None
    evidence_sha256: str
    actor: str | None = None
    classified_at: datetime
    # Additive (issue #28): who decided a ``human`` label (the API key's name) and their note.
    reviewer: str | None = None
    note: str | None = None


class ClassificationHistory(BaseModel):
    """All history rows (oldest first) up to ``as_of`` (all of them when absent), and the class
    each brand had at that time (the latest row at or before it)."""

    run_id: str
    as_of: datetime | None = None
    items: list[Classification]
    as_of_classes: list[Classification]


class ReclassifyRequest(_Strict):
    reason: Annotated[str, StringConstraints(min_length=1, max_length=1000, strip_whitespace=True)]
    brand_ids: list[BrandId] | None = Field(
        default=None, max_length=100,
        description="default: every brand of the run; otherwise brands the run was submitted "
                    "for (or, for a run submitted for every brand, brands of the workspace)")


class ReclassifyResult(BaseModel):
    run_id: str
    brands: list[RunBrandState]


# -- metrics ----------------------------------------------------------------------------------
class Period(StrEnum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


class Rate(BaseModel):
    """A proportion with its sample: ``value`` = successes / n, and the 95% Wilson interval.
    ``value`` and the bounds are null when n = 0."""

    value: float | None
    successes: float
    n: int
    ci95_low: float | None
    ci95_high: float | None
    # Additive (issue #25): true when the cell's n or its distinct prompts are below the
    # published minimum (docs/metrics.md "Underpowered cells"): read it as "too little data",
    # not as the figure. Null where no minimum applies (a rate that is not a metrics cell).
    underpowered: bool | None = None


class PromptRate(BaseModel):
    """The citation rate with a 95% seeded bootstrap interval over prompts (resampling prompts,
    not pairs): read it when a few prompts were asked many times (see docs/metrics.md)."""

    value: float | None
    prompts: int
    n: int
    ci95_low: float | None
    ci95_high: float | None
    method: str = "percentile bootstrap over prompts, 2000 resamples, seeded"
    # Additive (issue #25): true when the cell's n or its distinct prompts are below the
    # published minimum (docs/metrics.md "Underpowered cells"): read it as "too little data",
    # not as the figure. Null where no minimum applies (a rate that is not a metrics cell).
    underpowered: bool | None = None


class RateChange(BaseModel):
    """Citation rate against the previous period (same brand and engine) that has data.
    ``significant`` only when the two periods' Wilson intervals do not overlap."""

    previous_period_start: datetime
    previous_value: float | None
    delta: float | None
    significant: bool | None


class MetricsDimension(StrEnum):
    """What ``GET /v1/metrics?group_by=`` can split rows by (docs/metrics.md)."""

    ENGINE = "engine"
    TOPIC = "topic"
    PERSONA = "persona"
    FUNNEL = "funnel"
    BRANDED = "branded"


class LabelShare(Rate):
    """The share of answers citing at least one source with this label, with Wilson over
    answers and, in ``by_prompt``, the bootstrap over prompts."""

    by_prompt: PromptRate


class SourceShare(BaseModel):
    """Per label (the brand's own domains, a competitor's, anyone else's), the share of the
    row's answers ((run, brand) pairs, whatever their class) citing at least one such source."""

    answers: int
    prompts: int
    owned: LabelShare
    competitor: LabelShare
    third_party: LabelShare


class CitedDomain(BaseModel):
    domain: str = Field(description="registered domain (Public Suffix List)")
    answers: int = Field(description="answers of the row citing it at least once")
    label: str = Field(description="owned, competitor or third_party for the row's brand")


class PositionFigures(BaseModel):
    """Where the answers name the brand against its competitors (docs/metrics.md "Position"),
    over the row's classified answers whose position was computed."""

    answers: int = Field(description="classified answers with a computed position")
    named: int = Field(description="of them, the answers that name the brand")
    prompts: int = Field(description="distinct prompts of those answers")
    mean: PromptRate = Field(description="mean place where named (1 = first; a place, not "
                                         "a share), bootstrap over prompts; n = named")
    first: Rate = Field(description="share of answers naming the brand before any "
                                    "competitor, Wilson; n = answers")
    weighted_visibility: PromptRate = Field(
        description="mean position weight, 0.9^(k-1) for the k-th named and 0 when not named, "
                    "bootstrap over prompts; n = answers")


class MetricRow(BaseModel):
    brand_id: str
    engine: str | None = Field(description="null when the rows are not grouped by engine "
                                           "(all engines together)")
    period_start: datetime
    # Additive (issue #12): the row's value of each other dimension it is grouped by
    # (``group_by``); null when not grouped by it, or when the run has no such tag.
    topic: str | None = None
    persona: str | None = None
    funnel: str | None = None
    branded: bool | None = None
    n: int = Field(description="classified (run, brand) pairs in the bucket")
    counts: dict[str, int] = Field(description="current class -> pairs")
    refused: int
    pending: int
    citation_rate: Rate
    share_of_voice: Rate
    confabulation_rate: Rate
    echo_rate: Rate
    absent_rate: Rate
    score: Rate = Field(description="Attesta score in [0, 1]; see docs/metrics.md")
    # Additive (issue #12): the citation rate with the prompt as the unit, and the change
    # against the previous period of the same brand and engine.
    citation_rate_by_prompt: PromptRate | None = None
    citation_rate_change: RateChange | None = None
    source_share: SourceShare | None = None
    top_domains: list[CitedDomain] = Field(default_factory=list,
                                           description="the 10 most cited domains, most first")
    # Additive (issue #25): distinct prompts with classified pairs, and whether the row's
    # citation rate is underpowered (n or prompts below the minimum; each figure says its own).
    prompts: int | None = None
    underpowered: bool | None = None
    # Additive (issue #25 items 3 and 4): the brand's position, and how the row's answers were
    # collected.
    position: PositionFigures | None = None
    collection_method: str | None = Field(
        default=None, description="how the row's answers were collected (rows are split by it "
                                  "unless collection_method=any was asked; null: every method "
                                  "together, or runs that did not record one)")


class MetricsSegment(BaseModel):
    """The segment filters a metrics request applied (null: any); see docs/metrics.md."""

    engine: str | None = None
    topic: str | None = None
    persona: str | None = None
    funnel: str | None = None
    branded: bool | None = None
    # Additive (issue #25 items 4 and 6).
    source: str | None = None
    include_chats: bool = False
    collection_method: str | None = None


class BuildChange(BaseModel):
    """From ``day`` (UTC) on, the engine's answers came from another model build (the one most
    of that day's runs reported)."""

    engine: str
    day: date
    model_build: ModelBuild
    previous: ModelBuild


class MinimumSample(BaseModel):
    """Below either, a cell is underpowered (settings ATTESTA_METRICS_MIN_N and
    ATTESTA_METRICS_MIN_PROMPTS; docs/metrics.md)."""

    n: int
    prompts: int


class MetricsResponse(BaseModel):
    period: Period
    group_by: list[MetricsDimension] = Field(default_factory=lambda: [MetricsDimension.ENGINE])
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None
    formulas: str = "docs/metrics.md"
    rows: list[MetricRow]
    # Additive (issues #25, #27): the segment the rows are restricted to, the minimum sample of
    # a powered cell, one row per (brand, group) over the whole window (``period_start`` = its
    # first period; the same formulas, not a sum of the rows), and the values each dimension
    # takes in the window before the segment filters (what a form can offer).
    segment: MetricsSegment = Field(default_factory=MetricsSegment)
    minimum: MinimumSample | None = None
    totals: list[MetricRow] = Field(default_factory=list)
    segment_values: dict[str, list[str]] = Field(default_factory=dict)
    # Additive (issue #25 item 4).
    build_changes: list[BuildChange] = Field(
        default_factory=list, description="per engine, each day its reported model build "
                                          "changed in the window (the charts mark them)")

    model_config = ConfigDict(populate_by_name=True)


# -- review queue (issue #28) -------------------------------------------------------------------
class ReviewKind(StrEnum):
    """Why a (run, brand) pair is in the review queue."""

    PENDING = "pending"  # the judge did not decide it: a person's label becomes its class
    SAMPLE = "sample"  # the judge decided it: a person labels it blind, to measure agreement


class JudgeState(StrEnum):
    WAITING = "waiting"  # parked for the judge, not tried yet
    ABSTAINED = "abstained"  # the judge looked and left it pending, with its reason
    UNAVAILABLE = "unavailable"  # the judge could not answer; it is retried with backoff


class ReviewQueueItem(BaseModel):
    run_id: str
    brand_id: str
    brand_name: str
    kind: ReviewKind
    engine: str
    since: datetime = Field(description="pending since (pending items) or judged at (sample)")
    age_s: int = Field(description="seconds since ``since``, at the time of the answer")
    reason: str | None = Field(default=None, description="why it is pending (pending items)")


class ReviewQueue(BaseModel):
    """A page of the queue (pending items first, oldest first; then the blind sample) and the
    queue's size for the same brand filter."""

    items: list[ReviewQueueItem]
    next_cursor: str | None = Field(default=None, description="pass as ?cursor= for the next page")
    pending: int = Field(description="pairs the judge has not decided")
    oldest_pending_at: datetime | None = None
    oldest_pending_age_s: int | None = Field(default=None,
                                             description="seconds the oldest pending pair waits")
    sample_open: int = Field(description="judge-decided pairs drawn for a blind review, not "
                                         "reviewed yet")
    sample_share: float = Field(description="share of judge-decided pairs drawn for review")


class MentionKind(StrEnum):
    NAME = "name"  # the brand's name or an alias
    DOMAIN = "domain"  # one of the brand's domains as a host (URL, bare domain, e-mail)


class AnswerSegment(BaseModel):
    """A piece of the answer, in order; joined they are the answer exactly."""

    text: str
    mention: MentionKind | None = None


class JudgeClaimView(BaseModel):
    claim: str
    verdict: str | None = None
    reason: str | None = None
    fact_ids: list[str] = Field(default_factory=list)


class JudgeOutput(BaseModel):
    """What the judge left on a pending pair: its state, its reason, and its per-claim verdicts
    when it stored them."""

    state: JudgeState
    reason: str | None = None
    attempts: int = 0
    judge_model: str | None = None
    claims: list[JudgeClaimView] = Field(default_factory=list)


class ReviewItem(BaseModel):
    """One pair to review: the answer with the brand's mentions, the active facts with their
    hashes, and (pending items only) what the judge said. A sample item withholds the judge's
    label and output: the person labels it blind."""

    run_id: str
    brand_id: str
    kind: ReviewKind
    since: datetime
    brand_name: str
    aliases: list[str]
    domains: list[str]
    engine: str
    model: str
    prompt: str
    answer: str
    answer_sha256: str
    answered_at: datetime | None = None
    answer_segments: list[AnswerSegment]
    ground_truth_hash: str = Field(description="SHA-256 of the active facts shown; send it back "
                                               "with the decision")
    facts: list[GroundTruthFactView]
    judge: JudgeOutput | None = Field(default=None, description="null on a sample item (blind)")
    classification_id: str | None = Field(
        default=None, description="sample items: the judge's label under review (its class is "
                                  "not shown); send it back with the decision")


class ReviewDecisionCreate(_Strict):
    citation_class: CitationClass
    note: Annotated[str, StringConstraints(max_length=2000, strip_whitespace=True)] | None = None
    ground_truth_hash: Sha256Hex = Field(description="the item's ground_truth_hash: the facts "
                                                     "the decision was made against")
    classification_id: str | None = Field(default=None, max_length=100,
                                          description="sample items: the item's classification_id")


class ReviewDecisionResult(BaseModel):
    run_id: str
    brand_id: str
    kind: ReviewKind
    citation_class: CitationClass
    reviewer: str
    note: str | None = None
    reviewed_at: datetime
    classification: Classification | None = Field(
        default=None, description="pending items: the human label appended to the history")
    review_id: str | None = Field(
        default=None, description="sample items: the blind review stored (the judge's label "
                                  "stays the pair's class)")


class ClassAgreement(BaseModel):
    """The judge's precision for one class against the person's blind label."""

    citation_class: CitationClass
    judge_n: int = Field(description="reviewed pairs the judge labelled this class")
    human_n: int = Field(description="reviewed pairs the person labelled this class")
    agreed: int = Field(description="pairs both labelled this class")
    precision: Rate = Field(description="agreed / judge_n, with its 95% Wilson interval")


class JudgeAgreement(BaseModel):
    """Judge-human agreement over the blind reviews of this workspace (docs/review.md)."""

    n: int = Field(description="blind reviews counted (one per judge label)")
    observed: Rate = Field(description="share of reviews where the person chose the judge's class")
    kappa: float | None = Field(description="Cohen's kappa between judge and person; null when "
                                            "n = 0 or when it is undefined (one class only)")
    per_class: list[ClassAgreement]
    confusion: dict[str, dict[str, int]] = Field(description="judge class -> person class -> n")
    judge_model: str | None = Field(default=None, description="the judge model filtered on")
    sample_share: float
    method: str = "docs/review.md"
