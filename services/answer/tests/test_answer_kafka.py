"""The answer service's handler running on a REAL Kafka broker.

Retrieval results (hybrid_path=full and rrf_only) go in on a topic; the chat answer and the run
come out on theirs. The wiring is the service's own (``entrypoints.kafka.subscribe``); the topics
are per-test aliases of the real ones (same event types and payload models, registered in the
contract registry for this process only), so tests running side by side on the shared broker
never see each other's messages and no other service answers ours.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import uuid
from typing import Any

import jsonschema
import orjson
import pytest
from aiokafka import AIOKafkaConsumer
from pydantic import BaseModel, ConfigDict

from attesta_answer.adapters.llm_generator import LLMGenerator
from attesta_answer.domain.extractive import OfflineGenerator
from attesta_answer.bootstrap import build_bus
from attesta_answer.entrypoints.kafka import subscribe
from attesta_answer.service_layer.handlers import run_id_for
from attesta_contracts import Envelope, derived_id
from attesta_contracts.chat import (
    AnswerStatus,
    ChatAnswered,
    ChunkScores,
    ContextChunk,
    HybridPath,
    RetrievalCompleted,
)
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.runs import ASSISTANT_ENGINE, PromptContext, RunRecorded
from attesta_contracts.schemas import load_snapshot
from attesta_contracts.topics import (
    CHAT_ANSWERED,
    DEAD_LETTERED,
    RETRIEVAL_COMPLETED,
    RUNS_RECORDED,
    topic,
)
from attesta_kb.dataset import load_cards
from attesta_platform.llm import LLMConfig
from attesta_platform.messaging import Messaging, RetryPolicy
from attesta_testing.infra import AliasedPublisher, alias_topic, drop_topics, kafka_bootstrap, publish_raw
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.integration

CARDS = {c["card_id"]: c for c in load_cards()}
QUESTION = "What is the usual adult dose of Velnorex?"
DEFAULT_WORKSPACE = "demo-test"


@dataclasses.dataclass(frozen=True)
class Topics:
    """A test's private copies of the answer service's topics; the service publishes to them
    through an ``AliasedPublisher`` with the same prefix."""

    prefix: str
    retrieval_completed: str
    chat_answered: str
    runs_recorded: str

    @property
    def names(self) -> list[str]:
        return [self.retrieval_completed, self.chat_answered, self.runs_recorded]

    def publisher(self, messaging: Messaging) -> AliasedPublisher:
        return AliasedPublisher(messaging, self.prefix)


def alias_topics(tag: str) -> Topics:
    prefix = f"test-answer-{tag}"
    return Topics(prefix, alias_topic(RETRIEVAL_COMPLETED, prefix),
                  alias_topic(CHAT_ANSWERED, prefix), alias_topic(RUNS_RECORDED, prefix))


def chunks(path_logits: bool = True) -> list[ContextChunk]:
    out = []
    for i, cid in enumerate(("med-velnorex", "med-velnorax", "product-velnorex")):
        c = CARDS[cid]
        out.append(ContextChunk(id=cid, card_id=cid, title=c["title"], text=c["text"],
                                source=c["source"], metadata=c["metadata"],
                                scores=ChunkScores(rrf=1 / (61 + i), dense=0.7 - i / 10,
                                                   rerank_logit=(2.5 - i) if path_logits else None)))
    return out


class Collector:
    """Reads the output topics from the beginning, keeping raw bytes and parsed envelopes."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        self.consumer = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap,
                                         auto_offset_reset="earliest", enable_auto_commit=False,
                                         group_id=None)
        self.records: list[Any] = []
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for records in batch.values():
                self.records.extend(records)

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        await self.consumer.stop()

    def on(self, topic_name: str, request_or_run: str) -> list[Any]:
        return [r for r in self.records if r.topic == topic_name
                and r.key is not None and r.key.decode() == request_or_run]

    async def wait(self, topic_name: str, key: str, count: int = 1, timeout: float = 45) -> list[Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.on(topic_name, key)) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{count} message(s) keyed {key} not seen on {topic_name}")
            await asyncio.sleep(0.05)
        return self.on(topic_name, key)


@pytest.fixture(scope="module")
async def service():
    bootstrap = kafka_bootstrap()
    tag = uuid.uuid4().hex[:10]
    offline_topics, llm_topics = alias_topics(f"{tag}-off"), alias_topics(f"{tag}-llm")
    fake = FakeChatServer().start()
    llm = LLMGenerator(LLMConfig(base_url=fake.base_url, model="fake/llm", timeout_s=1,
                                 attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02))
    messaging = Messaging(bootstrap, producer="answer", retry=RetryPolicy(attempts=2, initial_delay_s=0.01))
    names = [*offline_topics.names, *llm_topics.names]
    await messaging.ensure_topics([*names, DEAD_LETTERED], partitions=2)
    offline_sub = subscribe(messaging, build_bus(OfflineGenerator(),
                                                 publisher=offline_topics.publisher(messaging),
                                                 default_workspace=DEFAULT_WORKSPACE),
                            topic=offline_topics.retrieval_completed,
                            group_id=f"answer-test-{tag}-off")
    llm_sub = subscribe(messaging, build_bus(llm, publisher=llm_topics.publisher(messaging),
                                             default_workspace=DEFAULT_WORKSPACE),
                        topic=llm_topics.retrieval_completed, group_id=f"answer-test-{tag}-llm")
    collector = Collector(bootstrap, [offline_topics.chat_answered, offline_topics.runs_recorded,
                                      llm_topics.chat_answered, llm_topics.runs_recorded])
    await messaging.start()
    await collector.start()
    try:
        await messaging.wait_assigned(offline_sub)
        await messaging.wait_assigned(llm_sub)
        yield {"m": messaging, "offline": offline_topics, "llm": llm_topics, "out": collector,
               "fake": fake, "bootstrap": bootstrap, "group": f"answer-test-{tag}-off"}
    finally:
        await collector.stop()
        await messaging.stop()
        await llm.aclose()
        fake.stop()
        await drop_topics(bootstrap, names)


async def publish_retrieval(m: Messaging, topics: Topics, payload: RetrievalCompleted) -> Envelope:
    return await m.publish(topics.retrieval_completed, payload, key=payload.request_id,
                           correlation_id=f"corr-{payload.request_id}")


def validate_against_snapshot(topic_name: str, value: bytes) -> None:
    jsonschema.validate(json.loads(value), load_snapshot(topic(topic_name)))


async def test_full_path_answer_is_enriched_with_a_score_and_a_run_is_recorded(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-full-{uuid.uuid4().hex[:8]}"
    sent = await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL,
        workspace_id="ws-acme", reply_to="gateway-7", timings_ms={"dense": 3.0}))
    [answered_rec] = await out.wait(topics.chat_answered, rid)
    validate_against_snapshot(CHAT_ANSWERED, answered_rec.value)
    answered = Envelope[ChatAnswered].model_validate_json(answered_rec.value)
    reply = answered.payload
    assert answered.event_id == derived_id("answer", sent.event_id)
    assert answered.causation_id == str(sent.event_id)
    assert answered.correlation_id == f"corr-{rid}"
    assert reply.status == AnswerStatus.ANSWERED and reply.reply_to == "gateway-7"
    assert reply.hybrid_path == HybridPath.FULL and reply.generator == OfflineGenerator().name
    assert "recommended adult dose is one 40 mg" in reply.answer
    wire = json.loads(answered_rec.value)["payload"]["citations"][0]
    assert wire == {"card_id": "med-velnorex", "span": reply.citations[0].span,
                    "source_url": "https://ref.medvault.example/monographs/velnorex",
                    "source_license": CARDS["med-velnorex"]["metadata"]["license"],
                    "retrieved_score": 92.0}  # logit 2.5
    assert reply.answer_sha256 == hashlib.sha256(reply.answer.encode("utf-8")).hexdigest()
    assert reply.run_id == run_id_for(sent.event_id)
    assert reply.timings_ms["retrieval.dense"] == 3.0 and "answer.enrich" in reply.timings_ms

    [run_rec] = await out.wait(topics.runs_recorded, reply.run_id)
    validate_against_snapshot(RUNS_RECORDED, run_rec.value)
    run_env = Envelope[RunRecorded].model_validate_json(run_rec.value)
    run = run_env.payload
    assert run_env.event_id == derived_id("run-recorded", reply.run_id)
    assert run_env.causation_id == str(answered.event_id)
    assert (run.run_id, run.workspace_id, run.engine, run.model, run.source) == (
        reply.run_id, "ws-acme", ASSISTANT_ENGINE, OfflineGenerator().name, "assistant")
    assert run.prompt == QUESTION and run.answer == reply.answer and run.brand_ids == []
    assert run.answer_sha256 == hashlib.sha256(run.answer.encode("utf-8")).hexdigest()
    assert run.requested_at == sent.occurred_at <= run.answered_at
    assert run.prompt_context is None  # a person's chat: no collector prompt behind it
    # The chat answer is on its topic before the run is on its own (published first, acked).
    assert answered_rec.timestamp <= run_rec.timestamp


async def test_rrf_only_path_gives_url_and_licence_but_no_score_and_default_workspace(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-rrf-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(path_logits=False),
        hybrid_path=HybridPath.RRF_ONLY, path_reason="reranker disabled"))
    [rec] = await out.wait(topics.chat_answered, rid)
    payload = json.loads(rec.value)["payload"]
    assert payload["status"] == "answered" and payload["hybrid_path"] == "rrf_only"
    for cited in payload["citations"]:
        assert set(cited) == {"card_id", "span", "source_url", "source_license"}
        assert "retrieved_score" not in cited
    [run_rec] = await out.wait(topics.runs_recorded, payload["run_id"])
    assert Envelope[RunRecorded].model_validate_json(run_rec.value).payload.workspace_id == DEFAULT_WORKSPACE


async def test_a_collected_question_records_its_run_with_the_prompts_context(service):
    """The collector asked (its prompt id and tags came through retrieval): the run the answer
    service records carries them, so the classifier splits it by topic/persona/funnel."""
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-col-{uuid.uuid4().hex[:8]}"
    context = PromptContext(prompt_id="p-dose", prompt_set="launch", topic="dosage",
                            persona="patient", funnel="consideration")
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL,
        workspace_id="ws-acme", reply_to="collector:c1", prompt_context=context))
    [rec] = await out.wait(topics.chat_answered, rid)
    run_id = json.loads(rec.value)["payload"]["run_id"]
    [run_rec] = await out.wait(topics.runs_recorded, run_id)
    validate_against_snapshot(RUNS_RECORDED, run_rec.value)
    run = Envelope[RunRecorded].model_validate_json(run_rec.value).payload
    assert run.prompt_context == context and run.prompt == QUESTION


async def test_redelivery_yields_the_same_answer_event_run_id_and_run_event(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-redeliver-{uuid.uuid4().hex[:8]}"
    env = m.envelope(topics.retrieval_completed, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL),
        correlation_id=rid)
    await m.publish_envelope(topics.retrieval_completed, env, key=rid)
    await m.publish_envelope(topics.retrieval_completed, env, key=rid)  # at-least-once delivery
    answers = await out.wait(topics.chat_answered, rid, count=2)
    parsed = [Envelope[ChatAnswered].model_validate_json(r.value) for r in answers]
    assert parsed[0].event_id == parsed[1].event_id
    assert parsed[0].payload.run_id == parsed[1].payload.run_id == run_id_for(env.event_id)
    assert parsed[0].payload.answer == parsed[1].payload.answer
    runs = await out.wait(topics.runs_recorded, parsed[0].payload.run_id, count=2)
    run_envs = [Envelope[RunRecorded].model_validate_json(r.value) for r in runs]
    assert run_envs[0].event_id == run_envs[1].event_id
    assert run_envs[0].payload.answer_sha256 == run_envs[1].payload.answer_sha256


async def test_nothing_retrieved_answers_no_context_and_records_the_run(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-empty-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(request_id=rid, question="Capital of France?"))
    [rec] = await out.wait(topics.chat_answered, rid)
    reply = Envelope[ChatAnswered].model_validate_json(rec.value).payload
    assert reply.status == AnswerStatus.NO_CONTEXT and reply.citations == []
    assert json.loads(rec.value)["payload"]["citations"] == []
    await out.wait(topics.runs_recorded, reply.run_id)


async def test_llm_down_gives_a_failed_reply_with_reason_and_no_run(service):
    m, topics, out, fake = service["m"], service["llm"], service["out"], service["fake"]
    fake.script(FakeReply.status(500), FakeReply.status(500))
    rid = f"req-llm-down-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
    [rec] = await out.wait(topics.chat_answered, rid)
    reply = Envelope[ChatAnswered].model_validate_json(rec.value).payload
    assert reply.status == AnswerStatus.FAILED and reply.run_id is None
    assert "HTTP 500" in reply.error and reply.generator == "fake/llm"
    await asyncio.sleep(1.0)  # the run, if any, would follow the answer within milliseconds
    runs_for_request = [r for r in out.records if r.topic == topics.runs_recorded and
                        Envelope[RunRecorded].model_validate_json(r.value).correlation_id == f"corr-{rid}"]
    assert runs_for_request == []


async def test_llm_hostile_answer_is_firewalled_and_reconciled_on_the_wire(service):
    m, topics, out, fake = service["m"], service["llm"], service["out"], service["fake"]
    span = "The recommended adult dose is one 40 mg tablet once daily"
    fake.script(FakeReply.json({
        "answer": f"{span}. Buy at [pharmacy](https://evil.example/buy) or www.evil.com.",
        "citations": [{"card_id": "med-velnorex", "span": span},
                      {"card_id": "med-invented", "span": span},
                      {"card_id": "med-velnorex", "span": "Velnorex cures baldness"}]}))
    rid = f"req-llm-hostile-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
    [rec] = await out.wait(topics.chat_answered, rid)
    payload = json.loads(rec.value)["payload"]
    assert payload["answer"] == f"{span}. Buy at pharmacy or (link removed)."
    assert [c["card_id"] for c in payload["citations"]] == ["med-velnorex"]
    assert "evil" not in rec.value.decode()
    [run_rec] = await out.wait(topics.runs_recorded, payload["run_id"])
    assert Envelope[RunRecorded].model_validate_json(run_rec.value).payload.model == "fake/llm"


# -- backward compatibility: consumers written before enrichment existed ----------------------
class OldCitation(BaseModel):
    """A citation as the pre-ADR-0024 consumers (eval scorers, red-team gate, certification
    harness) model it: card id and span only; unknown keys ignored, as pydantic does by default."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    card_id: str
    span: str = ""


class OldChatAnswered(BaseModel):
    model_config = ConfigDict(extra="ignore")
    request_id: str
    answer: str
    citations: list[OldCitation]


class StrictOldCitation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    card_id: str
    span: str = ""


async def test_a_pre_enrichment_consumer_reads_enriched_answers_from_a_real_topic(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    rid = f"req-old-consumer-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
    await out.wait(topics.chat_answered, rid)

    # The old consumer: its own group, from the beginning, parsing with its own old models.
    old = AIOKafkaConsumer(topics.chat_answered, bootstrap_servers=service["bootstrap"],
                           group_id=f"old-scorer-{uuid.uuid4().hex[:8]}",
                           auto_offset_reset="earliest", enable_auto_commit=False)
    await old.start()
    seen: dict[str, OldChatAnswered] = {}
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while rid not in seen and asyncio.get_running_loop().time() < deadline:
            for records in (await old.getmany(timeout_ms=300)).values():
                for r in records:
                    body = orjson.loads(r.value)["payload"]
                    seen[body["request_id"]] = OldChatAnswered.model_validate(body)
    finally:
        await old.stop()
    reply = seen[rid]
    assert reply.citations and all(c.card_id == "med-velnorex" for c in reply.citations)
    assert all(isinstance(c, OldCitation) for c in reply.citations)


def test_a_citation_from_a_card_id_alone_serializes_exactly_as_before():
    from attesta_contracts.chat import Citation

    assert Citation(card_id="med-velnorex").model_dump(mode="json") == {"card_id": "med-velnorex", "span": ""}
    assert json.loads(Citation(card_id="c", span="s").model_dump_json()) == {"card_id": "c", "span": "s"}
    # Even a strict (extra="forbid") pre-enrichment model accepts it.
    StrictOldCitation.model_validate_json(Citation(card_id="c", span="s").model_dump_json())


async def test_poison_input_is_dead_lettered_and_the_consumer_goes_on(service):
    m, topics, out = service["m"], service["offline"], service["out"]
    marker = uuid.uuid4().hex
    poison = b'{"not": "an envelope", "marker": "' + marker.encode() + b'"}'
    await publish_raw(m, topics.retrieval_completed, poison, key=b"poison")
    rid = f"req-after-poison-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
    await out.wait(topics.chat_answered, rid)

    reader = AIOKafkaConsumer(DEAD_LETTERED, bootstrap_servers=service["bootstrap"],
                              auto_offset_reset="earliest", enable_auto_commit=False)
    await reader.start()
    letters = []
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while not letters and asyncio.get_running_loop().time() < deadline:
            for records in (await reader.getmany(timeout_ms=300)).values():
                for r in records:
                    letter = Envelope[MessageDeadLettered].model_validate_json(r.value).payload
                    if letter.consumer == service["group"] and marker.encode() in base64.b64decode(letter.original_b64):
                        letters.append(letter)
    finally:
        await reader.stop()
    assert [letter.source_topic for letter in letters] == [topics.retrieval_completed]
    assert "invalid RetrievalCompleted envelope" in letters[0].error


# -- concurrency: chats wait for the LLM side by side -----------------------------------------
async def test_the_service_default_answers_different_chats_while_the_llm_is_busy():
    """With the service's own default concurrency, retrieval results of different chats reach
    the LLM together instead of queueing behind one slow call; every chat is still answered
    once."""
    import threading
    import time

    from attesta_answer.settings import AnswerSettings

    concurrency = AnswerSettings().kafka_consumer_concurrency
    assert concurrency > 1
    span = "The recommended adult dose is one 40 mg tablet once daily"
    state = {"in_flight": 0, "most": 0}
    lock = threading.Lock()

    def slow_llm(_body: dict[str, Any]) -> FakeReply:  # runs in the server's request thread
        with lock:
            state["in_flight"] += 1
            state["most"] = max(state["most"], state["in_flight"])
        time.sleep(0.4)
        with lock:
            state["in_flight"] -= 1
        return FakeReply.json({"answer": f"{span}.",
                               "citations": [{"card_id": "med-velnorex", "span": span}]})

    bootstrap = kafka_bootstrap()
    tag = uuid.uuid4().hex[:10]
    topics = alias_topics(f"{tag}-conc")
    names = topics.names
    fake = FakeChatServer(responder=slow_llm).start()
    llm = LLMGenerator(LLMConfig(base_url=fake.base_url, model="fake/llm", timeout_s=5, attempts=1))
    messaging = Messaging(bootstrap, producer="answer", consumer_concurrency=concurrency)
    collector = Collector(bootstrap, [topics.chat_answered])
    try:
        await messaging.ensure_topics([*names, DEAD_LETTERED], partitions=3)
        sub = subscribe(messaging, build_bus(llm, publisher=topics.publisher(messaging),
                                             default_workspace=DEFAULT_WORKSPACE),
                        topic=topics.retrieval_completed, group_id=f"answer-test-{tag}-conc")
        await messaging.start()
        await collector.start()
        await messaging.wait_assigned(sub)
        rids = [f"req-conc-{tag}-{i}" for i in range(8)]
        for rid in rids:
            await publish_retrieval(messaging, topics, RetrievalCompleted(
                request_id=rid, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
        for rid in rids:
            [rec] = await collector.wait(topics.chat_answered, rid)
            assert Envelope[ChatAnswered].model_validate_json(rec.value).payload.status == AnswerStatus.ANSWERED
        # One at a time, the LLM would never see two calls at once.
        assert state["most"] >= 4, state
        assert len(fake.requests) == len(rids)
    finally:
        await collector.stop()
        await messaging.stop()
        await llm.aclose()
        fake.stop()
        await drop_topics(bootstrap, names)


# -- issue #23: what goes into a run can always be stored; anonymous chats ---------------------
async def test_an_llm_answer_with_a_nul_and_a_lone_surrogate_gives_a_storable_reply_and_run(service):
    """An LLM's JSON may carry \\u0000 and a lone surrogate; neither can be stored (PostgreSQL
    text) nor even serialized (a surrogate has no UTF-8 form): both are removed from the answer
    before it is hashed, so the reply, the run and its hash agree."""
    m, topics, out, fake = service["m"], service["llm"], service["out"], service["fake"]
    span = "The recommended adult dose is one 40 mg tablet once daily"
    fake.script(FakeReply.json({"answer": f"{span}.\u0000 Ask\ud800 your doctor.",
                                "citations": [{"card_id": "med-velnorex", "span": span}]}))
    rid = f"req-llm-nul-{uuid.uuid4().hex[:8]}"
    await publish_retrieval(m, topics, RetrievalCompleted(
        request_id=rid, question=f"{QUESTION}\x00", chunks=chunks(), hybrid_path=HybridPath.FULL))
    [rec] = await out.wait(topics.chat_answered, rid)
    reply = Envelope[ChatAnswered].model_validate_json(rec.value).payload
    assert reply.status == AnswerStatus.ANSWERED, reply
    assert reply.answer == f"{span}. Ask your doctor."
    assert reply.answer_sha256 == hashlib.sha256(reply.answer.encode("utf-8")).hexdigest()
    [run_rec] = await out.wait(topics.runs_recorded, reply.run_id)
    run = Envelope[RunRecorded].model_validate_json(run_rec.value).payload
    assert (run.prompt, run.answer) == (QUESTION, reply.answer)


async def test_with_no_assistant_workspace_an_anonymous_chat_records_no_run():
    """ATTESTA_ASSISTANT_WORKSPACE empty: a chat without a workspace is answered but recorded as
    nobody's run; a chat with one still is its workspace's run."""
    bootstrap = kafka_bootstrap()
    tag = uuid.uuid4().hex[:10]
    topics = alias_topics(f"{tag}-anon")
    names = topics.names
    messaging = Messaging(bootstrap, producer="answer")
    collector = Collector(bootstrap, [topics.chat_answered, topics.runs_recorded])
    try:
        await messaging.ensure_topics([*names, DEAD_LETTERED], partitions=1)
        sub = subscribe(messaging, build_bus(OfflineGenerator(), publisher=topics.publisher(messaging),
                                             default_workspace=""),
                        topic=topics.retrieval_completed, group_id=f"answer-test-{tag}-anon")
        await messaging.start()
        await collector.start()
        await messaging.wait_assigned(sub)
        anonymous, keyed = f"req-anon-{tag}", f"req-keyed-{tag}"
        await publish_retrieval(messaging, topics, RetrievalCompleted(
            request_id=anonymous, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL))
        await publish_retrieval(messaging, topics, RetrievalCompleted(
            request_id=keyed, question=QUESTION, chunks=chunks(), hybrid_path=HybridPath.FULL,
            workspace_id="ws-acme"))
        [anon_rec] = await collector.wait(topics.chat_answered, anonymous)
        [keyed_rec] = await collector.wait(topics.chat_answered, keyed)
        anon = Envelope[ChatAnswered].model_validate_json(anon_rec.value).payload
        keyed_reply = Envelope[ChatAnswered].model_validate_json(keyed_rec.value).payload
        assert anon.status == AnswerStatus.ANSWERED and anon.run_id is None
        [run_rec] = await collector.wait(topics.runs_recorded, keyed_reply.run_id)
        assert Envelope[RunRecorded].model_validate_json(run_rec.value).payload.workspace_id == "ws-acme"
        # one partition, published in order: the keyed run is out, so no anonymous run came first
        assert [r.key.decode() for r in collector.records if r.topic == topics.runs_recorded] == [
            keyed_reply.run_id]
    finally:
        await collector.stop()
        await messaging.stop()
        await drop_topics(bootstrap, names)
