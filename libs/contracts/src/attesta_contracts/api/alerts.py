"""HTTP models of the classifier's alert API (issue #25; internal on :8081, the gateway serves
the same paths): rules, channels, fired alerts and their delivery log.

Metrics a rule may watch (``AlertMetric``) are the figures of ``GET /v1/metrics``: the shares
(citation rate, confabulation rate, share of voice, each source share, share named first) are
tested as a change of a proportion, the means (score, mean position) as a change of a mean, both
with the prompt as the unit (docs/alerts.md).
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated

from pydantic import (AwareDatetime, BaseModel, Field, StrictBool, StrictFloat, StrictInt,
                      StringConstraints, model_validator)

from attesta_contracts.api.classifier import BrandId, ShortText, _Strict
from attesta_contracts.runs import CollectionMethod

SegmentValue = Annotated[str, StringConstraints(min_length=1, max_length=200,
                                                strip_whitespace=True)]
# Request numbers and booleans are what the schema says (no "30" for 30, no 0 for false):
# pydantic's lax mode would take them, and the OpenAPI fuzz counts that as accepting bad data.
# (alpha is in (0, 1): no integer is a valid one.)


class AlertMetric(StrEnum):
    """A figure of the metrics rows (docs/metrics.md). ``source_share_*``: the share of answers
    citing at least one source of that label; ``position_first``: the share of answers naming
    the brand before any competitor; ``position_mean``: its mean place where named (1 = first,
    so ``up`` is a move down the list); ``position_weighted_visibility``: the mean position
    weight over answers with a position (1st 1, 2nd 0.9, 3rd 0.81, ..., not named 0); ``score``: the Attesta score in [0, 1]."""

    citation_rate = "citation_rate"
    confabulation_rate = "confabulation_rate"
    share_of_voice = "share_of_voice"
    source_share_owned = "source_share_owned"
    source_share_competitor = "source_share_competitor"
    source_share_third_party = "source_share_third_party"
    position_first = "position_first"
    position_mean = "position_mean"
    position_weighted_visibility = "position_weighted_visibility"
    score = "score"


class AlertDirection(StrEnum):
    up = "up"
    down = "down"
    either = "either"


class ChannelKind(StrEnum):
    webhook = "webhook"
    slack = "slack"
    email = "email"


class DeliveryStatus(StrEnum):
    pending = "pending"  # not tried yet
    sending = "sending"  # claimed by a delivery worker (until its lease runs out)
    delivered = "delivered"
    failed = "failed"  # the last attempt failed; the next one is due at next_attempt_at
    dead = "dead"  # given up: a permanent error, or the attempts ran out


class AlertSegment(_Strict):
    """Which answers the rule counts; a field left out counts every value (an unknown field is
    refused). ``tag`` matches any of the collector prompt's tags (topic, persona, funnel);
    ``branded``: the prompt names a tracked brand of the workspace; ``collection_method``: how
    the answers were collected (``api``, ``api_with_search``, ``assistant``). Without it a rule
    counts every method together."""

    engine: SegmentValue | None = None
    tag: SegmentValue | None = None
    branded: StrictBool | None = None
    collection_method: CollectionMethod | None = None


class AlertRuleCreate(_Strict):
    brand_id: BrandId
    metric: AlertMetric
    name: ShortText | None = None
    segment: AlertSegment = Field(default_factory=AlertSegment)
    direction: AlertDirection = AlertDirection.either
    min_n: StrictInt = Field(default=30, ge=1, le=1_000_000,
                             description="answers needed in each period; below it the cell is "
                                         "underpowered and the rule never fires")
    min_prompts: StrictInt = Field(default=5, ge=2, le=100_000,
                                   description="distinct prompts with answers needed in each "
                                               "period")
    alpha: StrictFloat = Field(default=0.05, gt=0, lt=1,
                          description="the level the adjusted p-value is compared with")
    muted: StrictBool = False


class AlertRuleUpdate(_Strict):
    """Only the fields given change (``muted`` mutes or unmutes the rule)."""

    name: ShortText | None = None
    segment: AlertSegment | None = None
    direction: AlertDirection | None = None
    min_n: StrictInt | None = Field(default=None, ge=1, le=1_000_000)
    min_prompts: StrictInt | None = Field(default=None, ge=2, le=100_000)
    alpha: StrictFloat | None = Field(default=None, gt=0, lt=1)
    muted: StrictBool | None = None


class AlertRule(BaseModel):
    rule_id: uuid.UUID
    brand_id: str
    metric: AlertMetric
    name: str | None
    segment: AlertSegment
    direction: AlertDirection
    min_n: int
    min_prompts: int
    alpha: float
    muted: bool
    created_at: AwareDatetime
    updated_at: AwareDatetime


class AlertRuleList(BaseModel):
    items: list[AlertRule]


class AlertChannelCreate(_Strict):
    """``target``: the URL of a webhook or a Slack incoming webhook (it must pass the outbound
    policy: no private, loopback or metadata addresses), or an e-mail address."""

    kind: ChannelKind
    target: Annotated[str, StringConstraints(min_length=3, max_length=2000,
                                             strip_whitespace=True)]
    name: ShortText | None = None

    @model_validator(mode="after")
    def _target_fits_kind(self) -> AlertChannelCreate:
        if self.kind is ChannelKind.email:
            local, at, domain = self.target.rpartition("@")
            if not at or not local or "." not in domain or any(c.isspace() for c in self.target):
                raise ValueError("an email channel's target is an e-mail address")
        elif not self.target.lower().startswith(("http://", "https://")):
            raise ValueError("a webhook or slack channel's target is an http(s) URL")
        return self


class AlertChannel(BaseModel):
    channel_id: uuid.UUID
    kind: ChannelKind
    target: str
    name: str | None
    created_at: AwareDatetime


class AlertChannelCreated(AlertChannel):
    """The channel and its webhook signing secret, shown this once (never again)."""

    secret: str = Field(description="HMAC-SHA256 key of the webhook signature; shown once")


class AlertChannelList(BaseModel):
    items: list[AlertChannel]


class PeriodFigures(BaseModel):
    """One period's value of the rule's metric: n (the figure's own: answers, citations for
    share of voice, answers naming the brand for the mean position) over ``prompts`` distinct
    prompts, the Wilson interval over answers (none for the mean position, not a proportion) and
    the bootstrap interval over prompts (95%)."""

    value: float | None
    n: int
    prompts: int
    ci95_low: float | None
    ci95_high: float | None
    by_prompt_ci95_low: float | None
    by_prompt_ci95_high: float | None


class AlertRuns(BaseModel):
    """Some of the runs behind each period's figure (at most 20 each; the runs API has all)."""

    before: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)


class AlertView(BaseModel):
    alert_id: uuid.UUID
    rule_id: uuid.UUID
    test: bool = Field(description="a test alert (POST /v1/alerts/rules/{rule_id}/test)")
    brand_id: str
    metric: AlertMetric
    segment: AlertSegment
    direction: AlertDirection
    period_start: AwareDatetime
    previous_period_start: AwareDatetime
    before: PeriodFigures
    after: PeriodFigures
    change: float | None
    p_value: float | None
    p_adjusted: float | None
    correction: str
    family_size: int = Field(description="powered rules evaluated together (the correction's m)")
    runs: AlertRuns
    raised_at: AwareDatetime


class DeliveryView(BaseModel):
    delivery_id: uuid.UUID
    channel_id: uuid.UUID
    kind: ChannelKind
    status: DeliveryStatus
    attempts: int
    last_error: str | None
    next_attempt_at: AwareDatetime | None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    delivered_at: AwareDatetime | None


class AlertDetail(AlertView):
    deliveries: list[DeliveryView]


class AlertList(BaseModel):
    items: list[AlertView]
    next_cursor: str | None = Field(default=None,
                                    description="pass as ?cursor= for the next (older) page")


class TestAlertResult(BaseModel):
    alert_id: uuid.UUID
    deliveries: int = Field(description="one pending delivery per channel of the workspace")
