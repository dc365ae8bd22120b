"""A Kafka-only service as a real process (``service_proc.py``): start-up checks and exit codes,
health/readiness/metrics, and graceful shutdown on SIGTERM against the real broker."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED
from attesta_platform.messaging import Messaging
from attesta_testing.infra import commit_group_at_end, free_port, kafka_bootstrap

PROC = Path(__file__).with_name("service_proc.py")


def _spawn(tmp: Path, name: str, **env: str) -> subprocess.Popen:
    full = {**os.environ, "ATTESTA_LOG_JSON": "false", "PROC_JOURNAL": str(tmp / "journal"),
            "PROC_MARKER": "none", "PROC_GROUP": "unused", **env}
    out = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, str(PROC)], env=full, stdout=out,
                            stderr=subprocess.STDOUT)


def _log(tmp: Path, name: str) -> str:
    return (tmp / f"{name}.log").read_text(encoding="utf-8", errors="replace")


async def _until(predicate, what: str, proc: subprocess.Popen | None = None,
                 timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if await predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def _status(url: str) -> int | None:
    try:
        async with httpx.AsyncClient(timeout=2) as c:
            return (await c.get(url)).status_code
    except httpx.HTTPError:
        return None


def _journal(tmp: Path) -> list[str]:
    path = tmp / "journal"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def _stop(proc: subprocess.Popen, timeout: float = 30.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("process did not stop on SIGTERM in time")
        await asyncio.sleep(0.05)
    return proc.returncode


async def _committed(bootstrap: str, topic: str, group: str, partition: int) -> int | None:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await c.start()
    try:
        return await c.committed(TopicPartition(topic, partition))
    finally:
        await c.stop()


@pytest.fixture
async def producer():
    m = Messaging(kafka_bootstrap(), producer="test-service-process")
    await m.ensure_topics([CHAT_REQUESTED, DEAD_LETTERED])
    await m.start()
    yield m
    await m.stop()


async def _ask(m: Messaging, request_id: str, question: str) -> None:
    await m.publish(CHAT_REQUESTED, ChatRequested(request_id=request_id, question=question),
                    key=request_id, correlation_id=request_id)


# -- start-up checks (no broker needed) --------------------------------------------------------


@pytest.mark.unit
async def test_invalid_settings_exit_2_with_each_problem_named(tmp_path):
    proc = _spawn(tmp_path, "bad-settings", ATTESTA_RETRY_ATTEMPTS="0",
                  ATTESTA_HEALTH_PORT="not-a-port")
    rc = await _stop_waiting(proc)
    out = _log(tmp_path, "bad-settings")
    assert rc == 2, out
    assert "invalid configuration for ServiceSettings" in out
    assert "retry_attempts" in out and "health_port" in out
    assert "Traceback" not in out


@pytest.mark.unit
async def test_unreachable_kafka_exits_3_with_a_clear_message(tmp_path):
    closed = free_port()  # bound then released: nothing listens there
    started = time.monotonic()
    proc = _spawn(tmp_path, "no-kafka", KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{closed}",
                  ATTESTA_HEALTH_PORT="0")
    rc = await _stop_waiting(proc)
    out = _log(tmp_path, "no-kafka")
    assert rc == 3, out
    assert "cannot reach Kafka" in out
    assert f"127.0.0.1:{closed}" in out
    assert "Traceback" not in out
    assert time.monotonic() - started < 30


async def _stop_waiting(proc: subprocess.Popen, timeout: float = 30.0) -> int:
    """Wait for a process that is expected to exit on its own."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("process did not exit on its own")
        await asyncio.sleep(0.05)
    return proc.returncode


# -- health, readiness, metrics ------------------------------------------------------------------


@pytest.mark.integration
async def test_health_readiness_and_metrics(tmp_path, producer):
    bootstrap = kafka_bootstrap()
    group = f"test-health-{uuid.uuid4().hex[:8]}"
    marker = f"hl-{uuid.uuid4().hex[:8]}"
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gate, not_ready = tmp_path / "gate", tmp_path / "not-ready"
    proc = _spawn(tmp_path, "health", KAFKA_BOOTSTRAP_SERVERS=bootstrap, ATTESTA_HEALTH_PORT=str(port),
                  PROC_GROUP=group, PROC_MARKER=marker, PROC_GATE=str(gate),
                  PROC_NOT_READY=str(not_ready))
    try:
        async with httpx.AsyncClient(base_url=base, timeout=5) as http:
            # Alive before Kafka and consumers are up; not ready while start-up is gated.
            await _until(lambda: _is(base + "/healthz", 200), "healthz", proc)
            assert (await http.get("/healthz")).json() == {"status": "ok", "service": "testproc"}
            resp = await http.get("/readyz")
            assert resp.status_code == 503
            assert resp.json()["error"]["code"] == "not_ready"
            assert "starting" in resp.json()["error"]["reason"]

            gate.touch()
            await _until(lambda: _is(base + "/readyz", 200), "readyz 200", proc)
            assert (await http.get("/readyz")).json() == {"status": "ready", "service": "testproc"}

            # The service's own readiness check, with its reason.
            not_ready.write_text("index not built yet", encoding="utf-8")
            resp = await http.get("/readyz")
            assert resp.status_code == 503
            assert resp.json() == {"error": {"code": "not_ready", "reason": "index not built yet"}}
            not_ready.unlink()
            assert (await http.get("/readyz")).status_code == 200

            rid = f"{marker}-1"
            await _ask(producer, rid, "fast question")
            await _until(lambda: _has(tmp_path, f"done {rid} "), "message handled", proc)
            resp = await http.get("/metrics")
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/plain")
            text = resp.text
            assert "# TYPE attesta_messages_consumed_total counter" in text
            assert "# TYPE attesta_handler_seconds histogram" in text
            processed = _metric(text, "attesta_messages_consumed_total",
                                consumer=group, outcome="processed", topic=CHAT_REQUESTED)
            assert processed is not None and processed >= 1, text[:2000]
            assert "process_resident_memory_bytes" in text  # default process collector
        assert await _stop(proc) == 0, _log(tmp_path, "health")
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.integration
async def test_a_consumer_that_dies_fails_readiness_and_stops_the_service(tmp_path, producer):
    """Nobody awaits a consumer's task while the service runs: when it ends, the service must
    not go on answering ready with nothing reading its partitions."""
    bootstrap = kafka_bootstrap()
    group = f"test-dies-{uuid.uuid4().hex[:8]}"
    marker = f"cd-{uuid.uuid4().hex[:8]}"
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    port = free_port()
    proc = _spawn(tmp_path, "dies", KAFKA_BOOTSTRAP_SERVERS=bootstrap,
                  ATTESTA_HEALTH_PORT=str(port), PROC_GROUP=group, PROC_MARKER=marker)
    try:
        await _until(lambda: _is(f"http://127.0.0.1:{port}/readyz", 200), "ready", proc)
        await _ask(producer, f"{marker}-1", "fatal question")
        assert await _stop_waiting(proc) == 1, _log(tmp_path, "dies")
        out = _log(tmp_path, "dies")
        assert "consumer ended; stopping" in out
        assert f"consumer {group}<-{CHAT_REQUESTED} failed" in out
        assert "the consume loop is gone" in out
        assert "service stopped" in out  # an orderly stop, then exit 1
    finally:
        if proc.poll() is None:
            proc.kill()


async def _is(url: str, status: int) -> bool:
    return await _status(url) == status


async def _has(tmp: Path, prefix: str) -> bool:
    return any(line.startswith(prefix) for line in _journal(tmp))


def _metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one Prometheus sample whose labels include ``labels``."""
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if not m:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(m.group(2))
    return None


# The three consume paths: one message at a time, a batch per handler call, and messages of
# different keys at once (the pipeline of ``consuming._Pipeline``).
MODES = {"single": {"PROC_BATCH": "0"}, "batch": {"PROC_BATCH": "1"},
         "concurrent": {"PROC_BATCH": "0", "ATTESTA_KAFKA_CONSUMER_CONCURRENCY": "16"}}


# -- graceful shutdown -----------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
async def test_sigterm_finishes_in_flight_message_commits_it_and_restart_skips_it(tmp_path, producer, mode):
    bootstrap = kafka_bootstrap()
    group = f"test-graceful-{uuid.uuid4().hex[:8]}"
    marker = f"gs-{uuid.uuid4().hex[:8]}"
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "PROC_GROUP": group, "PROC_MARKER": marker,
           "PROC_SLOW_S": "3", **mode}
    port = free_port()
    first = _spawn(tmp_path, "first", ATTESTA_HEALTH_PORT=str(port), **env)
    second = None
    try:
        await _until(lambda: _is(f"http://127.0.0.1:{port}/readyz", 200), "first ready", first)
        slow = f"{marker}-slow"
        await _ask(producer, slow, "slow question")
        await _until(lambda: _has(tmp_path, f"start {slow} "), "slow handler started", first)
        assert not await _has(tmp_path, f"done {slow} ")  # in flight when the signal lands
        assert await _stop(first) == 0, _log(tmp_path, "first")

        lines = _journal(tmp_path)
        assert [line.split()[:2] for line in lines] == [["start", slow], ["done", slow]], lines
        partition, offset = map(int, lines[-1].split()[2].split(":"))
        assert await _committed(bootstrap, CHAT_REQUESTED, group, partition) == offset + 1

        # A new process in the same group continues after the committed message.
        port = free_port()
        second = _spawn(tmp_path, "second", ATTESTA_HEALTH_PORT=str(port), **env)
        await _until(lambda: _is(f"http://127.0.0.1:{port}/readyz", 200), "second ready", second)
        after = f"{marker}-after"
        await _ask(producer, after, "fast question")
        await _until(lambda: _has(tmp_path, f"done {after} "), "next message handled", second)
        assert await _stop(second) == 0, _log(tmp_path, "second")
        starts = [line.split()[1] for line in _journal(tmp_path) if line.startswith("start ")]
        assert starts == [slow, after], _journal(tmp_path)  # the slow one was not reprocessed
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()


@pytest.mark.integration
@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
async def test_kill_9_mid_handler_loses_nothing_and_redoes_only_the_uncommitted(tmp_path, producer, mode):
    """kill -9 while a message (single) or a batch (batch) is in the handler: after a restart
    every message is handled; the messages finished and committed before the kill are not
    handled again, the one in flight is (at-least-once: its effect must be idempotent)."""
    bootstrap = kafka_bootstrap()
    group = f"test-kill-{uuid.uuid4().hex[:8]}"
    marker = f"k9-{uuid.uuid4().hex[:8]}"
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "PROC_GROUP": group, "PROC_MARKER": marker,
           "PROC_SLOW_S": "30", **mode}
    port = free_port()
    first = _spawn(tmp_path, "first", ATTESTA_HEALTH_PORT=str(port), **env)
    second = None
    same_key = f"{marker}-key"  # one partition, so "before" and "after" are ordered

    async def ask(rid: str, question: str) -> None:
        await producer.publish(CHAT_REQUESTED, ChatRequested(request_id=rid, question=question),
                               key=same_key, correlation_id=rid)

    try:
        await _until(lambda: _is(f"http://127.0.0.1:{port}/readyz", 200), "first ready", first)
        before = [f"{marker}-a{i}" for i in range(5)]
        for rid in before:
            await ask(rid, "fast question")
        await _until(lambda: _has(tmp_path, f"done {before[-1]} "), "first messages handled", first)
        partition = int(_journal(tmp_path)[-1].split()[2].split(":")[0])
        last = int(_journal(tmp_path)[-1].split()[2].split(":")[1])

        async def committed_past_before() -> bool:
            return (await _committed(bootstrap, CHAT_REQUESTED, group, partition) or 0) > last

        await _until(committed_past_before, "pipelined commit of the first messages", first)
        slow, after = f"{marker}-slow", [f"{marker}-b{i}" for i in range(3)]
        await ask(slow, "slow question")
        for rid in after:
            await ask(rid, "fast question")
        await _until(lambda: _has(tmp_path, f"start {slow} "), "slow handler started", first)
        first.kill()  # SIGKILL: no clean-up at all
        first.wait(10)

        port = free_port()
        env["PROC_SLOW_S"] = "0.1"
        second = _spawn(tmp_path, "second", ATTESTA_HEALTH_PORT=str(port), **env)
        await _until(lambda: _has(tmp_path, f"done {after[-1]} "), "the rest handled", second)
        assert await _stop(second) == 0, _log(tmp_path, "second")
        done = [line.split()[1] for line in _journal(tmp_path) if line.startswith("done ")]
        starts = [line.split()[1] for line in _journal(tmp_path) if line.startswith("start ")]
        assert all(done.count(rid) == 1 for rid in before), done  # committed: never redone
        assert all(rid in done for rid in [slow, *after]), done  # nothing lost
        assert starts.count(slow) == 2, starts  # in flight at the kill: read again
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
