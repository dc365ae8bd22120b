"""In-memory repositories that behave like the PostgreSQL ones (the fakes of the service
layer's unit tests; ``tests/test_stores.py`` runs one suite against both). Units of work that
share a ``CollectorState`` are one database for tests that run them one after another: a
rollback puts back the state as the block found it. Rows are dicts with the tables' columns."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from attesta_collector.service_layer.unit_of_work import (
    Collected,
    CollectionRepository,
    EngineRepository,
    PlannedCollection,
    PromptRepository,
    Row,
    Rows,
    ScheduleRepository,
    SecretRepository,
)
from attesta_collector.domain.keys import SealedSecret
from attesta_platform.unit_of_work import InMemoryUnitOfWork, MemoryState

Key = tuple[str, str]  # (workspace id, id)


@dataclass
class CollectorState(MemoryState):
    prompts: dict[Key, dict[str, Any]] = field(default_factory=dict)
    engines: dict[Key, dict[str, Any]] = field(default_factory=dict)
    schedules: dict[Key, dict[str, Any]] = field(default_factory=dict)
    planned_slots: set[tuple[str, str, datetime]] = field(default_factory=set)
    completed_slots: set[tuple[str, str, datetime]] = field(default_factory=set)
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    raws: dict[str, bytes] = field(default_factory=dict)
    secrets: dict[Key, dict[str, Any]] = field(default_factory=dict)


def _now() -> datetime:
    return datetime.now(UTC)


def _copy(row: dict[str, Any] | None) -> Row | None:
    return None if row is None else dict(row)


def _retire(row: dict[str, Any] | None, **also: Any) -> Row | None:
    if row is not None:
        row.update(retired_at=row["retired_at"] or _now(), updated_at=_now(), **also)
    return _copy(row)


class InMemoryPrompts:
    def __init__(self, state: CollectorState) -> None:
        self.state = state

    async def add(self, row: dict[str, Any]) -> Row | None:
        if await self.by_key(row["workspace_id"], row["prompt_key"]) is not None:
            return None
        now = _now()
        stored = {**row, "created_at": now, "updated_at": now, "retired_at": None}
        self.state.prompts[(row["workspace_id"], row["prompt_id"])] = stored
        return dict(stored)

    async def by_key(self, workspace_id: str, key: str) -> Row | None:
        return next((dict(p) for (ws, _), p in self.state.prompts.items()
                     if ws == workspace_id and p["prompt_key"] == key), None)

    async def get(self, workspace_id: str, prompt_id: str, *,
                  for_update: bool = False) -> Row | None:
        return _copy(self.state.prompts.get((workspace_id, prompt_id)))

    async def update(self, workspace_id: str, prompt_id: str, row: dict[str, Any]) -> Row | None:
        other = await self.by_key(workspace_id, row["prompt_key"])
        if other is not None and other["prompt_id"] != prompt_id:
            return None
        stored = self.state.prompts.get((workspace_id, prompt_id))
        if stored is None:
            return None
        stored.update({k: v for k, v in row.items() if k not in ("workspace_id", "prompt_id")},
                      updated_at=_now())
        return dict(stored)

    async def retire(self, workspace_id: str, prompt_id: str) -> Row | None:
        return _retire(self.state.prompts.get((workspace_id, prompt_id)))

    async def list(self, workspace_id: str, *, prompt_set: str | None, branded: bool | None,
                   tag: str | None, include_retired: bool, limit: int,
                   after: str | None) -> Rows:
        found = [p for (ws, pid), p in sorted(self.state.prompts.items())
                 if ws == workspace_id and (prompt_set is None or p["prompt_set"] == prompt_set)
                 and (branded is None or p["branded"] == branded)
                 and (tag is None or tag in [p["tags"].get(k) for k in
                                             ("topic", "persona", "funnel")])
                 and (include_retired or p["retired_at"] is None)
                 and (after is None or pid > after)]
        return [dict(p) for p in found[:limit]]

    async def live(self, workspace_id: str) -> Rows:
        return await self.list(workspace_id, prompt_set=None, branded=None, tag=None,
                               include_retired=False, limit=len(self.state.prompts), after=None)


class InMemoryEngines:
    def __init__(self, state: CollectorState) -> None:
        self.state = state

    async def add(self, workspace_id: str, engine_id: str, spec: dict[str, Any]) -> Row | None:
        if (workspace_id, engine_id) in self.state.engines:
            return None
        now = _now()
        row = {"workspace_id": workspace_id, "engine_id": engine_id, "spec": spec,
               "created_at": now, "updated_at": now, "retired_at": None}
        self.state.engines[(workspace_id, engine_id)] = row
        return dict(row)

    async def replace(self, workspace_id: str, engine_id: str,
                      spec: dict[str, Any]) -> Row | None:
        row = self.state.engines.get((workspace_id, engine_id))
        if row is not None:
            row.update(spec=spec, updated_at=_now())
        return _copy(row)

    async def get(self, workspace_id: str, engine_id: str) -> Row | None:
        return _copy(self.state.engines.get((workspace_id, engine_id)))

    async def list(self, workspace_id: str | None) -> Rows:
        return [dict(e) for (ws, _), e in sorted(self.state.engines.items())
                if workspace_id is None or ws == workspace_id]

    async def retire(self, workspace_id: str, engine_id: str) -> Row | None:
        return _retire(self.state.engines.get((workspace_id, engine_id)))

    async def with_pending(self) -> Rows:
        claimable = {(c["workspace_id"], c["engine_id"]) for c in self.state.collections.values()
                     if _claimable(c)}
        return [dict(e) for key, e in sorted(self.state.engines.items()) if key in claimable]


def _claimable(c: dict[str, Any]) -> bool:
    return c["status"] == "pending" and (c["lease_until"] is None or c["lease_until"] < _now())


NO_PLAN_ERROR: dict[str, Any] = {"plan_error": None, "plan_error_at": None, "plan_failures": 0}


class InMemorySchedules:
    def __init__(self, state: CollectorState) -> None:
        self.state = state

    async def add(self, workspace_id: str, schedule_id: str, spec: dict[str, Any], active: bool,
                  next_due_at: datetime) -> Row | None:
        if (workspace_id, schedule_id) in self.state.schedules:
            return None
        now = _now()
        row = {"workspace_id": workspace_id, "schedule_id": schedule_id, "spec": spec,
               "active": active, "planned_through": None, "next_due_at": next_due_at,
               "created_at": now, "updated_at": now, "retired_at": None, **NO_PLAN_ERROR}
        self.state.schedules[(workspace_id, schedule_id)] = row
        return dict(row)

    async def update(self, workspace_id: str, schedule_id: str, spec: dict[str, Any],
                     active: bool, next_due_at: datetime) -> Row | None:
        row = self.state.schedules.get((workspace_id, schedule_id))
        if row is not None:
            row.update(spec=spec, active=active, next_due_at=next_due_at, updated_at=_now(),
                       **NO_PLAN_ERROR)
        return _copy(row)

    async def get(self, workspace_id: str, schedule_id: str, *,
                  for_update: bool = False) -> Row | None:
        return _copy(self.state.schedules.get((workspace_id, schedule_id)))

    async def list(self, workspace_id: str) -> Rows:
        return [dict(s) for (ws, _), s in sorted(self.state.schedules.items())
                if ws == workspace_id]

    async def retire(self, workspace_id: str, schedule_id: str) -> Row | None:
        return _retire(self.state.schedules.get((workspace_id, schedule_id)), active=False)

    async def claim_due(self, now: datetime, limit: int) -> Rows:
        due = [s for s in self.state.schedules.values() if s["active"] and not s["retired_at"]
               and s["next_due_at"] is not None and s["next_due_at"] <= now]
        return [dict(s) for s in sorted(due, key=lambda s: (s["next_due_at"], s["workspace_id"],
                                                            s["schedule_id"]))[:limit]]

    async def mark_planned(self, workspace_id: str, schedule_id: str,
                           planned_through: datetime | None, next_due_at: datetime) -> None:
        row = self.state.schedules.get((workspace_id, schedule_id))
        if row is not None:
            through = [t for t in (row["planned_through"], planned_through) if t is not None]
            row.update(planned_through=max(through, default=None), next_due_at=next_due_at,
                       **NO_PLAN_ERROR)

    async def mark_plan_failed(self, workspace_id: str, schedule_id: str, reason: str,
                               at: datetime, next_due_at: datetime) -> None:
        row = self.state.schedules.get((workspace_id, schedule_id))
        if row is not None:
            row.update(plan_error=reason, plan_error_at=at,
                       plan_failures=row["plan_failures"] + 1, next_due_at=next_due_at)

    async def add_slot(self, workspace_id: str, schedule_id: str, slot: datetime,
                       collections: int, skipped_before: int, trigger: str) -> bool:
        key = (workspace_id, schedule_id, slot)
        new = key not in self.state.planned_slots
        self.state.planned_slots.add(key)
        return new

    async def complete_slots(self, limit: int) -> Rows:
        out: list[Row] = []
        for key in sorted(self.state.planned_slots - self.state.completed_slots,
                          key=lambda k: k[2]):
            mine = [c for c in self.state.collections.values()
                    if (c["workspace_id"], c["schedule_id"], c["slot"]) == key]
            if len(out) >= limit or any(c["status"] in ("pending", "awaiting_reply")
                                        for c in mine):
                continue
            self.state.completed_slots.add(key)
            out.append({"workspace_id": key[0], "schedule_id": key[1], "slot": key[2],
                        "completed_at": _now(), "planned": len(mine),
                        "collected": sum(c["status"] == "collected" for c in mine),
                        "failed": sum(c["status"] == "failed" for c in mine),
                        "run_ids": sorted(c["run_id"] for c in mine
                                          if c["status"] == "collected" and c.get("run_id"))})
        return out


class InMemoryCollections:
    def __init__(self, state: CollectorState) -> None:
        self.state = state

    async def add(self, planned: Sequence[PlannedCollection]) -> int:
        new = 0
        for p in planned:
            if p.collection_id in self.state.collections:
                continue
            self.state.collections[p.collection_id] = {
                **asdict(p), "status": "pending", "claims": 0, "attempts": 0,
                "lease_owner": None, "lease_until": None, "last_error": None, "run_id": None,
                "model": None, "answer_sha256": None, "raw_sha256": None, "latency_ms": None,
                "usage": None, "sources": None, "requested_at": None, "finished_at": None,
                "created_at": _now()}
            new += 1
        return new

    async def claim(self, workspace_id: str, engine_id: str, owner: str, lease_s: float,
                    limit: int, schedule_id: str | None = None) -> Rows:
        found = sorted((c for c in self.state.collections.values()
                        if c["workspace_id"] == workspace_id and c["engine_id"] == engine_id
                        and _claimable(c)
                        and (schedule_id is None or c["schedule_id"] == schedule_id)),
                       key=lambda c: (c["slot"], c["collection_id"]))[:limit]
        for c in found:
            c.update(lease_owner=owner, lease_until=_now() + timedelta(seconds=lease_s),
                     claims=c["claims"] + 1)
        return [dict(c) for c in found]

    async def store_raws(self, bodies: dict[str, bytes]) -> None:
        for sha, body in bodies.items():
            self.state.raws.setdefault(sha, body)

    async def finish_collected(self, collection_id: str, c: Collected, attempts: int,
                               from_status: tuple[str, ...] = ("pending",)) -> bool:
        row = self.state.collections.get(collection_id)
        if row is None or row["status"] not in from_status:
            return False
        if c.raw_sha256 is not None and c.raw_sha256 not in self.state.raws:
            raise KeyError(f"no raw response {c.raw_sha256}")  # the foreign key
        row.update(asdict(c), status="collected", attempts=row["attempts"] + attempts,
                   last_error=None, lease_owner=None, lease_until=None, finished_at=_now())
        return True

    async def finish_collected_many(self, items: Sequence[tuple[str, Collected, int]]) -> set[str]:
        return {i for i, c, attempts in items if await self.finish_collected(i, c, attempts)}

    async def finish_failed(self, collection_id: str, reason: str, attempts: int,
                            from_status: tuple[str, ...] = ("pending",)) -> Row | None:
        row = self.state.collections.get(collection_id)
        if row is None or row["status"] not in from_status:
            return None
        row.update(status="failed", last_error=reason[:4000], attempts=row["attempts"] + attempts,
                   lease_owner=None, lease_until=None, finished_at=_now())
        return dict(row)

    async def mark_awaiting(self, collection_id: str) -> bool:
        row = self.state.collections.get(collection_id)
        if row is None or row["status"] != "pending":
            return False
        row.update(status="awaiting_reply", requested_at=_now(), attempts=row["attempts"] + 1,
                   lease_owner=None, lease_until=None)
        return True

    async def expired_awaiting(self, older_than_s: float, limit: int) -> Rows:
        before = _now() - timedelta(seconds=older_than_s)
        found = [c for c in self.state.collections.values()
                 if c["status"] == "awaiting_reply" and c["requested_at"] < before]
        return [dict(c) for c in sorted(found, key=lambda c: c["requested_at"])[:limit]]

    async def get(self, collection_id: str) -> Row | None:
        return _copy(self.state.collections.get(collection_id))

    async def list(self, workspace_id: str, *, schedule_id: str | None, status: str | None,
                   slot: datetime | None, limit: int, after: str | None) -> Rows:
        found = [c for i, c in sorted(self.state.collections.items())
                 if c["workspace_id"] == workspace_id
                 and (schedule_id is None or c["schedule_id"] == schedule_id)
                 and (status is None or c["status"] == status)
                 and (slot is None or c["slot"] == slot) and (after is None or i > after)]
        return [dict(c) for c in found[:limit]]

    async def progress(self, workspace_id: str, schedule_id: str,
                       slot: datetime) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.state.collections.values():
            if (c["workspace_id"], c["schedule_id"], c["slot"]) == (workspace_id, schedule_id, slot):
                counts[c["status"]] = counts.get(c["status"], 0) + 1
        return counts

    async def raw(self, sha256: str) -> bytes | None:
        return self.state.raws.get(sha256)


SECRET_FIELDS = ("workspace_id", "secret_id", "name", "created_at", "retired_at")


class InMemorySecrets:
    def __init__(self, state: CollectorState) -> None:
        self.state = state

    async def add(self, workspace_id: str, secret_id: str, name: str,
                  sealed: SealedSecret) -> Row | None:
        if (workspace_id, secret_id) in self.state.secrets or any(
                ws == workspace_id and s["name"] == name and s["retired_at"] is None
                for (ws, _), s in self.state.secrets.items()):
            return None
        row = {"workspace_id": workspace_id, "secret_id": secret_id, "name": name,
               "kek_id": sealed.kek_id, "wrapped_key": sealed.wrapped_key,
               "ciphertext": sealed.ciphertext, "created_at": _now(), "retired_at": None}
        self.state.secrets[(workspace_id, secret_id)] = row
        return {k: row[k] for k in SECRET_FIELDS}

    async def get(self, workspace_id: str, secret_id: str) -> Row | None:
        return _copy(self.state.secrets.get((workspace_id, secret_id)))

    async def list(self, workspace_id: str, include_retired: bool) -> Rows:
        found = [s for (ws, _), s in self.state.secrets.items()
                 if ws == workspace_id and (include_retired or s["retired_at"] is None)]
        return [{k: s[k] for k in SECRET_FIELDS}
                for s in sorted(found, key=lambda s: (s["created_at"], s["secret_id"]))]

    async def retire(self, workspace_id: str, secret_id: str) -> Row | None:
        row = self.state.secrets.get((workspace_id, secret_id))
        if row is None:
            return None
        row.update(retired_at=row["retired_at"] or _now(), kek_id=None, wrapped_key=None,
                   ciphertext=None)
        return {k: row[k] for k in SECRET_FIELDS}

    async def sealed_under_other_kek(self, kek_id: str, limit: int) -> Rows:
        found: Rows = [dict(s) for _, s in sorted(self.state.secrets.items())
                       if s["retired_at"] is None and s["kek_id"] != kek_id]
        return found[:limit]

    async def rewrap(self, workspace_id: str, secret_id: str, sealed: SealedSecret) -> bool:
        row = self.state.secrets.get((workspace_id, secret_id))
        if row is None or row["retired_at"] is not None or row["ciphertext"] != sealed.ciphertext:
            return False
        row.update(kek_id=sealed.kek_id, wrapped_key=sealed.wrapped_key)
        return True


class InMemoryCollectorUnitOfWork(InMemoryUnitOfWork):
    state: CollectorState

    def __init__(self, state: CollectorState | None = None) -> None:
        super().__init__(state or CollectorState())

    def bind(self) -> None:
        self.prompts: PromptRepository = InMemoryPrompts(self.state)
        self.engines: EngineRepository = InMemoryEngines(self.state)
        self.secrets: SecretRepository = InMemorySecrets(self.state)
        self.schedules: ScheduleRepository = InMemorySchedules(self.state)
        self.collections: CollectionRepository = InMemoryCollections(self.state)

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        saved = copy.deepcopy(self.state)
        try:
            yield
        except BaseException:
            # Restore in place, like a rollback: the repositories hold this very object.
            self.state.__dict__.update(saved.__dict__)
            raise
