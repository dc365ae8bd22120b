"""What the classifier can be asked to do about alerts (issue #25): commands and queries, as
data (``domain/commands.py``'s conventions; kept in their own module so the alert work and the
metrics work change different files). ``service_layer/handlers.py`` lists their handlers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from attesta_classifier.domain.alerts import DEFAULT_ALPHA
from attesta_classifier.domain.metrics import DEFAULT_MIN_N, DEFAULT_MIN_PROMPTS
from attesta_platform.bus import Message

# The results' types, for the type checker only (the domain imports nothing from the service
# layer at run time).
if TYPE_CHECKING:
    from attesta_classifier.service_layer.alerting import (  # noqa: F401
        AlertPage, AlertWithDeliveries, CreatedChannel, Evaluation)
    from attesta_classifier.service_layer.unit_of_work import (  # noqa: F401
        StoredChannel, StoredRule)


# -- rules ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateAlertRule(Message["StoredRule"]):
    workspace_id: str
    brand_id: str
    metric: str
    name: str | None = None
    segment: dict[str, Any] = field(default_factory=dict)  # engine, tag, branded
    direction: str = "either"
    # The metrics' own minimums (one definition): below either a cell is underpowered.
    min_n: int = DEFAULT_MIN_N
    min_prompts: int = DEFAULT_MIN_PROMPTS
    alpha: float = DEFAULT_ALPHA
    muted: bool = False


@dataclass(frozen=True)
class ListAlertRules(Message["list[StoredRule]"]):
    workspace_id: str


@dataclass(frozen=True)
class GetAlertRule(Message["StoredRule"]):
    workspace_id: str
    rule_id: uuid.UUID


@dataclass(frozen=True)
class UpdateAlertRule(Message["StoredRule"]):
    """``changes``: only the fields given (name, segment, direction, min_n, min_prompts, alpha,
    muted)."""

    workspace_id: str
    rule_id: uuid.UUID
    changes: dict[str, Any]


@dataclass(frozen=True)
class DeleteAlertRule(Message[None]):
    workspace_id: str
    rule_id: uuid.UUID


@dataclass(frozen=True)
class SendTestAlert(Message["tuple[uuid.UUID, int]"]):
    """A test alert of the rule through every channel of the workspace (marked as a test).
    Returns (alert id, deliveries)."""

    workspace_id: str
    rule_id: uuid.UUID


# -- channels ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateAlertChannel(Message["CreatedChannel"]):
    workspace_id: str
    kind: str  # webhook | slack | email
    target: str
    name: str | None = None


@dataclass(frozen=True)
class ListAlertChannels(Message["list[StoredChannel]"]):
    workspace_id: str


@dataclass(frozen=True)
class DeleteAlertChannel(Message[None]):
    workspace_id: str
    channel_id: uuid.UUID


# -- fired alerts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ListAlerts(Message["AlertPage"]):
    workspace_id: str
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True)
class GetAlert(Message["AlertWithDeliveries"]):
    workspace_id: str
    alert_id: uuid.UUID


# -- the workers' steps -----------------------------------------------------------------------
@dataclass(frozen=True)
class EvaluateClosedPeriods(Message["list[Evaluation]"]):
    """Evaluate every workspace's rules over the last closed week, once per (workspace, week):
    the week that ended before ``now`` against the week before it."""

    now: datetime
    workspace_id: str | None = None  # None: every workspace with an active rule


@dataclass(frozen=True)
class EvaluateAfterSlot(Message["Evaluation"]):
    """Evaluate a workspace's rules after one of its schedule slots completed
    (``collection.slot-completed.v1``), once per (workspace, schedule, slot): the open ISO week
    the slot completed in, so far, against the week before it. ``run_ids``: the runs the slot
    produced; while some are not recorded here yet the evaluation waits (a retryable error),
    at most until ``completed_at`` + the handler's ``alert_slot_wait_s``."""

    workspace_id: str
    schedule_id: str
    slot: datetime
    completed_at: datetime
    run_ids: tuple[str, ...] = ()
    now: datetime | None = None  # None: the clock's


@dataclass(frozen=True)
class DeliverDueAlerts(Message["dict[str, int]"]):
    """Send up to ``limit`` due deliveries (the delivery worker's step)."""

    limit: int = 20
