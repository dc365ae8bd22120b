"""The chat path end to end: separate retrieval, answer and two gateway processes started with
``attesta run <service>`` on the real Kafka, asked over HTTP.

It depends only on behaviour (answers arrive, dead letters appear, metrics count), not on how
the services are built inside. To run beside the real system on the shared broker, retrieval
gets a consumer group of its own that starts at the current end of ``chat.requested.v1``, and
its index lives in a temporary folder.
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import orjson
import pytest

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered, ChatRequested
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, DEAD_LETTERED
from attesta_platform.messaging import Messaging
from attesta_testing.infra import (
    commit_group_at_end, end_offsets, free_port, kafka_bootstrap, metric_sample, publish_raw,
    read_from)

# The first run on a machine embeds the whole KB for the retrieval index (minutes on 2 busy
# cores): more than the default per-test timeout, which covers the module fixture.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[1]
CHAT_TIMEOUT_S = 8
# The retrieval index persists between runs in .state/e2e-retrieval (one run at a time: locked),
# so only the first run embeds the whole KB (minutes on 2 busy cores); later runs find the
# cards already embedded and are ready in well under a minute.
RETRIEVAL_STATE = ROOT / ".state" / "e2e-retrieval"
RETRIEVAL_READY_S = 600


def _spawn(service: str, log_dir: Path, label: str, **env: str) -> subprocess.Popen:
    full_env = {**os.environ, "ATTESTA_LOG_JSON": "false", "HF_HUB_OFFLINE": "1", **env}
    log = open(log_dir / f"{label}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", service],
                            env=full_env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def _tail(log_dir: Path, label: str, chars: int = 3000) -> str:
    path = log_dir / f"{label}.log"
    return path.read_text(encoding="utf-8", errors="replace")[-chars:] if path.exists() else ""


def _wait_ready(url: str, proc: subprocess.Popen, log_dir: Path, label: str,
                timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{label} exited with {proc.returncode}:\n{_tail(log_dir, label)}")
        try:
            resp = httpx.get(url, timeout=2)
            if resp.status_code == 200:
                return
            last = resp.text[:300]
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.3)
    raise AssertionError(f"{url} not ready in {timeout}s (last: {last}):\n{_tail(log_dir, label)}")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


class System:
    def __init__(self, bootstrap: str, logs: Path, state: Path) -> None:
        self.bootstrap, self.logs, self.state = bootstrap, logs, state
        self.run = uuid.uuid4().hex[:8]
        self.retrieval_group = f"e2e-retrieval-{self.run}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.health: dict[str, int] = {}
        self.gateway_ports: list[int] = []

    def start_answer(self) -> None:
        port = free_port()
        self.procs["answer"] = _spawn("answer", self.logs, "answer", ATTESTA_HEALTH_PORT=str(port))
        self.health["answer"] = port
        _wait_ready(f"http://127.0.0.1:{port}/readyz", self.procs["answer"], self.logs, "answer")

    def metrics(self, name: str) -> str:
        """/metrics of "retrieval", "answer" (health ports) or "gateway0"/"gateway1"."""
        port = self.health.get(name) or self.gateway_ports[int(name.removeprefix("gateway"))]
        resp = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert resp.status_code == 200, resp.text
        return resp.text


def _seed_kb(logs: Path) -> None:
    """The retrieval service indexes what ``kb.cards.v1`` holds: publish the shipped cards
    (unchanged cards are not published again)."""
    with open(logs / "seed-kb.log", "wb") as log:
        proc = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "retrieval",
                               "seed-kb", "--quiet"], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT, timeout=180, check=False)
    assert proc.returncode == 0, _tail(logs, "seed-kb")


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    yield from running_system(tmp_path_factory)


def running_system(tmp_path_factory, retrieval_env: dict[str, str] | None = None,
                   gateway_env: dict[str, str] | None = None):
    """The module fixture's body; other modules (tests/browser) start the same system with it."""
    bootstrap = kafka_bootstrap()
    logs = tmp_path_factory.mktemp("logs")
    RETRIEVAL_STATE.mkdir(parents=True, exist_ok=True)
    with open(RETRIEVAL_STATE.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # an embedded Chroma folder has one writer
        yield from _system(bootstrap, logs, retrieval_env, gateway_env)


def _system(bootstrap: str, logs: Path, retrieval_env: dict[str, str] | None = None,
            gateway_env: dict[str, str] | None = None):
    """The system's processes; ``retrieval_env`` and ``gateway_env`` add settings to the
    retrieval and gateway processes (the Portuguese browser test turns the multilingual side on
    and has the gateways serve the web app)."""
    sysm = System(bootstrap, logs, RETRIEVAL_STATE)
    _seed_kb(logs)
    asyncio.run(commit_group_at_end(bootstrap, CHAT_REQUESTED, sysm.retrieval_group))
    try:
        port = free_port()
        sysm.procs["retrieval"] = _spawn(
            "retrieval", logs, "retrieval", ATTESTA_HEALTH_PORT=str(port),
            ATTESTA_RETRIEVAL_CHAT_GROUP=sysm.retrieval_group,
            ATTESTA_RETRIEVAL_STATE_DIR=str(sysm.state), **(retrieval_env or {}))
        sysm.health["retrieval"] = port
        sysm.gateway_ports = [free_port(), free_port()]
        for i, gport in enumerate(sysm.gateway_ports):
            sysm.procs[f"gateway{i}"] = _spawn(
                "gateway", logs, f"gateway{i}", ATTESTA_HTTP_PORT=str(gport),
                ATTESTA_CHAT_TIMEOUT_S=str(CHAT_TIMEOUT_S),
                ATTESTA_RATE_LIMIT_CHAT_PER_CLIENT="100000",
                ATTESTA_PUBLIC_METRICS="true",  # off by default; this test reads it
                **(gateway_env or {}))
        sysm.start_answer()
        for i, gport in enumerate(sysm.gateway_ports):
            _wait_ready(f"http://127.0.0.1:{gport}/readyz", sysm.procs[f"gateway{i}"], logs,
                        f"gateway{i}")
        _wait_ready(f"http://127.0.0.1:{port}/readyz", sysm.procs["retrieval"], logs, "retrieval",
                    timeout=RETRIEVAL_READY_S)
        yield sysm
    finally:
        _stop(list(sysm.procs.values()))


def _ask(port: int, question: str, timeout: float = 60) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/v1/chat", json={"question": question},
                      timeout=timeout)


def _sample(text: str, name: str, **labels: str) -> float:
    """One Prometheus sample (0 when the labelled series does not exist yet)."""
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            return float(m.group(2))
    return 0.0


def _answers_for(bootstrap: str, offsets: dict[int, int], marker: str, expected: int,
                 settle_s: float = 2.0, timeout_s: float = 30) -> list[Envelope[ChatAnswered]]:
    values = asyncio.run(read_from(bootstrap, CHAT_ANSWERED, offsets,
                                   lambda v: marker.encode() in v, expected, timeout_s, settle_s))
    return [Envelope[ChatAnswered].model_validate_json(v) for v in values]


def test_chat_goes_through_kafka_and_reaches_each_caller(system):
    before = asyncio.run(end_offsets(system.bootstrap, CHAT_ANSWERED))
    # The question carries no marker: an unknown token in it is, rightly, a part the KB does not
    # answer, and the grounding gate may refuse it. Answers are found by their request ids.
    question = "What is the usual adult dose of Velnorex?"
    bodies = []
    for port in system.gateway_ports:
        resp = _ask(port, question)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["status"] == "answered", body
        assert body["citations"] and all(c["card_id"] and c["span"] for c in body["citations"])
        assert body["question"] == question
        bodies.append(body)
    request_ids = sorted(b["request_id"] for b in bodies)
    assert len(set(request_ids)) == 2
    # Each answer really crossed Kafka: it is on chat.answered.v1, once per request.
    values = asyncio.run(read_from(system.bootstrap, CHAT_ANSWERED, before,
                                   lambda v: any(r.encode() in v for r in request_ids), 2, 30, 2.0))
    answers = [Envelope[ChatAnswered].model_validate_json(v) for v in values]
    assert sorted(a.payload.request_id for a in answers) == request_ids


def test_malformed_chat_body_gets_422_with_reason(system):
    port = system.gateway_ports[0]
    resp = httpx.post(f"http://127.0.0.1:{port}/v1/chat", json={"question": ""}, timeout=10)
    assert resp.status_code == 422
    assert resp.json()["error"]["code"] == "invalid_request"
    assert "question" in resp.json()["error"]["reason"]
    resp = httpx.post(f"http://127.0.0.1:{port}/v1/chat", content=b"\xff{", timeout=10,
                      headers={"content-type": "application/json"})
    assert resp.status_code == 422
    assert "not valid JSON" in resp.json()["error"]["reason"]
    resp = httpx.get(f"http://127.0.0.1:{port}/nope", timeout=10)
    assert resp.status_code == 404
    assert set(resp.json()["error"]) == {"code", "reason"}


def test_poison_on_chat_requested_is_dead_lettered_by_retrieval_and_next_request_answered(system):
    bootstrap, group = system.bootstrap, system.retrieval_group
    marker = f"poison-{uuid.uuid4().hex[:10]}"
    dlq_from = asyncio.run(end_offsets(bootstrap, DEAD_LETTERED))
    dead_before = _sample(system.metrics("retrieval"), "attesta_messages_consumed_total",
                          consumer=group, outcome="dead_lettered")

    async def publish_poison() -> tuple[bytes, bytes]:
        m = Messaging(bootstrap, producer="e2e-poisoner")
        await m.start()
        try:
            not_utf8 = b"\xff\xfe not json " + marker.encode()
            invalid = m.envelope(CHAT_REQUESTED, ChatRequested(request_id=marker, question="q"),
                                 correlation_id=marker).model_dump(mode="json")
            invalid["payload"]["question"] = ""  # violates the contract (min_length 1)
            invalid_bytes = orjson.dumps(invalid)
            await publish_raw(m, CHAT_REQUESTED, not_utf8, key=marker.encode())
            await publish_raw(m, CHAT_REQUESTED, invalid_bytes, key=marker.encode())
            return not_utf8, invalid_bytes
        finally:
            await m.stop()

    originals = asyncio.run(publish_poison())
    # The next good request on the same topic is still answered.
    resp = _ask(system.gateway_ports[0], "Which company makes Velnorex?")
    assert resp.status_code == 200, resp.text
    assert resp.json()["status"] in {"answered", "no_context"}

    def ours(value: bytes) -> bool:
        letter = Envelope[MessageDeadLettered].model_validate_json(value).payload
        return letter.consumer == group and marker.encode() in base64.b64decode(letter.original_b64)

    values = asyncio.run(read_from(bootstrap, DEAD_LETTERED, dlq_from, ours, expected=2,
                                   timeout_s=30, settle_s=1))
    letters = [Envelope[MessageDeadLettered].model_validate_json(v).payload for v in values]
    assert {base64.b64decode(x.original_b64) for x in letters} == set(originals)
    assert len(letters) == 2  # each poison dead-lettered once, not looped
    reasons = " | ".join(x.error for x in letters)
    assert "not UTF-8" in reasons and "payload.question" in reasons
    assert all(x.source_topic == CHAT_REQUESTED and x.attempts == 1 for x in letters)
    dead_after = _sample(system.metrics("retrieval"), "attesta_messages_consumed_total",
                         consumer=group, outcome="dead_lettered")
    assert dead_after - dead_before == 2


def test_answer_killed_mid_flight_is_answered_or_times_out_and_nothing_twice(system):
    """kill -9 of the answer service with a request in flight, then restart: the caller gets
    a clean 504 (or the answer); the request read again after the restart is past its deadline
    (issue #23), so it is skipped, not answered late; and no request is answered twice."""
    port, gw = system.gateway_ports[1], "gateway1"
    answered_from = asyncio.run(end_offsets(system.bootstrap, CHAT_ANSWERED))
    metrics_before = system.metrics(gw)
    replies = {o: _sample(metrics_before, "attesta_gateway_replies_total", outcome=o)
               for o in ("delivered", "duplicate", "late")}
    marker = f"kill-{uuid.uuid4().hex[:10]}"

    system.procs["answer"].send_signal(signal.SIGKILL)
    system.procs["answer"].wait(timeout=10)
    started = time.monotonic()
    first = _ask(port, f"Which company makes Velnorex? ({marker}-1)")
    assert time.monotonic() - started < CHAT_TIMEOUT_S + 10
    assert first.status_code in {200, 504}, first.text
    if first.status_code == 504:
        assert first.json()["error"]["code"] == "answer_timeout"

    # Restarted, the answer service reads its uncommitted input again: after a 504 its
    # deadline has passed and it is skipped (nobody waits for it).
    system.start_answer()
    second = _ask(port, f"Which company makes Velnorex? ({marker}-2)")
    assert second.status_code == 200, second.text
    assert second.json()["status"] in {"answered", "no_context"}

    oks = sum(r.status_code == 200 for r in (first, second))
    answers = _answers_for(system.bootstrap, answered_from, marker, expected=oks, settle_s=3)
    by_request: dict[str, set] = {}
    for a in answers:
        by_request.setdefault(a.payload.question[-len(marker) - 3:], set()).add(a.event_id)
    # Each request has at most one answer event id (a redelivered input gives the same derived
    # id, which consumers deduplicate); the one that timed out has none.
    answered = {f"{marker}-2)"} | ({f"{marker}-1)"} if first.status_code == 200 else set())
    assert set(by_request) == answered, answers
    assert all(len(ids) == 1 for ids in by_request.values()), by_request
    if first.status_code == 504:
        assert metric_sample(system.metrics("answer"), "attesta_answer_expired_total") >= 1

    now = {o: _sample(system.metrics(gw), "attesta_gateway_replies_total", outcome=o)
           for o in replies}
    assert now["delivered"] - replies["delivered"] == oks  # one delivery per 200, no more
    assert now["duplicate"] == replies["duplicate"]
    assert now["late"] == replies["late"]  # nothing answered after its caller left


def test_service_exits_2_on_invalid_settings_and_3_when_kafka_unreachable(tmp_path):
    """The same start-up checks as every service: a named configuration problem, or a clear
    'cannot reach Kafka' (a closed port on 127.0.0.1), each with its own exit code."""
    bad = _spawn("answer", tmp_path, "bad-settings", ATTESTA_HEALTH_PORT="99999",
                 ATTESTA_RETRY_ATTEMPTS="0")
    assert bad.wait(timeout=60) == 2, _tail(tmp_path, "bad-settings")
    out = _tail(tmp_path, "bad-settings")
    assert "invalid configuration" in out and "health_port" in out and "retry_attempts" in out
    closed = free_port()
    no_kafka = _spawn("answer", tmp_path, "no-kafka", ATTESTA_HEALTH_PORT="0",
                      KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{closed}")
    assert no_kafka.wait(timeout=90) == 3, _tail(tmp_path, "no-kafka")
    out = _tail(tmp_path, "no-kafka")
    assert "cannot reach Kafka" in out and f"127.0.0.1:{closed}" in out


def _restart_retrieval(system, **env: str) -> None:
    """Stop the retrieval process and start it again on the same index with other settings."""
    _stop([system.procs["retrieval"]])
    port = system.health["retrieval"]
    system.procs["retrieval"] = _spawn(
        "retrieval", system.logs, "retrieval", ATTESTA_HEALTH_PORT=str(port),
        ATTESTA_RETRIEVAL_CHAT_GROUP=system.retrieval_group,
        ATTESTA_RETRIEVAL_STATE_DIR=str(system.state), **env)
    _wait_ready(f"http://127.0.0.1:{port}/readyz", system.procs["retrieval"], system.logs,
                "retrieval", timeout=RETRIEVAL_READY_S)


def test_full_path_scores_citations_and_rrf_only_never_does(system, tmp_path):
    """ADR-0024 on the running system: with a cross-encoder loaded the path is `full` and every
    citation carries source URL, licence and a 0-100 score; with the reranker disabled the same
    question takes `rrf_only` and its citations keep URL and licence but have no score key."""
    reranker = tmp_path / "reranker"
    with open(system.logs / "train-reranker.log", "wb") as log:  # a tiny one: the path, not quality
        proc = subprocess.run(
            [sys.executable, "-m", "attesta_platform.cli", "retrieval", "train-reranker",
             "--out", str(reranker), "--max-steps", "2", "--max-queries", "6",
             "--max-length", "96", "--quiet"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=300, check=False,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, _tail(system.logs, "train-reranker")
    question = "What is the usual adult dose of Velnorex?"

    _restart_retrieval(system, ATTESTA_RERANKER_DIR=str(reranker),
                       ATTESTA_RETRIEVAL_RERANK_BUDGET_MS="60000")
    full = _ask(system.gateway_ports[0], question)
    assert full.status_code == 200, full.text
    body = full.json()
    assert body["hybrid_path"] == "full", body
    assert body["citations"], body
    for c in body["citations"]:
        assert c["source_url"].startswith("https://") and c["source_license"], c
        assert 0 <= c["retrieved_score"] <= 100 and c["retrieved_score"] == int(c["retrieved_score"])

    _restart_retrieval(system, ATTESTA_RERANKER_DIR=str(tmp_path / "no-such-reranker"))
    rrf = _ask(system.gateway_ports[0], question)
    assert rrf.status_code == 200, rrf.text
    body = rrf.json()
    assert body["hybrid_path"] == "rrf_only", body
    assert body["citations"], body
    for c in body["citations"]:
        assert c["source_url"].startswith("https://") and c["source_license"], c
        assert "retrieved_score" not in c, c  # absent, not null
