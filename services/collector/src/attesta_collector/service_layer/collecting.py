"""Collecting: claim pending collections, ask their engine, record each answer exactly once.

- A worker leases collections of one engine at a time, at most as many as the engine's free
  concurrency in this process (``FOR UPDATE SKIP LOCKED``: instances never claim the same row).
- The engine is called with no transaction open. Then one transaction moves the collection
  ``pending -> collected`` (only if still pending), stores the raw response content-addressed
  and stages the run on ``runs.recorded.v1`` in the outbox with an event id derived from the
  collection id. If another instance already recorded the sample, nothing is staged. Answers
  that finish while a recording transaction commits share the next one (group commit).
- Each run carries the engine's declared collection method and the model build the endpoint
  reported (domain ``reported_build``: cleaned and bounded; why a value was changed or dropped
  is kept on the collection, never a failure of the sample).
- The engine's raw body is also staged, in the same transaction, on
  ``collection.response-captured.v1`` for the public evidence log (when it is UTF-8 text of at
  most ``max_evidence_bytes``; a larger body stays in the collector's own store only).
- An engine fault that survives the engine's retry policy fails the collection with its reason
  (visible through the API) and stages ``collection.failed.v1``.
- A crash (kill -9) mid-call loses only the lease: when it expires the collection is claimed
  again and asked again; a collection claimed more than ``max_claims`` times fails.
- Our own assistant is asked through Kafka (``chat.requested.v1``, request id = collection id);
  its answer is already a run (the answer service records it), so the collector only links the
  reply's run id to the collection and records no second run.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from attesta_collector.domain.commands import ExpireAssistantRequests, LinkAssistantAnswer
from attesta_collector.domain.model import EngineFault, EngineSpec, ReportedBuild
from attesta_collector.domain.sources import extract_sources
from attesta_collector.service_layer.unit_of_work import (
    Collected,
    EngineClient,
    EngineClients,
    Row,
    UnitOfWork,
)
from attesta_contracts import derived_id
from attesta_contracts.chat import QUESTION_MAX_CHARS, AnswerStatus, ChatRequested
from attesta_contracts.collection import CollectionFailed, EngineResponseCaptured
from attesta_contracts.runs import EngineUsage, PromptContext, RunRecorded
from attesta_contracts.topics import (
    CHAT_ANSWERED,
    CHAT_REQUESTED,
    COLLECTION_FAILED,
    ENGINE_RESPONSE_CAPTURED,
    RUNS_RECORDED,
    SLOT_COMPLETED,
)
from attesta_platform import outbox
from attesta_platform.logs import get_logger

log = get_logger("attesta.collector")
RUN_SOURCE = "collector"
PRODUCER = "collector"


@dataclass(frozen=True)
class CollectorTopics:
    runs_recorded: str = RUNS_RECORDED
    collection_failed: str = COLLECTION_FAILED
    chat_requested: str = CHAT_REQUESTED
    chat_answered: str = CHAT_ANSWERED
    engine_response_captured: str = ENGINE_RESPONSE_CAPTURED
    slot_completed: str = SLOT_COMPLETED


@dataclass(frozen=True)
class CollectorLimits:
    # Raw bodies up to this size go to the evidence log through Kafka (the run and the body
    # each travel in one message; a broker's default message limit is 1 MiB).
    max_evidence_bytes: int = 512 * 1024
    max_claims: int = 5
    lease_margin_s: float = 30.0
    poll_s: float = 0.2
    # One claiming round (a few short queries) that takes longer than this is abandoned and
    # tried again: a claim that hangs on a connection PostgreSQL dropped must not stop the loop.
    claim_timeout_s: float = 30.0


def lease_seconds(spec: EngineSpec, margin_s: float) -> float:
    """Long enough for every attempt and backoff of the engine's policy, plus a margin."""
    r = spec.retry
    return spec.timeout_s * r.attempts + r.max_backoff_s * (r.attempts - 1) + margin_s


@dataclass
class _EngineState:
    spec_json: dict[str, Any]
    spec: EngineSpec
    client: EngineClient | None  # None: our assistant, asked through Kafka
    inflight: int = 0


@dataclass(frozen=True)
class _Answered:
    """An engine's answer, ready to record: the collection's new state and what to stage."""

    collection_id: str
    attempts: int
    raw: bytes
    raw_sha256: str
    staged: list[outbox.OutboxRow]  # the run, and the raw body for the evidence log
    collected: Collected


@dataclass
class Collector:
    # A new unit of work per task: each one holds its own connection while in a block.
    new_uow: Callable[[], UnitOfWork]
    owner: str
    engines: EngineClients  # a client per (workspace, spec) (adapters.engines.openai_engines)
    topics: CollectorTopics = CollectorTopics()
    limits: CollectorLimits = CollectorLimits()
    on_finished: Callable[[str, str], None] | None = None  # (collection id, status)
    _engines: dict[tuple[str, str], _EngineState] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _to_record: list[tuple[_Answered, asyncio.Future[bool]]] = field(default_factory=list)
    _recorder: asyncio.Task[None] | None = None

    # -- engines ------------------------------------------------------------------------------
    def _engine(self, ws: str, engine_id: str, spec_json: dict[str, Any]) -> _EngineState:
        key = (ws, engine_id)
        state = self._engines.get(key)
        if state is None or state.spec_json != spec_json:  # changed spec: a new client
            spec = EngineSpec.model_validate(spec_json)
            client = self.engines(ws, spec) if spec.kind == "openai" else None
            state = _EngineState(spec_json, spec, client, state.inflight if state else 0)
            self._engines[key] = state
        return state

    # -- the loop -----------------------------------------------------------------------------
    async def claim_and_start(self, schedule_id: str | None = None) -> int:
        """Claim what the engines' free concurrency allows and start it; returns how many."""
        started = 0
        # No transaction: each claim commits its leases at once, as the engines are read.
        uow = self.new_uow()
        async with uow.read():
            for row in await uow.engines.with_pending():
                ws, engine_id = row["workspace_id"], row["engine_id"]
                state = self._engine(ws, engine_id, row["spec"])
                free = state.spec.concurrency - state.inflight
                if free <= 0:
                    continue
                claimed = await uow.collections.claim(
                    ws, engine_id, self.owner,
                    lease_seconds(state.spec, self.limits.lease_margin_s), free, schedule_id)
                for c in claimed:
                    state.inflight += 1
                    task = asyncio.create_task(self._run_one(state, c, row["retired_at"]))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                    started += 1
        return started

    async def run(self, stop: asyncio.Event, schedule_id: str | None = None) -> None:
        """Collect until ``stop``; database outages are waited out.

        Whatever a claiming round raises, or if it hangs, the loop logs it and tries again: it
        runs as a background task nobody awaits until shutdown, so an exception escaping it
        would stop all collecting silently while the service still answers ready (found by the
        fault harness: after a PostgreSQL stop one collector never claimed again)."""
        delay = self.limits.poll_s
        while not stop.is_set():
            try:
                started = await asyncio.wait_for(self.claim_and_start(schedule_id),
                                                 self.limits.claim_timeout_s)
                delay = self.limits.poll_s
            except Exception as exc:  # noqa: BLE001 - the worker outlives every failure
                log.warning("claiming failed; retrying", error=repr(exc))
                started, delay = 0, min(delay * 2, 5.0)
            if not started:
                waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
                if self._tasks:
                    waiters.append(asyncio.ensure_future(
                        asyncio.wait(set(self._tasks), return_when=asyncio.FIRST_COMPLETED)))
                done, rest = await asyncio.wait(waiters, timeout=delay,
                                                return_when=asyncio.FIRST_COMPLETED)
                for w in rest:
                    w.cancel()
        await self.wait_idle()

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- one collection -----------------------------------------------------------------------
    async def _run_one(self, state: _EngineState, c: Row, retired_at: datetime | None) -> None:
        try:
            if retired_at is not None:
                await self._fail(c, "the engine was retired before this sample was collected", 0)
            elif c["claims"] > self.limits.max_claims:
                await self._fail(c, f"claimed {c['claims'] - 1} times without finishing "
                                    "(collector crashed or lost its lease each time)", 0)
            elif state.client is None:
                await self._request_assistant(c)
            else:
                await self._ask(state.spec, state.client, c)
        except Exception as exc:  # noqa: BLE001 - the lease expires and the sample is retried
            log.warning("collection interrupted; its lease will expire and it is retried",
                        collection_id=c["collection_id"], error=repr(exc))
        finally:
            state.inflight -= 1

    async def _ask(self, spec: EngineSpec, client: EngineClient, c: Row) -> None:
        requested_at = datetime.now(UTC)
        tried = [0]

        def count(n: int, fault: EngineFault | None) -> None:
            tried[0] = n

        try:
            answer, attempts = await client.ask(c["prompt_text"], count)
        except EngineFault as fault:
            await self._fail(c, f"{fault} (after {tried[0]} attempt{'s' if tried[0] != 1 else ''})",
                             tried[0])
            return
        answered_at = max(datetime.now(UTC), requested_at)
        sources = extract_sources(answer.text, answer.annotations, answer.citations)
        raw_sha = hashlib.sha256(answer.raw).hexdigest()
        run = RunRecorded(
            run_id=c["collection_id"], workspace_id=c["workspace_id"], engine=spec.name,
            model=answer.model[:200], prompt=c["prompt_text"], answer=answer.text,
            answer_sha256=hashlib.sha256(answer.text.encode("utf-8")).hexdigest(),
            brand_ids=list(c["brand_ids"]), requested_at=requested_at, answered_at=answered_at,
            source=RUN_SOURCE, sources=sources, collection_id=c["collection_id"],
            raw_response_sha256=raw_sha,
            usage=EngineUsage(**answer.usage) if answer.usage else None,
            latency_ms=round(answer.latency_ms, 3), prompt_context=prompt_context(c),
            collection_method=spec.collection_method, model_build=answer.reported.build)
        if answer.reported.notes:
            log.info("model build cleaned", collection_id=c["collection_id"],
                     notes=list(answer.reported.notes))
        staged = [outbox.staged(
            self.topics.runs_recorded, run.run_id, run, producer=PRODUCER,
            correlation_id=c["collection_id"],
            event_id=derived_id("collector-run", c["collection_id"]))]
        captured = self._captured(run, answer.raw, raw_sha, answered_at)
        if captured is not None:
            staged.append(captured)
        done = await self._record(_Answered(
            c["collection_id"], attempts, answer.raw, raw_sha, staged, Collected(
                run_id=run.run_id, model=run.model, answer_sha256=run.answer_sha256,
                raw_sha256=raw_sha, latency_ms=run.latency_ms, usage=answer.usage,
                sources=[s.model_dump(mode="json", exclude_none=True) for s in sources],
                collection_method=run.collection_method,
                model_build=stored_build(answer.reported))))
        if done and self.on_finished:
            self.on_finished(c["collection_id"], "collected")

    # -- recording: answers that finish together are written in one transaction -------------
    async def _record(self, item: _Answered) -> bool:
        """Queue ``item`` for the recorder and wait for its transaction; True when this call
        moved the collection to collected (False: another instance had)."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._to_record.append((item, done))
        if self._recorder is None or self._recorder.done():
            self._recorder = asyncio.create_task(self._record_queued())
        return await done

    async def _record_queued(self) -> None:
        """Write what is queued, one transaction per round: while one commits, the answers
        finishing meanwhile queue up for the next (group commit; fewer statements per answer).
        A batch that fails is written again one answer at a time, so one bad answer cannot
        hold back the others (its own lease then expires and it is asked again)."""
        while self._to_record:
            batch, self._to_record = self._to_record[:500], self._to_record[500:]
            for part in ([batch] if len(batch) == 1 else [batch, *([x] for x in batch)]):
                pending = [(i, f) for i, f in part if not f.done()]
                if not pending:
                    continue
                try:
                    moved = await self._write([i for i, _ in pending])
                except Exception as exc:  # noqa: BLE001 - written alone next, or retried
                    if len(part) == 1:
                        part[0][1].set_exception(exc)
                    continue
                for i, f in pending:  # then every later part finds nothing pending
                    f.set_result(i.collection_id in moved)

    async def _write(self, items: list[_Answered]) -> set[str]:
        uow = self.new_uow()
        async with uow:
            await uow.collections.store_raws({i.raw_sha256: i.raw for i in items})
            moved = await uow.collections.finish_collected_many(
                [(i.collection_id, i.collected, i.attempts) for i in items])
            await uow.outbox.add([row for i in items if i.collection_id in moved
                                  for row in i.staged])
            await uow.commit()
        return moved

    def _captured(self, run: RunRecorded, raw: bytes, raw_sha: str,
                  at: datetime) -> outbox.OutboxRow | None:
        """The outbox row of the raw body for the evidence log, or None when it cannot go there
        (over ``max_evidence_bytes``, or not UTF-8 text: the evidence store keeps text)."""
        if len(raw) > self.limits.max_evidence_bytes:
            return None
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        event = EngineResponseCaptured(
            run_id=run.run_id, collection_id=run.collection_id or run.run_id,
            workspace_id=run.workspace_id, content=content, sha256=raw_sha, captured_at=at)
        return outbox.staged(
            self.topics.engine_response_captured, run.run_id, event, producer=PRODUCER,
            correlation_id=event.collection_id,
            event_id=derived_id("collector-raw", event.collection_id))

    async def _fail(self, c: Row, reason: str, attempts: int,
                    from_status: tuple[str, ...] = ("pending",)) -> None:
        uow = self.new_uow()
        async with uow:
            row = await uow.collections.finish_failed(c["collection_id"], reason, attempts,
                                                      from_status)
            if row is not None:
                await stage_failed(uow, self.topics, row)
            await uow.commit()
        if row is not None:
            log.info("collection failed", collection_id=c["collection_id"], reason=reason)
            if self.on_finished:
                self.on_finished(c["collection_id"], "failed")

    async def _request_assistant(self, c: Row) -> None:
        if len(c["prompt_text"]) > QUESTION_MAX_CHARS:
            await self._fail(c, f"the assistant takes questions of at most {QUESTION_MAX_CHARS} "
                                "characters", 0)
            return
        request = ChatRequested(request_id=c["collection_id"], question=c["prompt_text"],
                                workspace_id=c["workspace_id"], reply_to=f"collector:{self.owner}",
                                prompt_context=prompt_context(c))
        uow = self.new_uow()
        async with uow:
            if await uow.collections.mark_awaiting(c["collection_id"]):
                await uow.outbox.add([outbox.staged(
                    self.topics.chat_requested, c["collection_id"], request, producer=PRODUCER,
                    correlation_id=c["collection_id"],
                    event_id=derived_id("collector-ask", c["collection_id"]))])
            await uow.commit()


def stored_build(reported: ReportedBuild) -> dict[str, Any] | None:
    """The collection's ``model_build`` column: the reported build and the notes on it."""
    if reported.build is None and not reported.notes:
        return None
    return {**(reported.build.model_dump(mode="json") if reported.build else {}),
            "notes": list(reported.notes)}


def prompt_context(c: Row) -> PromptContext:
    """The prompt id, set and tags the collection was planned with."""
    tags = c["prompt_tags"] or {}
    return PromptContext(prompt_id=c["prompt_id"], prompt_set=c["prompt_set"],
                         topic=tags.get("topic"), persona=tags.get("persona"),
                         funnel=tags.get("funnel"))


async def stage_failed(uow: UnitOfWork, topics: CollectorTopics, row: Row) -> None:
    event = CollectionFailed(
        collection_id=row["collection_id"], workspace_id=row["workspace_id"],
        schedule_id=row["schedule_id"], prompt_id=row["prompt_id"], engine_id=row["engine_id"],
        slot=row["slot"], sample=row["sample"], attempts=max(1, row["attempts"]),
        reason=row["last_error"] or "", failed_at=row["finished_at"] or datetime.now(UTC))
    await uow.outbox.add([outbox.staged(
        topics.collection_failed, row["collection_id"], event, producer=PRODUCER,
        correlation_id=row["collection_id"],
        event_id=derived_id("collector-failed", row["collection_id"]))])


async def link_assistant_answer(cmd: LinkAssistantAnswer, uow: UnitOfWork,
                                topics: CollectorTopics) -> str | None:
    """Link our assistant's reply to its collection (its run was recorded by the answer
    service: not recorded again). Replies to other callers are ignored. Idempotent."""
    answered = cmd.answer
    if not answered.request_id.startswith("col-"):
        return None
    async with uow:
        if answered.status == AnswerStatus.FAILED or not answered.run_id:
            row = await uow.collections.finish_failed(
                answered.request_id, f"the assistant failed: {answered.error or answered.status}",
                0, ("awaiting_reply",))
            if row is not None:
                await stage_failed(uow, topics, row)
            outcome = "failed" if row is not None else None
        else:
            sources = extract_sources(answered.answer, (), [
                c.source_url for c in answered.citations if c.source_url])
            done = await uow.collections.finish_collected(answered.request_id, Collected(
                run_id=answered.run_id, model=answered.generator or "assistant",
                answer_sha256=answered.answer_sha256, raw_sha256=None, latency_ms=None,
                usage=None, sources=[s.model_dump(mode="json", exclude_none=True)
                                     for s in sources], collection_method="assistant"),
                0, ("awaiting_reply", "failed"))
            outcome = "collected" if done else None
        await uow.commit()
    return outcome


async def expire_assistant_requests(cmd: ExpireAssistantRequests, uow: UnitOfWork,
                                    topics: CollectorTopics) -> int:
    """Requests to our assistant unanswered after ``timeout_s`` fail (a late reply still links)."""
    timeout_s = cmd.timeout_s
    failed = 0
    async with uow:
        for row in await uow.collections.expired_awaiting(timeout_s, 100):
            done = await uow.collections.finish_failed(
                row["collection_id"], f"timeout: no reply from the assistant within "
                                      f"{timeout_s:g} s", 0, ("awaiting_reply",))
            if done is not None:
                await stage_failed(uow, topics, done)
                failed += 1
        await uow.commit()
    return failed
