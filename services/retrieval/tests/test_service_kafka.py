"""`attesta run retrieval` as a real process on real Kafka: ready only once the KB topic is
indexed, answers chat requests with a labelled context, dead-letters bad requests."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from attesta_contracts.chat import ChatRequested
from attesta_contracts.runs import PromptContext
from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED, RETRIEVAL_COMPLETED
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_testing.infra import free_port, kafka_bootstrap, publish_raw
from attesta_retrieval.service_layer.seeding import seed_kb

# Starting a process that loads torch and two models is slow on a shared 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
async def service(tmp_path_factory, tiny_reranker_dir, kb_slice):
    async for svc in _running(tmp_path_factory, tiny_reranker_dir, kb_slice):
        yield svc


async def _running(tmp_path_factory, reranker_dir, kb_slice, extra_env=None):
    bootstrap = kafka_bootstrap()
    topic = f"kb.cards.test-{uuid.uuid4().hex[:8]}"
    group = f"retrieval-test-{uuid.uuid4().hex[:8]}"
    await seed_kb(bootstrap, topic, cards=kb_slice[:25], progress=False)
    await ensure_topics(bootstrap, [CHAT_REQUESTED, RETRIEVAL_COMPLETED, DEAD_LETTERED])
    port = free_port()
    state = tmp_path_factory.mktemp("svc")
    env = {**os.environ, "ATTESTA_LOG_JSON": "false", "HF_HUB_OFFLINE": "1",
           "ATTESTA_HEALTH_PORT": str(port), "ATTESTA_RETRIEVAL_KB_TOPIC": topic,
           "ATTESTA_RETRIEVAL_STATE_DIR": str(state), "ATTESTA_RERANKER_DIR": str(reranker_dir),
           "ATTESTA_RETRIEVAL_CHAT_GROUP": group, "ATTESTA_RETRIEVAL_CHAT_OFFSET_RESET": "latest",
           "ATTESTA_RETRIEVAL_RERANK_BUDGET_MS": "60000", **(extra_env or {})}
    log = open(state / "retrieval.log", "wb")  # noqa: SIM115 - the process writes it until the end
    proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", "retrieval"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/readyz"
    seen_not_ready = None
    deadline = time.monotonic() + 240
    try:
        async with httpx.AsyncClient() as http:
            while True:
                assert proc.poll() is None, (state / "retrieval.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "retrieval not ready in time"
                try:
                    resp = await http.get(url, timeout=2)
                    if resp.status_code == 200:
                        break
                    seen_not_ready = resp.json()["error"]["reason"]
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.3)
        messaging = Messaging(bootstrap, "retrieval-service-test")
        await messaging.start()
        yield {"proc": proc, "group": group, "messaging": messaging, "bootstrap": bootstrap,
               "not_ready_reason": seen_not_ready, "log": state / "retrieval.log", "port": port}
        await messaging.stop()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _end_offsets(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await c.start()
    try:
        meta = await c._client.fetch_all_metadata()  # noqa: SLF001 - aiokafka has no public API
        return await c.end_offsets([TopicPartition(topic, p) for p in meta.partitions_for_topic(topic)])
    finally:
        await c.stop()


async def _find(bootstrap: str, topic: str, since: dict, match, timeout: float = 90) -> dict:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await c.start()
    try:
        c.assign(list(since))
        for tp, off in since.items():
            c.seek(tp, off)
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            for recs in (await c.getmany(timeout_ms=500)).values():
                for r in recs:
                    env = orjson.loads(r.value)
                    if match(env["payload"]):
                        return env["payload"]
        raise AssertionError(f"nothing matching on {topic} in {timeout}s")
    finally:
        await c.stop()


async def _ask(svc, question: str, prompt_context: PromptContext | None = None) -> dict:
    since = await _end_offsets(svc["bootstrap"], RETRIEVAL_COMPLETED)
    rid = f"rt-{uuid.uuid4().hex}"
    await svc["messaging"].publish(
        CHAT_REQUESTED, ChatRequested(request_id=rid, question=question,
                                      prompt_context=prompt_context),
        key=rid, correlation_id=rid)
    return await _find(svc["bootstrap"], RETRIEVAL_COMPLETED, since,
                       lambda p: p.get("request_id") == rid)


# First test of the module on purpose: every retrieval instance that reads chat.requested
# answers it, and the module-scoped `service` (with its reranker) would answer this test's
# questions on `full` too; before its first use it is not running yet.
async def test_serves_rrf_only_until_a_trained_reranker_appears_then_full(
        tmp_path_factory, tiny_reranker_dir, kb_slice):
    """A fresh start trains in the background: the service answers at once on rrf_only (the
    label says why) and hot-swaps to full once the folder appears (written under a temporary
    name and renamed, as training does), without a restart."""
    import shutil

    later = tmp_path_factory.mktemp("later") / "reranker"
    async for svc in _running(tmp_path_factory, later, kb_slice,
                              {"ATTESTA_RETRIEVAL_RERANKER_POLL_S": "0.5"}):
        first = await _ask(svc, "What is the usual adult dose of Velnorex?")
        assert first["hybrid_path"] == "rrf_only" and first["chunks"]
        assert "no CrossEncoder model" in first["path_reason"]
        assert all(c["scores"]["rerank_logit"] is None for c in first["chunks"])
        shutil.copytree(tiny_reranker_dir, later.with_name("reranker.tmp"))
        later.with_name("reranker.tmp").rename(later)
        deadline = time.monotonic() + 300  # a loaded shared machine: the first forward is slow
        while True:
            reply = await _ask(svc, "What is the usual adult dose of Velnorex?")
            if reply["hybrid_path"] == "full":
                break
            assert time.monotonic() < deadline, (
                f"the trained reranker was not picked up: {reply['hybrid_path']}, "
                f"{reply['path_reason']}; log: {svc['log'].read_text()[-2000:]}")
            await asyncio.sleep(1)
        assert reply["path_reason"] is None
        assert all(isinstance(c["scores"]["rerank_logit"], float) for c in reply["chunks"])
        assert "reranker" in svc["log"].read_text()


async def test_ready_only_after_the_kb_topic_is_indexed(service):
    assert service["not_ready_reason"]  # it said why it was not ready while starting
    assert "KB replayed: index ready" in service["log"].read_text()


async def test_a_chat_request_older_than_its_max_age_is_skipped_not_answered(service):
    """Nobody waits for a request older than ATTESTA_RETRIEVAL_CHAT_MAX_AGE_S (120 s by default):
    it is skipped and counted; the live request behind it on the same partition is answered.
    First chat test of the module on purpose: a skip before any answered request must not
    break the latency metric (it once did)."""
    from datetime import timedelta

    bootstrap, messaging = service["bootstrap"], service["messaging"]
    since = await _end_offsets(bootstrap, RETRIEVAL_COMPLETED)
    key = f"rt-{uuid.uuid4().hex}"  # one key: the old request is read before the live one
    stale_id, live_id = f"{key}-stale", f"{key}-live"
    stale = messaging.envelope(CHAT_REQUESTED, ChatRequested(request_id=stale_id, question="Velnorex dose?"),
                               correlation_id=stale_id)
    stale = stale.model_copy(update={"occurred_at": stale.occurred_at - timedelta(hours=1)})
    await messaging.publish_envelope(CHAT_REQUESTED, stale, key=key)
    await messaging.publish(CHAT_REQUESTED, ChatRequested(request_id=live_id, question="Velnorex dose?"),
                            key=key, correlation_id=live_id)
    seen: list[str] = []

    def mine(p: dict) -> bool:
        if p.get("request_id") in (stale_id, live_id):
            seen.append(p["request_id"])
        return p.get("request_id") == live_id

    await _find(bootstrap, RETRIEVAL_COMPLETED, since, mine)
    assert seen == [live_id]  # the stale one, read first, produced nothing
    metrics = httpx.get(f"http://127.0.0.1:{service['port']}/metrics", timeout=5).text
    assert 'attesta_retrieval_chat_expired_total{reason="max_age"} 1.0' in metrics
    assert "chat request expired" in service["log"].read_text()

async def test_a_chat_request_past_its_deadline_is_skipped_and_a_live_ones_deadline_travels(service):
    """Issue #23: the gateway stamps a deadline (now + its chat timeout) on each request; one
    read after it is skipped and counted (its caller already got a 504), and the live request
    behind it on the same partition is answered with its deadline on the result, so the answer
    service can check it too."""
    from datetime import timedelta

    bootstrap, messaging = service["bootstrap"], service["messaging"]
    since = await _end_offsets(bootstrap, RETRIEVAL_COMPLETED)
    key = f"rt-{uuid.uuid4().hex}"
    late_id, live_id = f"{key}-late", f"{key}-live"
    now = datetime.now(UTC)
    for rid, deadline in ((late_id, now - timedelta(seconds=1)), (live_id, now + timedelta(minutes=5))):
        await messaging.publish(CHAT_REQUESTED, ChatRequested(
            request_id=rid, question="Velnorex dose?", deadline=deadline), key=key, correlation_id=rid)
    seen: list[str] = []

    def mine(p: dict) -> bool:
        if p.get("request_id") in (late_id, live_id):
            seen.append(p["request_id"])
        return p.get("request_id") == live_id

    result = await _find(bootstrap, RETRIEVAL_COMPLETED, since, mine)
    assert seen == [live_id]  # the late one, read first, produced nothing
    assert datetime.fromisoformat(result["deadline"]) == now + timedelta(minutes=5)
    metrics = httpx.get(f"http://127.0.0.1:{service['port']}/metrics", timeout=5).text
    assert 'attesta_retrieval_chat_expired_total{reason="deadline"} 1.0' in metrics
    assert "chat request past its deadline" in service["log"].read_text()


async def test_chat_request_gets_labelled_context(service):
    result = await _ask(service, "What is the usual adult dose of Velnorex?")
    assert result["hybrid_path"] == "full" and result["path_reason"] is None
    assert result["chunks"] and len(result["chunks"]) <= 5
    for ch in result["chunks"]:
        assert ch["id"] == ch["card_id"]
        assert ch["source"].startswith("https://") and "license" in ch["metadata"]
        assert isinstance(ch["scores"]["rerank_logit"], float)
    assert {"med-velnorex", "product-velnorex"} & {c["card_id"] for c in result["chunks"]}
    assert result["timings_ms"]["total"] > 0


async def test_the_collectors_prompt_context_is_passed_on_and_a_chat_stays_without(service):
    """The collector's prompt id and tags ride on its chat request; retrieval hands them to the
    answer service unchanged. A person's chat has none, and its result has no such key."""
    context = PromptContext(prompt_id="p-1", prompt_set="launch", topic="dosage",
                            persona="patient", funnel="consideration")
    asked = await _ask(service, "What is the usual adult dose of Velnorex?", context)
    assert asked["prompt_context"] == context.model_dump(mode="json")
    chat = await _ask(service, "What is the usual adult dose of Velnorex?")
    assert "prompt_context" not in chat


async def test_blank_question_gets_an_absent_label(service):
    result = await _ask(service, "   ")
    assert result["hybrid_path"] is None and result["chunks"] == []
    assert "blank" in result["path_reason"]


async def test_bad_chat_requests_are_dead_lettered_with_the_reason(service):
    bootstrap, messaging = service["bootstrap"], service["messaging"]
    since = await _end_offsets(bootstrap, DEAD_LETTERED)
    rid = f"rt-{uuid.uuid4().hex}"
    env = messaging.envelope(CHAT_REQUESTED, ChatRequested(request_id=rid, question="x"),
                             correlation_id=rid).model_dump(mode="json")
    env["payload"]["question"] = "why? " * 1000  # over QUESTION_MAX_CHARS
    await publish_raw(messaging, CHAT_REQUESTED, orjson.dumps(env), key=rid.encode())
    await publish_raw(messaging, CHAT_REQUESTED, b"\xc3\x28 not utf-8", key=rid.encode())

    def mine(p: dict[str, Any]) -> bool:
        return bool(p.get("consumer") == service["group"])

    first = await _find(bootstrap, DEAD_LETTERED, since, mine)
    assert "question" in first["error"] and "2000" in first["error"]
    second = await _find(bootstrap, DEAD_LETTERED, since,
                         lambda p: mine(p) and "UTF-8" in p["error"])
    assert second["source_topic"] == CHAT_REQUESTED
    # The service is still there and answering.
    assert service["proc"].poll() is None
    assert (await _ask(service, "Which company makes Velnorex?"))["hybrid_path"] == "full"
