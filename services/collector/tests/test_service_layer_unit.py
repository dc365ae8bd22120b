"""The collector's service layer on the in-memory unit of work (no database, no broker, no
HTTP): the catalog's rules, planning, collecting with an engine client that answers or
fails, and our assistant's request/reply/expiry. What is staged in the outbox is what the relay
would publish."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from functools import partial

import orjson
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.adapters.memory import CollectorState, InMemoryCollectorUnitOfWork
from attesta_collector.domain.commands import (
    CreateEngine,
    CreatePrompt,
    CreateSchedule,
    ExpireAssistantRequests,
    GetCollection,
    GetPrompt,
    GetSlotProgress,
    ImportPrompts,
    LinkAssistantAnswer,
    PlanDue,
    PlanSlotNow,
    RetirePrompt,
    RetireSchedule,
    UpdatePrompt,
)
from attesta_collector.domain.model import (
    BrandNames,
    EngineAnswer,
    EngineFault,
    EngineSpec,
    FaultKind,
    PromptSpec,
    PromptUpdate,
    ScheduleSpec,
)
from attesta_collector.bootstrap import build_bus
from attesta_collector.service_layer.collecting import Collector, CollectorLimits, CollectorTopics
from attesta_collector.service_layer.planning import plan_due
from attesta_testing.collector import engine_checks, http_errors, random_box
from attesta_platform.http import ApiError
from attesta_contracts import derived_id
from attesta_contracts.chat import AnswerStatus, ChatAnswered

pytestmark = pytest.mark.unit

WS = "ws-unit"
SLOT = datetime(2026, 12, 4, 10, tzinfo=UTC)
BRANDS = StaticBrandDirectory({WS: [BrandNames("lumora", "Lumora", (), ("lumora.example",))]})
TOPICS = CollectorTopics()


@pytest.fixture
def state() -> CollectorState:
    return CollectorState()


@pytest.fixture
def new_uow(state):
    return partial(InMemoryCollectorUnitOfWork, state)


@pytest.fixture
def bus(new_uow):
    """The collector's bus (``build_bus``, as the service binds it) on the in-memory fakes."""
    return build_bus(new_uow, brands=BRANDS, engine_checks=engine_checks("127.0.0.1:9"),
                     sealer=random_box(), topics=TOPICS)


class ScriptedEngine:
    """An engine client that answers every prompt, or fails with ``fault``."""

    def __init__(self, fault: EngineFault | None = None) -> None:
        self.fault = fault
        self.asked: list[str] = []

    async def ask(self, prompt, on_attempt=None):
        self.asked.append(prompt)
        if self.fault is not None:
            if on_attempt:
                on_attempt(2, self.fault)
            raise self.fault
        raw = orjson.dumps({"answer": f"About {prompt}: see https://lumora.example/x"})
        return EngineAnswer(f"About {prompt}: see https://lumora.example/x", "m-1", raw,
                            usage={"total_tokens": 7}, latency_ms=3.0), 1


def staged(state: CollectorState, topic: str) -> list[dict]:
    return [orjson.loads(r.value) for r in state.outbox if r.topic == topic]


async def seed(bus, engine: dict, prompts: tuple[str, ...] = ("What does Lumora make?",
                                                             "Best sleep ring?")) -> None:
    for text in prompts:
        await bus.handle(CreatePrompt(WS, PromptSpec(text=text)))
    await bus.handle(CreateEngine(WS, EngineSpec(engine_id="e", **engine)))
    await bus.handle(CreateSchedule(WS, ScheduleSpec(
        schedule_id="sch", engine_ids=["e"], interval_s=3600, samples=2)))


async def collect(new_uow, engine: ScriptedEngine) -> Collector:
    collector = Collector(new_uow, "me", lambda ws, spec: engine, TOPICS, CollectorLimits())
    await collector.claim_and_start()
    await collector.wait_idle()
    return collector


async def test_catalog_rules(bus, state):
    created = await bus.handle(CreatePrompt(WS, PromptSpec(text="Is Lumora good?")))
    assert created["branded"] and created["branded_brand_ids"] == ["lumora"]
    with pytest.raises(ApiError) as dup, http_errors():
        await bus.handle(CreatePrompt(WS, PromptSpec(text="Is  Lumora good?")))
    assert dup.value.status == 409 and created["prompt_id"] in dup.value.reason
    other = await bus.handle(CreatePrompt(WS, PromptSpec(text="Any ring?")))
    with pytest.raises(ApiError) as clash, http_errors():
        await bus.handle(UpdatePrompt(WS, other["prompt_id"],
                                      PromptUpdate(text="Is Lumora good?")))
    assert clash.value.status == 409
    assert (await bus.handle(GetPrompt(WS, other["prompt_id"])))["text"] == "Any ring?"
    with pytest.raises(ApiError) as unknown, http_errors():
        await bus.handle(CreatePrompt(WS, PromptSpec(text="x", brand_ids=["no"])))
    assert unknown.value.status == 422
    await bus.handle(RetirePrompt(WS, created["prompt_id"]))
    with pytest.raises(ApiError) as retired, http_errors():
        await bus.handle(UpdatePrompt(WS, created["prompt_id"], PromptUpdate(locale="pt")))
    assert retired.value.status == 409
    with pytest.raises(ApiError) as no_engine, http_errors():
        await bus.handle(CreateSchedule(WS, ScheduleSpec(engine_ids=["ghost"], interval_s=60)))
    assert no_engine.value.status == 422 and "ghost" in no_engine.value.reason
    report = await bus.handle(ImportPrompts(WS, "csv", b"text\nAny ring?\nnew one\n\n"))
    assert (report.accepted, report.unchanged, report.refused) == (1, 1, 0)
    assert not state.outbox  # the catalog publishes nothing


async def test_planning_is_due_once_and_a_replan_adds_nothing(bus, new_uow, state):
    await seed(bus, {"name": "fake", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    now = datetime.now(UTC)
    # plan_due is called directly where the test sets the clock (``now``, not part of PlanDue)
    assert await plan_due(PlanDue(), new_uow(), now) == 4  # 2 prompts x 2 samples
    assert await plan_due(PlanDue(), new_uow(), now) == 0  # not due again until the next slot
    assert await plan_due(PlanDue(), new_uow(), now + timedelta(hours=1)) == 4
    slot, new = await bus.handle(PlanSlotNow(WS, "sch", SLOT))
    assert (slot, new) == (SLOT, 4)
    assert (await bus.handle(PlanSlotNow(WS, "sch", SLOT)))[1] == 0
    await bus.handle(RetireSchedule(WS, "sch"))
    with pytest.raises(ApiError), http_errors():
        await bus.handle(PlanSlotNow(WS, "sch", SLOT))


async def test_each_answer_is_recorded_once_with_its_run_and_raw_body_staged(bus, new_uow,
                                                                             state):
    await seed(bus, {"name": "fake", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    await bus.handle(PlanSlotNow(WS, "sch", SLOT))
    engine = ScriptedEngine()
    await collect(new_uow, engine)
    assert len(engine.asked) == 4
    assert await bus.handle(GetSlotProgress(WS, "sch", SLOT)) == {"collected": 4}
    runs = staged(state, TOPICS.runs_recorded)
    assert len(runs) == 4
    for env in runs:
        run = env["payload"]
        assert env["event_id"] == str(derived_id("collector-run", run["collection_id"]))
        assert run["run_id"] == run["collection_id"] and run["source"] == "collector"
        assert [s["domain"] for s in run["sources"]] == ["lumora.example"]
    raws = staged(state, TOPICS.engine_response_captured)
    assert {r["payload"]["run_id"] for r in raws} == {r["payload"]["run_id"] for r in runs}
    for r in raws:
        body = state.raws[r["payload"]["sha256"]]
        assert r["payload"]["content"].encode() == body
        assert hashlib.sha256(body).hexdigest() == r["payload"]["sha256"]
    # Nothing is pending: a second worker round asks nothing and stages nothing.
    await collect(new_uow, engine)
    assert len(engine.asked) == 4 and len(state.outbox) == 8


async def test_an_engine_fault_fails_the_sample_with_its_reason(bus, new_uow, state):
    await seed(bus, {"name": "fake", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
               prompts=("only one",))
    await bus.handle(PlanSlotNow(WS, "sch", SLOT))
    await collect(new_uow, ScriptedEngine(EngineFault(FaultKind.SERVER_ERROR, "HTTP 500")))
    failed = staged(state, TOPICS.collection_failed)
    assert len(failed) == 2 and not staged(state, TOPICS.runs_recorded)
    assert {f["payload"]["reason"] for f in failed} == {"server_error: HTTP 500 (after 2 attempts)"}
    assert {f["payload"]["attempts"] for f in failed} == {2}


async def test_our_assistant_is_asked_through_the_outbox_and_its_reply_linked_once(
        bus, new_uow, state):
    await seed(bus, {"kind": "assistant", "name": "attesta-assistant"})
    await bus.handle(PlanSlotNow(WS, "sch", SLOT))
    await collect(new_uow, ScriptedEngine(EngineFault(FaultKind.CONNECTION, "never asked")))
    asked = staged(state, TOPICS.chat_requested)
    assert len(asked) == 4
    assert await bus.handle(GetSlotProgress(WS, "sch", SLOT)) == {"awaiting_reply": 4}
    first, second, *_ = [a["payload"]["request_id"] for a in asked]
    reply = ChatAnswered(request_id=first, question="q", run_id="run-assist", answer_sha256="0" * 64,
                         answer="Lumora makes rings: https://lumora.example/rings")
    assert await bus.handle(LinkAssistantAnswer(reply)) == "collected"
    assert await bus.handle(LinkAssistantAnswer(reply)) is None  # a redelivery
    linked = await bus.handle(GetCollection(WS, first))
    assert linked["run_id"] == "run-assist" and linked["sources"][0]["domain"] == "lumora.example"
    failure = ChatAnswered(request_id=second, question="q", answer="", status=AnswerStatus.FAILED,
                           error="generator timed out")
    assert await bus.handle(LinkAssistantAnswer(failure)) == "failed"
    other = ChatAnswered(request_id="not-ours", question="q", answer="hi")
    assert await bus.handle(LinkAssistantAnswer(other)) is None
    await asyncio.sleep(0.02)
    assert await bus.handle(ExpireAssistantRequests(timeout_s=0.01)) == 2
    failed = staged(state, TOPICS.collection_failed)
    assert len(failed) == 3 and not staged(state, TOPICS.runs_recorded)
    assert sum("no reply from the assistant" in f["payload"]["reason"] for f in failed) == 2


def test_the_service_layer_imports_no_adapter_nor_driver():
    import ast
    from pathlib import Path

    from attesta_collector import service_layer

    for path in Path(service_layer.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        concrete = [m for m in modules if m.startswith("attesta_collector.adapters")
                    or m.split(".")[0] in ("asyncpg", "aiohttp", "httpx", "aiokafka")]
        assert not concrete, f"{path.name} imports {concrete}"
