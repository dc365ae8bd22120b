"""Issue #23, chat input and bounded work in flight, against real processes: `attesta run
retrieval`, `attesta run answer` and `attesta run gateway` on the real Kafka, PostgreSQL and
Redis, asked over HTTP (or, for what other producers may send, straight on Kafka).

- a NUL in a question is a 422 at the gateway;
- an anonymous chat becomes a run of the internal `assistant-public` workspace, never of a
  customer's;
- a burst of 30 chats with one key gets answers or an immediate 429/503 with Retry-After, never
  a 504, and another workspace's chats stay under 2 s at p95 meanwhile;
- a request read after its deadline is answered neither by retrieval nor by the answer service;
- a NUL published straight to the answer service still gives a run PostgreSQL can store.

Beside the real system on the shared broker: retrieval and the answer service get consumer
groups of their own started at the current end of their topics; retrieval's index is the chat
e2e test's persistent folder (locked: one embedded Chroma writer at a time).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import math
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
import pytest_asyncio

from attesta_contracts import utc_now
from attesta_contracts.chat import (
    ChatAnswered,
    ChatRequested,
    ContextChunk,
    HybridPath,
    RetrievalCompleted,
)
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, RETRIEVAL_COMPLETED, RUNS_RECORDED
from tests.gateway_fakes import GatewayProcess, make_key, migrated_database
from attesta_kb.dataset import load_cards
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_testing.infra import (
    commit_group_at_end,
    end_offsets,
    free_port,
    kafka_bootstrap,
    metric_sample,
    postgres_admin_url,
    publish_raw,
    read_from,
    redis_url,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL_STATE = ROOT / ".state" / "e2e-retrieval"  # shared with test_chat_skeleton_e2e.py
QUESTION = "What is the usual adult dose of Velnorex?"
CUSTOMERS = ("ws-burst", "ws-other")


# The bounds checked here are the pipeline's, on the rrf_only path. A reranker or pair reader this
# machine has trained (scripts/up.sh caches them under ~/.cache/attesta) would make the burst's
# timings the models' on shared cores (seen: 3-5 s a chat in the other workspace), so the services
# get a reranker folder that never holds one and no reader, whatever the machine has.
NO_MODELS = {"ATTESTA_RERANKER_DIR": str(ROOT / ".state" / "e2e-no-reranker"),
             "ATTESTA_ANSWER_READER": "off"}


def _spawn(service: str, logs: Path, **env: str) -> subprocess.Popen[bytes]:
    log = open(logs / f"{service}.log", "ab")  # noqa: SIM115 - written by the child until it ends
    return subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", service],
                            env={**os.environ, "ATTESTA_LOG_JSON": "false", "HF_HUB_OFFLINE": "1",
                                 **NO_MODELS, **env},
                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


async def _ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                if (await http.get(url, timeout=2)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.3)
    raise AssertionError(f"{url} not ready in {timeout_s} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest_asyncio.fixture(scope="module")
async def system(tmp_path_factory):
    bootstrap = kafka_bootstrap()
    logs = tmp_path_factory.mktemp("chat-bounds")
    tag = uuid.uuid4().hex[:8]
    RETRIEVAL_STATE.mkdir(parents=True, exist_ok=True)
    lock = open(RETRIEVAL_STATE.with_suffix(".lock"), "w")  # noqa: SIM115 - held for the module
    fcntl.flock(lock, fcntl.LOCK_EX)
    seeded = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "retrieval", "seed-kb",
                             "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    groups = {"retrieval": f"t-bounds-retrieval-{tag}", "answer": f"t-bounds-answer-{tag}"}
    await ensure_topics(bootstrap, [CHAT_REQUESTED, RETRIEVAL_COMPLETED, CHAT_ANSWERED,
                                    RUNS_RECORDED])
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, groups["retrieval"])
    await commit_group_at_end(bootstrap, RETRIEVAL_COMPLETED, groups["answer"])
    secret = secrets.token_urlsafe(48)
    ports = {"retrieval": free_port(), "answer": free_port()}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    gateway = None
    try:
        async with migrated_database() as db_url:
            keys = {ws: (await make_key(db_url, secret, ws))[1] for ws in CUSTOMERS}
            procs["retrieval"] = _spawn(
                "retrieval", logs, ATTESTA_HEALTH_PORT=str(ports["retrieval"]),
                ATTESTA_RETRIEVAL_CHAT_GROUP=groups["retrieval"],
                ATTESTA_RETRIEVAL_STATE_DIR=str(RETRIEVAL_STATE))
            # ATTESTA_ASSISTANT_WORKSPACE is left at its default on purpose.
            procs["answer"] = _spawn("answer", logs, ATTESTA_HEALTH_PORT=str(ports["answer"]),
                                     ATTESTA_ANSWER_CONSUMER_GROUP=groups["answer"])
            # The chat settings are the defaults (timeout 15 s, in-flight bounds, chat rate).
            gateway = GatewayProcess({
                "ATTESTA_GATEWAY_DB_URL": db_url, "ATTESTA_GATEWAY_SECRET": secret,
                "REDIS_URL": redis_url(), "ATTESTA_RATE_LIMIT_PREFIX": f"t-bounds-{tag}:",
                "ATTESTA_PUBLIC_METRICS": "true"}, logs).start()
            await _ready(f"http://127.0.0.1:{ports['answer']}/readyz", procs["answer"],
                         logs / "answer.log", 90)
            await _ready(f"http://127.0.0.1:{ports['retrieval']}/readyz", procs["retrieval"],
                         logs / "retrieval.log", 600)
            messaging = Messaging(bootstrap, "chat-bounds-test")
            await messaging.start()
            try:
                yield {"url": gateway.url, "keys": keys, "bootstrap": bootstrap, "ports": ports,
                       "messaging": messaging, "logs": logs}
            finally:
                await messaging.stop()
    finally:
        if gateway is not None:
            gateway.stop()
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        lock.close()


def _metrics(system: dict[str, Any], service: str) -> str:
    return httpx.get(f"http://127.0.0.1:{system['ports'][service]}/metrics", timeout=5).text


async def _payloads(system: dict[str, Any], topic: str, since: dict[int, int], marker: str,
                    expected: int, settle_s: float = 0.0) -> list[dict[str, Any]]:
    values = await read_from(system["bootstrap"], topic, since, lambda v: marker.encode() in v,
                             expected, timeout_s=60, settle_s=settle_s)
    return [orjson.loads(v)["payload"] for v in values]


async def _chat(http: httpx.AsyncClient, question: str, key: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return await http.post("/v1/chat", json={"question": question}, headers=headers)


# -- item 4: chat input and anonymous chats --------------------------------------------------------
async def test_a_nul_in_a_question_is_a_422_with_its_reason(system):
    async with httpx.AsyncClient(base_url=system["url"], timeout=30) as http:
        for key in (None, system["keys"]["ws-other"]):
            resp = await _chat(http, "What is the usual adult dose of Velnorex?\u0000", key)
            assert resp.status_code == 422, resp.text
            error = resp.json()["error"]
            assert error["code"] == "invalid_request" and "NUL" in error["reason"], error


async def test_an_anonymous_chat_is_a_run_of_no_customer_workspace(system):
    since = await end_offsets(system["bootstrap"], RUNS_RECORDED)
    marker = f"anon-{uuid.uuid4().hex[:10]}"
    async with httpx.AsyncClient(base_url=system["url"], timeout=30) as http:
        anonymous = await _chat(http, f"{QUESTION} ({marker})")
        keyed = await _chat(http, f"{QUESTION} ({marker})", system["keys"]["ws-other"])
    assert anonymous.status_code == keyed.status_code == 200, (anonymous.text, keyed.text)
    runs = {r["run_id"]: r for r in await _payloads(system, RUNS_RECORDED, since, marker, 2)}
    assert runs[anonymous.json()["run_id"]]["workspace_id"] == "assistant-public"
    assert runs[keyed.json()["run_id"]]["workspace_id"] == "ws-other"


# -- item 5: bounded work in flight ---------------------------------------------------------------
async def test_a_burst_of_30_chats_with_one_key_gets_no_504_and_other_workspaces_stay_fast(system):
    """30 callers of one key at once, each asking again after Retry-After until it is answered
    (for at most 40 s), while another workspace asks one question after another: the burst
    gets answers and immediate refusals with Retry-After, never a 504, and the other
    workspace's chats stay under 2 s at p95. Retrieval answers several chats at once here
    (its default), and its start-up sentence warm-up is still running (the module ends first):
    a chat that waited behind the warm-up (a lock, session 2026-12-06 #12) fails this test."""
    burst_key, other_key = system["keys"]["ws-burst"], system["keys"]["ws-other"]
    outcomes: list[tuple[int, float, str | None]] = []  # status, seconds, Retry-After
    burst_over = asyncio.Event()

    async def burst_caller(http: httpx.AsyncClient, i: int) -> None:
        give_up = time.monotonic() + 40
        while time.monotonic() < give_up:
            started = time.monotonic()
            resp = await _chat(http, f"{QUESTION} (burst {i})", burst_key)
            outcomes.append((resp.status_code, time.monotonic() - started,
                             resp.headers.get("retry-after")))
            if resp.status_code != 429 and resp.status_code != 503:
                return
            await asyncio.sleep(float(resp.headers.get("retry-after", "1")))

    async def burst(http: httpx.AsyncClient) -> None:
        await asyncio.gather(*(burst_caller(http, i) for i in range(30)))
        burst_over.set()

    async def other_workspace(http: httpx.AsyncClient) -> list[tuple[int, float]]:
        seen = []
        await asyncio.sleep(0.2)  # the burst is in
        while not burst_over.is_set() or len(seen) < 10:
            started = time.monotonic()
            resp = await _chat(http, f"Which company makes Velnorex? ({len(seen)})", other_key)
            seen.append((resp.status_code, time.monotonic() - started))
            if len(seen) >= 40:
                break
        return seen

    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=system["url"], timeout=60, limits=limits) as http:
        _, other = await asyncio.gather(burst(http), other_workspace(http))

    statuses = [s for s, _, _ in outcomes]
    assert 504 not in statuses, outcomes
    assert set(statuses) <= {200, 429, 503}, outcomes
    assert statuses.count(200) >= 2, outcomes  # the key's bound is 2 at once, not 0
    refusals = [(s, seconds, ra) for s, seconds, ra in outcomes if s != 200]
    assert refusals, "nothing was refused: the burst was not bounded"
    assert all(ra is not None and int(ra) >= 1 for _, _, ra in refusals), refusals
    # refused at once: nothing waits for the pipeline (1.25 s at p95 was seen for 100 at once at
    # load 8; a chat that queued would take up to the 15 s timeout)
    assert max(seconds for _, seconds, _ in refusals) < 3.0, refusals
    assert [s for s, _ in other] == [200] * len(other), other
    latencies = sorted(seconds for _, seconds in other)
    p95 = latencies[math.ceil(0.95 * len(latencies)) - 1]
    print(f"other workspace during the burst: {len(latencies)} chats, p50 "  # -rP shows it
          f"{latencies[len(latencies) // 2]:.2f} s, p95 {p95:.2f} s, max {latencies[-1]:.2f} s; "
          f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    assert p95 < 2.0, f"other workspace p95 {p95:.2f} s during the burst: {latencies}"


async def test_requests_past_their_deadline_are_answered_by_neither_retrieval_nor_answer(system):
    """A chat request read after its deadline is skipped by retrieval; a retrieval result read
    after its deadline is skipped by the answer service; the live request behind each on the
    same key (so the same partition, read after it) is answered, and each service counts the
    skip. The deadline is set in the JSON itself: what any producer may send."""
    bootstrap, messaging = system["bootstrap"], system["messaging"]
    marker = f"deadline-{uuid.uuid4().hex[:10]}"
    past, future = utc_now() - timedelta(seconds=1), utc_now() + timedelta(minutes=5)
    retrieved_since = await end_offsets(bootstrap, RETRIEVAL_COMPLETED)
    answered_since = await end_offsets(bootstrap, CHAT_ANSWERED)

    async def publish(topic: str, payload: Any, deadline: Any) -> None:
        env = messaging.envelope(topic, payload, correlation_id=payload.request_id)
        wire = env.model_dump(mode="json")
        wire["payload"]["deadline"] = deadline.isoformat()
        await publish_raw(messaging, topic, orjson.dumps(wire), key=marker.encode())

    for name, deadline in (("late", past), ("live", future)):
        await publish(CHAT_REQUESTED, ChatRequested(request_id=f"{marker}-req-{name}",
                                                    question=QUESTION), deadline)
    for name, deadline in (("late", past), ("live", future)):
        await publish(RETRIEVAL_COMPLETED, RetrievalCompleted(
            request_id=f"{marker}-ret-{name}", question=QUESTION, chunks=_chunks(),
            hybrid_path=HybridPath.RRF_ONLY, workspace_id="ws-deadline"), deadline)

    retrieved = await _payloads(system, RETRIEVAL_COMPLETED, retrieved_since, f"{marker}-req-",
                                expected=1, settle_s=2)
    assert [p["request_id"] for p in retrieved] == [f"{marker}-req-live"]
    answered = await _payloads(system, CHAT_ANSWERED, answered_since, f"{marker}-",
                               expected=2, settle_s=2)
    assert sorted(p["request_id"] for p in answered) == [f"{marker}-req-live",
                                                        f"{marker}-ret-live"]
    assert metric_sample(_metrics(system, "retrieval"), "attesta_retrieval_chat_expired_total",
                         reason="deadline") >= 1
    assert metric_sample(_metrics(system, "answer"), "attesta_answer_expired_total") >= 1


async def test_a_nul_published_straight_to_the_answer_service_still_gives_a_storable_run(system):
    """Whoever produced it, a retrieval result whose question and context carry NUL characters
    becomes a run whose prompt and answer PostgreSQL text can hold (before, the classifier
    re-ran its whole batch one by one on it and dead-lettered the run)."""
    bootstrap, messaging = system["bootstrap"], system["messaging"]
    marker = f"nul-{uuid.uuid4().hex[:10]}"
    answered_since = await end_offsets(bootstrap, CHAT_ANSWERED)
    runs_since = await end_offsets(bootstrap, RUNS_RECORDED)
    await messaging.publish(RETRIEVAL_COMPLETED, RetrievalCompleted(
        request_id=marker, question=f"What is the usual\x00 adult dose of Velnorex?\x00 ({marker})",
        chunks=_chunks(nul=True), hybrid_path=HybridPath.RRF_ONLY, workspace_id="ws-nul"),
        key=marker, correlation_id=marker)
    [reply] = await _payloads(system, CHAT_ANSWERED, answered_since, marker, expected=1)
    assert reply["run_id"], reply
    [run_payload] = await _payloads(system, RUNS_RECORDED, runs_since, reply["run_id"], expected=1)
    run = RunRecorded.model_validate(run_payload)
    assert run.prompt == f"What is the usual adult dose of Velnorex? ({marker})"
    assert run.answer_sha256 == hashlib.sha256(run.answer.encode("utf-8")).hexdigest()
    conn = await asyncpg.connect(postgres_admin_url())
    try:  # what the classifier's and the evidence service's text columns must take
        await conn.execute("CREATE TEMP TABLE stored_runs (prompt text, answer text, model text)")
        await conn.execute("INSERT INTO stored_runs VALUES ($1, $2, $3)",
                           run.prompt, run.answer, run.model)
        assert await conn.fetchval("SELECT prompt FROM stored_runs") == run.prompt
    finally:
        await conn.close()
    assert ChatAnswered.model_validate(reply).answer == run.answer


def _chunks(nul: bool = False) -> list[ContextChunk]:
    cards = {c["card_id"]: c for c in load_cards()}
    out = []
    for card_id in ("med-velnorex", "product-velnorex"):
        c = cards[card_id]
        text = c["text"].replace("adult dose", "adult\x00 dose") if nul else c["text"]
        out.append(ContextChunk(id=card_id, card_id=card_id, title=c["title"], text=text,
                                source=c["source"], metadata=c["metadata"]))
    return out
