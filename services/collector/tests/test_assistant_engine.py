"""Our own assistant as an engine: the collector asks it through Kafka (chat.requested.v1, request
id = collection id) and links its reply's run (already recorded by the answer service: no second
run); a failed reply or no reply in time fails the collection with the reason; a redelivered
reply changes nothing. The reply is consumed from a real topic by the collector's consumer."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import orjson
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.adapters.engines import engine_http, openai_engines
from attesta_collector.domain.commands import (
    CreateEngine,
    CreatePrompt,
    CreateSchedule,
    ExpireAssistantRequests,
    GetCollection,
    GetSlotProgress,
    PlanSlotNow,
)
from attesta_collector.domain.model import (
    BrandNames,
    EngineSpec,
    PromptSpec,
    PromptTags,
    ScheduleSpec,
)
from attesta_collector.bootstrap import build_bus
from attesta_collector.entrypoints.consumers import register_consumers
from attesta_collector.service_layer import catalog
from attesta_collector.service_layer.collecting import (
    Collector,
    CollectorLimits,
    expire_assistant_requests,
)
from attesta_collector.service_layer.planning import plan_slot_now
from attesta_testing.collector import engine_checks, engine_keys, private_topics, random_box
from attesta_contracts.chat import AnswerStatus, ChatAnswered
from attesta_platform import outbox
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_platform.outbound import OutboundPolicy
from attesta_testing.infra import end_offsets, kafka_bootstrap, read_from

pytestmark = pytest.mark.integration

WS = "ws-assistant"
SLOT = datetime(2026, 12, 4, 8, tzinfo=UTC)
LUMORA = BrandNames("lumora", "Lumora", (), ("lumora.example",), ())


async def test_assistant_engine_links_replies_and_fails_with_reasons(pool, new_uow):
    prefix = f"a{uuid.uuid4().hex[:8]}"
    topics = private_topics(prefix)
    await ensure_topics(kafka_bootstrap(), [topics.runs_recorded, topics.collection_failed,
                                            topics.chat_requested, topics.chat_answered], 3)
    brands = StaticBrandDirectory({WS: [LUMORA]})
    tags = PromptTags(topic="products", persona="patient", funnel="awareness")
    for text in ("What does Lumora make?", "Which migraine medicine?", "x" * 2500):
        await catalog.create_prompt(CreatePrompt(WS, PromptSpec(text=text, prompt_set="launch",
                                                                tags=tags)), new_uow(), brands)
    await catalog.create_engine(CreateEngine(WS, EngineSpec(
        engine_id="ours", kind="assistant", name="attesta-assistant")), new_uow(), engine_checks())
    await catalog.create_schedule(CreateSchedule(WS, ScheduleSpec(
        schedule_id="sch", engine_ids=["ours"], interval_s=3600, samples=1)), new_uow())
    requested_at = await end_offsets(kafka_bootstrap(), topics.chat_requested)
    runs_at = await end_offsets(kafka_bootstrap(), topics.runs_recorded)
    messaging = Messaging(kafka_bootstrap(), "collector-assistant-test")
    bus = build_bus(new_uow, brands=brands, engine_checks=engine_checks(), sealer=random_box(),
                    topics=topics)
    sub = register_consumers(messaging, bus, topics, group_id=f"t-col-{prefix}",
                             auto_offset_reset="earliest")
    await messaging.start()
    try:
        await messaging.wait_assigned(sub)
        await plan_slot_now(PlanSlotNow(WS, "sch", SLOT), new_uow())
        async with engine_http(OutboundPolicy()) as http:
            collector = Collector(new_uow, "me", openai_engines(http, engine_keys(new_uow)), topics,
                                  CollectorLimits(poll_s=0.02))
            await collector.claim_and_start()
            await collector.wait_idle()
        while await outbox.relay_batch(pool, messaging):
            pass
        async with pool.acquire() as conn:
            rows = {r["prompt_text"][:8]: r for r in await conn.fetch("SELECT * FROM collections")}
        long = rows["x" * 8]
        assert long["status"] == "failed" and "at most 2000 characters" in long["last_error"]
        ok, bad = rows["What doe"], rows["Which mi"]
        assert ok["status"] == bad["status"] == "awaiting_reply"
        asked = [orjson.loads(v) for v in await read_from(
            kafka_bootstrap(), topics.chat_requested, requested_at, lambda v: True, expected=2,
            settle_s=0.5)]
        assert {a["payload"]["request_id"] for a in asked} == {ok["collection_id"],
                                                               bad["collection_id"]}
        assert {a["payload"]["workspace_id"] for a in asked} == {WS}
        # The prompt's id and tags ride on the request (retrieval and the answer service pass
        # them onto the run they record); the question is the prompt's text, so the classifier
        # decides branded from it as the collector did (one branded, one not).
        async with pool.acquire() as conn:
            prompts = {r["text"]: r for r in await conn.fetch("SELECT * FROM prompts WHERE workspace_id = $1", WS)}
        for a in asked:
            prompt = prompts[a["payload"]["question"]]
            assert a["payload"]["prompt_context"] == {
                "prompt_id": prompt["prompt_id"], "prompt_set": "launch", "topic": "products",
                "persona": "patient", "funnel": "awareness"}
        assert prompts["What does Lumora make?"]["branded"]
        assert not prompts["Which migraine medicine?"]["branded"]
        # The answer service replies: a run for one, a failure for the other; one reply twice.
        good = ChatAnswered(request_id=ok["collection_id"], question="q", run_id="run-assist-1",
                            answer="Lumora makes Velnorex, see https://lumora.example/products.",
                            answer_sha256="0" * 64, generator="offline-extractive-v1")
        failed = ChatAnswered(request_id=bad["collection_id"], question="q", answer="",
                              status=AnswerStatus.FAILED, error="generator timed out")
        other = ChatAnswered(request_id="somebody-elses-request", question="q", answer="hi")
        for payload in (good, good, failed, other):
            await messaging.publish(topics.chat_answered, payload, key=payload.request_id,
                                    correlation_id=payload.request_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while loop.time() < deadline:
            counts = await catalog.get_slot_progress(GetSlotProgress(WS, "sch", SLOT), new_uow())
            if counts.get("collected") == 1 and counts.get("failed") == 2:
                break
            await asyncio.sleep(0.1)
        got = await catalog.get_collection(GetCollection(WS, ok["collection_id"]), new_uow())
        lost = await catalog.get_collection(GetCollection(WS, bad["collection_id"]), new_uow())
        assert got["status"] == "collected" and got["run_id"] == "run-assist-1"
        assert [s["domain"] for s in got["sources"]] == ["lumora.example"]
        assert lost["status"] == "failed" and "generator timed out" in lost["last_error"]
        # No run of our own for the assistant: the answer service recorded it.
        assert await read_from(kafka_bootstrap(), topics.runs_recorded, runs_at,
                               lambda v: WS.encode() in v, expected=1, timeout_s=2) == []
        # A request nobody answers fails after the timeout.
        await plan_slot_now(PlanSlotNow(WS, "sch", datetime(2026, 12, 4, 9, tzinfo=UTC)), new_uow())
        async with engine_http(OutboundPolicy()) as http:
            collector = Collector(new_uow, "me", openai_engines(http, engine_keys(new_uow)), topics, CollectorLimits())
            await collector.claim_and_start()
            await collector.wait_idle()
        await asyncio.sleep(0.3)
        assert await expire_assistant_requests(ExpireAssistantRequests(timeout_s=0.1), new_uow(),
                                               topics) == 2
        async with pool.acquire() as conn:
            reasons = [r["last_error"] for r in await conn.fetch(
                "SELECT last_error FROM collections WHERE slot = $1 AND status = 'failed'",
                datetime(2026, 12, 4, 9, tzinfo=UTC))]
        assert len(reasons) == 3 and sum("no reply from the assistant" in r for r in reasons) == 2
    finally:
        await messaging.stop()
