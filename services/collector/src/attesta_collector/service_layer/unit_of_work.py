"""The collector's unit of work and repositories, and the other ports its service layer uses
(the engines it asks, the classifier's brand directory).

``adapters/postgres.py`` implements the repositories on PostgreSQL, ``adapters/memory.py`` in
memory (the fakes of the service layer's unit tests); ``tests/test_stores.py`` runs one suite
against both. A stored row is a read-only mapping of the table's columns (asyncpg's ``Record``
on PostgreSQL, a dict in the fakes): the HTTP edge turns it into the API's models.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol

from attesta_collector.domain.keys import SealedSecret
from attesta_collector.domain.model import BrandNames, EngineAnswer, EngineFault, EngineSpec
from attesta_platform.unit_of_work import Outbox

Row = Mapping[str, Any]
Rows = list[Row]  # (an alias: the repositories' own `list` methods shadow the builtin)


@dataclass(frozen=True)
class Collected:
    """What a collected sample records on its collection."""

    run_id: str | None
    model: str
    answer_sha256: str | None
    raw_sha256: str | None
    latency_ms: float | None
    usage: dict[str, int] | None
    sources: list[dict[str, Any]]
    # How it was collected (the engine's declared method at collection time) and the model
    # build the endpoint reported, with ``notes`` when a reported value was cleaned or dropped.
    collection_method: str | None = None
    model_build: dict[str, Any] | None = None


@dataclass(frozen=True)
class PlannedCollection:
    """One sample a planner writes (a re-plan of the same id changes nothing)."""

    collection_id: str
    workspace_id: str
    schedule_id: str
    prompt_id: str
    engine_id: str
    slot: datetime
    sample: int
    prompt_text: str
    brand_ids: list[str]
    prompt_set: str
    prompt_tags: dict[str, Any]


class PromptRepository(Protocol):
    async def add(self, row: dict[str, Any]) -> Row | None:
        """None when the workspace already has a prompt with the same key (set, locale, text)."""

    async def by_key(self, workspace_id: str, key: str) -> Row | None: ...

    async def get(self, workspace_id: str, prompt_id: str, *,
                  for_update: bool = False) -> Row | None: ...

    async def update(self, workspace_id: str, prompt_id: str, row: dict[str, Any]) -> Row | None:
        """None when another prompt of the workspace has the new key."""

    async def retire(self, workspace_id: str, prompt_id: str) -> Row | None: ...

    async def list(self, workspace_id: str, *, prompt_set: str | None, branded: bool | None,
                   tag: str | None, include_retired: bool, limit: int,
                   after: str | None) -> Rows: ...

    async def live(self, workspace_id: str) -> Rows:
        """The prompts not retired, by id."""


class EngineRepository(Protocol):
    async def add(self, workspace_id: str, engine_id: str, spec: dict[str, Any]) -> Row | None:
        """None when the engine exists."""

    async def replace(self, workspace_id: str, engine_id: str,
                      spec: dict[str, Any]) -> Row | None: ...

    async def get(self, workspace_id: str, engine_id: str) -> Row | None: ...

    async def list(self, workspace_id: str | None) -> Rows: ...

    async def retire(self, workspace_id: str, engine_id: str) -> Row | None: ...

    async def with_pending(self) -> Rows:
        """The engines that have claimable collections (a worker's round)."""


class SecretRepository(Protocol):
    """A workspace's engine secrets: sealed values, retired (their sealed value forgotten),
    never deleted."""

    async def add(self, workspace_id: str, secret_id: str, name: str,
                  sealed: SealedSecret) -> Row | None:
        """None when a live secret of the workspace has this name."""

    async def get(self, workspace_id: str, secret_id: str) -> Row | None:
        """With the sealed columns (kek_id, wrapped_key, ciphertext; NULL once retired)."""

    async def list(self, workspace_id: str, include_retired: bool) -> Rows:
        """Metadata only: secret_id, name, created_at, retired_at."""

    async def retire(self, workspace_id: str, secret_id: str) -> Row | None:
        """Retired, and its wrapped key and ciphertext erased (nothing can open it again)."""

    async def sealed_under_other_kek(self, kek_id: str, limit: int) -> Rows:
        """Live secrets wrapped by another KEK (for ``rewrap``), locked."""

    async def rewrap(self, workspace_id: str, secret_id: str, sealed: SealedSecret) -> bool: ...


class ScheduleRepository(Protocol):
    async def add(self, workspace_id: str, schedule_id: str, spec: dict[str, Any], active: bool,
                  next_due_at: datetime) -> Row | None:
        """None when the schedule exists."""

    async def update(self, workspace_id: str, schedule_id: str, spec: dict[str, Any],
                     active: bool, next_due_at: datetime) -> Row | None:
        """Also clears the planning error (the change may be its fix)."""

    async def get(self, workspace_id: str, schedule_id: str, *,
                  for_update: bool = False) -> Row | None: ...

    async def list(self, workspace_id: str) -> Rows: ...

    async def retire(self, workspace_id: str, schedule_id: str) -> Row | None: ...

    async def claim_due(self, now: datetime, limit: int) -> Rows:
        """Due schedules, locked until the unit of work ends; another planner skips them."""

    async def mark_planned(self, workspace_id: str, schedule_id: str,
                           planned_through: datetime | None, next_due_at: datetime) -> None:
        """Also clears the planning error."""

    async def mark_plan_failed(self, workspace_id: str, schedule_id: str, reason: str,
                               at: datetime, next_due_at: datetime) -> None:
        """Keep the planning error and its time, count it in ``plan_failures`` and move
        ``next_due_at`` (the retry)."""

    async def add_slot(self, workspace_id: str, schedule_id: str, slot: datetime,
                       collections: int, skipped_before: int, trigger: str) -> bool:
        """Record a planned slot; False when it was planned before."""

    async def complete_slots(self, limit: int) -> Rows:
        """Mark completed (once) up to ``limit`` open slots whose every collection is collected
        or failed, locked so another sweeper skips them; each row: ``workspace_id``,
        ``schedule_id``, ``slot``, ``completed_at``, ``planned``, ``collected``, ``failed``
        and ``run_ids`` (of the collected samples)."""


class CollectionRepository(Protocol):
    async def add(self, planned: Sequence[PlannedCollection]) -> int:
        """Store the new ones (existing ids are kept as they are); returns how many were new."""

    async def claim(self, workspace_id: str, engine_id: str, owner: str, lease_s: float,
                    limit: int, schedule_id: str | None = None) -> Rows:
        """Lease up to ``limit`` pending collections of one engine (oldest slot first); each
        claim counts in ``claims``."""

    async def store_raws(self, bodies: dict[str, bytes]) -> None:
        """Raw bodies by their SHA-256 (known ones are left as they are)."""

    async def finish_collected(self, collection_id: str, c: Collected, attempts: int,
                               from_status: tuple[str, ...] = ("pending",)) -> bool:
        """False when the collection is not in ``from_status`` (finished elsewhere)."""

    async def finish_collected_many(self, items: Sequence[tuple[str, Collected, int]]) -> set[str]:
        """``finish_collected`` of many pending collections; the ids it moved."""

    async def finish_failed(self, collection_id: str, reason: str, attempts: int,
                            from_status: tuple[str, ...] = ("pending",)) -> Row | None:
        """The failed collection, or None when it was not in ``from_status``."""

    async def mark_awaiting(self, collection_id: str) -> bool:
        """pending -> awaiting_reply (our assistant was asked); False if not pending."""

    async def expired_awaiting(self, older_than_s: float, limit: int) -> Rows:
        """Collections awaiting a reply for longer than ``older_than_s``, locked."""

    async def get(self, collection_id: str) -> Row | None: ...

    async def list(self, workspace_id: str, *, schedule_id: str | None, status: str | None,
                   slot: datetime | None, limit: int, after: str | None) -> Rows: ...

    async def progress(self, workspace_id: str, schedule_id: str,
                       slot: datetime) -> dict[str, int]:
        """How many collections of the slot are in each status."""

    async def raw(self, sha256: str) -> bytes | None: ...


class UnitOfWork(Protocol):
    prompts: PromptRepository
    engines: EngineRepository
    schedules: ScheduleRepository
    collections: CollectionRepository
    secrets: SecretRepository
    outbox: Outbox  # no inbox: every intake is idempotent by a status guard

    async def __aenter__(self) -> UnitOfWork: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def commit(self) -> None: ...

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A block without a transaction (each statement commits on its own)."""

    def savepoint(self) -> AbstractAsyncContextManager[None]:
        """A nested transaction inside the block: leaving it with an exception undoes what it
        wrote and re-raises, and the unit of work goes on (one schedule's failed plan is not
        every schedule's)."""


# -- the other ports ----------------------------------------------------------------------------
class BrandsUnavailable(Exception):
    """The classifier could not be asked (the caller answers 503, nothing is guessed)."""


class BrandDirectory(Protocol):
    async def brands(self, workspace_id: str) -> list[BrandNames]: ...


class Sealer(Protocol):
    """Seals a secret's value for storage (``adapters.keys.SecretBox``)."""

    def seal(self, workspace_id: str, secret_id: str, value: str) -> SealedSecret: ...


class EngineChecks(Protocol):
    """What an engine may name, checked at create and update (``adapters.engines``)."""

    async def endpoint_refusal(self, base_url: str) -> str | None:
        """Why the outbound policy refuses ``base_url`` (the URL problem or the address class
        only), or None. A host that does not resolve now passes: every call checks again."""

    def operator_key_available(self, workspace_id: str, name: str) -> bool:
        """The operator lists ``name`` for the workspace and its value is there."""


class EngineClient(Protocol):
    async def ask(self, prompt: str, on_attempt: Callable[[int, EngineFault | None], None]
                  | None = None) -> tuple[EngineAnswer, int]:
        """The answer and the attempts it took; raises the last ``EngineFault``."""


# One client per (workspace, engine spec) (``adapters.engines.openai_engines``).
EngineClients = Callable[[str, EngineSpec], EngineClient]
