"""Everything the collector can be asked to do, as data: commands (imperative) and queries
(Get.../List...). Each subclasses ``Message[Result]``, so ``await bus.handle(cmd)`` is typed;
``service_layer/handlers.py`` maps each to its handler. ``ws`` is the caller's workspace; what
a client sends is the API's contract model itself (``PromptSpec``, ``EngineSpec``, ...), carried
as it is, and an import answers with the contract's ``ImportResult``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from attesta_collector.domain.model import EngineSpec, PromptSpec, PromptUpdate, ScheduleSpec
from attesta_contracts.api.collector import ImportResult, SecretSpec
from attesta_contracts.chat import ChatAnswered
from attesta_platform.bus import Message

Row = Mapping[str, Any]  # a stored row; the entrypoints make the contract views of it
Rows = list[Row]


# -- prompts -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatePrompt(Message[Row]):
    ws: str
    spec: PromptSpec


@dataclass(frozen=True)
class ListPrompts(Message[Rows]):
    ws: str
    prompt_set: str | None = None
    branded: bool | None = None
    tag: str | None = None
    include_retired: bool = False
    limit: int = 200
    after: str | None = None


@dataclass(frozen=True)
class GetPrompt(Message[Row]):
    ws: str
    prompt_id: str


@dataclass(frozen=True)
class UpdatePrompt(Message[Row]):
    ws: str
    prompt_id: str
    change: PromptUpdate


@dataclass(frozen=True)
class RetirePrompt(Message[Row]):
    ws: str
    prompt_id: str


@dataclass(frozen=True)
class ImportPrompts(Message[ImportResult]):
    ws: str
    fmt: str  # csv | jsonl
    content: bytes


# -- engines -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateEngine(Message[Row]):
    ws: str
    spec: EngineSpec


@dataclass(frozen=True)
class ListEngines(Message[Rows]):
    ws: str


@dataclass(frozen=True)
class ReplaceEngine(Message[Row]):
    ws: str
    engine_id: str
    spec: EngineSpec


@dataclass(frozen=True)
class RetireEngine(Message[Row]):
    ws: str
    engine_id: str


# -- engine secrets ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateSecret(Message[Row]):
    ws: str
    spec: SecretSpec


@dataclass(frozen=True)
class ListSecrets(Message[Rows]):
    ws: str
    include_retired: bool = False


@dataclass(frozen=True)
class RetireSecret(Message[Row]):
    ws: str
    secret_id: str


# -- schedules and planning --------------------------------------------------------------------
@dataclass(frozen=True)
class CreateSchedule(Message[Row]):
    ws: str
    spec: ScheduleSpec


@dataclass(frozen=True)
class ListSchedules(Message[Rows]):
    ws: str


@dataclass(frozen=True)
class ReplaceSchedule(Message[Row]):
    ws: str
    schedule_id: str
    spec: ScheduleSpec


@dataclass(frozen=True)
class RetireSchedule(Message[Row]):
    ws: str
    schedule_id: str


@dataclass(frozen=True)
class PlanSlotNow(Message[tuple[datetime, int]]):
    """Plan one slot of a schedule now (default: the cadence's current one): (slot, new)."""

    ws: str
    schedule_id: str
    slot: datetime | None = None


@dataclass(frozen=True)
class PlanDue(Message[int]):
    """Plan every due schedule this instance can lock (the planner's tick): new collections."""


@dataclass(frozen=True)
class CompleteSlots(Message[int]):
    """Announce, once each, the slots whose every sample was collected or given up (the slot
    sweeper's tick): how many were announced."""

    limit: int = 100


# -- collections -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ListCollections(Message[Rows]):
    """``brand_id``: label every source owned / competitor / third_party for that brand."""

    ws: str
    schedule_id: str | None = None
    status: str | None = None
    slot: datetime | None = None
    brand_id: str | None = None
    limit: int = 200
    after: str | None = None


@dataclass(frozen=True)
class GetCollection(Message[Row]):
    ws: str
    collection_id: str


@dataclass(frozen=True)
class GetRawResponse(Message[tuple[str, bytes]]):
    """(SHA-256, the engine's raw body byte for byte) of a collected sample."""

    ws: str
    collection_id: str


@dataclass(frozen=True)
class GetSlotProgress(Message[dict[str, int]]):
    ws: str
    schedule_id: str
    slot: datetime


# -- our assistant -----------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkAssistantAnswer(Message[str | None]):
    """A reply on chat.answered.v1: linked to its collection if it is ours."""

    answer: ChatAnswered


@dataclass(frozen=True)
class ExpireAssistantRequests(Message[int]):
    timeout_s: float
