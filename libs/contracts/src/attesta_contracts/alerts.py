"""Alert events (issue #25): an alert rule fired (or a test alert was sent), and a delivery of
an alert to a channel was given up (its dead letter, with the reason)."""

from __future__ import annotations

import uuid

from pydantic import AwareDatetime, BaseModel, Field


class AlertPeriod(BaseModel):
    """One period's value of the rule's metric, its n, distinct prompts and 95% intervals
    (Wilson over answers, bootstrap over prompts). For a mean (the score, the mean position)
    ``successes`` is the sum of the per-answer values, and the mean position has no Wilson
    interval (null)."""

    period_start: AwareDatetime
    value: float | None
    successes: float = Field(ge=0)
    n: int = Field(ge=0)
    prompts: int = Field(ge=0)
    ci95_low: float | None
    ci95_high: float | None
    by_prompt_ci95_low: float | None
    by_prompt_ci95_high: float | None


class AlertRaised(BaseModel):
    """A rule's metric changed for real between two closed periods (a test of the change of a
    proportion or of a mean with the prompt as the unit, corrected over the rules evaluated
    together), or a test alert
    (``test``: true) was asked for. ``run_ids``: some of the runs behind each period."""

    alert_id: uuid.UUID
    workspace_id: str
    rule_id: uuid.UUID
    test: bool = False
    brand_id: str
    metric: str
    segment: dict[str, str | bool]
    direction: str
    before: AlertPeriod
    after: AlertPeriod
    change: float | None
    p_value: float | None
    p_adjusted: float | None
    correction: str
    family_size: int = Field(ge=0)
    run_ids: dict[str, list[str]] = Field(default_factory=dict)
    raised_at: AwareDatetime


class AlertDeliveryDeadLettered(BaseModel):
    """The classifier gave up delivering an alert to a channel: a permanent error, or the
    attempts ran out. ``reason`` is the last error as the delivery log shows it."""

    delivery_id: uuid.UUID
    alert_id: uuid.UUID
    channel_id: uuid.UUID
    workspace_id: str
    kind: str
    attempts: int = Field(ge=0)
    reason: str
    dead_at: AwareDatetime
