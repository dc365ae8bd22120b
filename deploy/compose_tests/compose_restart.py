"""Against the running compose stack (`deploy/compose.sh up`; .ci/run runs this after it): the
answer and the classifier containers are killed and come back under compose's restart policy,
and the system recovers with nothing lost or doubled.

    .venv/bin/python -m pytest deploy/compose_tests/compose_restart.py -q
    (ATTESTA_COMPOSE_PROJECT and ATTESTA_COMPOSE_HTTP_PORT name the stack)

How a container is killed: its main process gets SIGKILL from the host, as a crash or the
kernel's OOM killer would do it. (`docker kill` itself counts as a deliberate stop for Docker
20.10's restart policy, which then leaves the container down; checked in the first test.)
Not in the default suite (its name is not test_*.py, so pytest collects it only when named):
it needs the stack, which only the Docker path builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROJECT = os.environ.get("ATTESTA_COMPOSE_PROJECT", "attesta")
GATEWAY = f"http://127.0.0.1:{os.environ.get('ATTESTA_COMPOSE_HTTP_PORT', '8080')}"
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"
TAG = os.environ.get("ATTESTA_IMAGE_TAG", "dev")


def _run(*cmd: str, stdin: str | None = None) -> str:
    res = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{cmd}: {res.stderr[-2000:]}"
    return res.stdout


def container(service: str) -> str:
    cid = _run("docker-compose", "-p", PROJECT, "-f", str(REPO / "docker-compose.yml"), "ps", "-q",
               service).strip()
    assert cid, f"no {service} container in compose project {PROJECT}"
    return cid


def state(cid: str) -> dict:
    return json.loads(_run(DOCKER, "inspect", "-f", "{{json .State}}", cid)) | {
        "RestartCount": int(_run(DOCKER, "inspect", "-f", "{{.RestartCount}}", cid))}


def crash(cid: str) -> int:
    """SIGKILL to the container's main process from the host; returns the restart count before."""
    before = state(cid)
    _run("kill", "-9", str(before["Pid"]))
    return before["RestartCount"]


def wait_restarted_healthy(cid: str, restarts_before: int, timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        st = state(cid)
        if st["RestartCount"] > restarts_before and (st.get("Health") or {}).get("Status") == "healthy":
            return st
        assert time.monotonic() < deadline, f"{cid[:12]} not restarted and healthy: {st}"
        time.sleep(1)


def api_key() -> str:
    return _run(DOCKER, "run", "--rm", "-v", f"{PROJECT}_seed:/s:ro", f"attesta/tools:{TAG}",
                "cat", "/s/demo-api-key").strip()


def psql(database: str, sql: str) -> list[str]:
    out = _run(DOCKER, "exec", container("postgres"), "psql", "-h", "127.0.0.1", "-U",
               "attesta_admin", "-d", database, "-tAc", sql)
    return [line for line in out.splitlines() if line.strip()]


COUNT_ANSWERS = """
import asyncio, collections, json, sys
from aiokafka import AIOKafkaConsumer
marker = sys.argv[1]
async def main():
    c = AIOKafkaConsumer("chat.answered.v1", bootstrap_servers="127.0.0.1:9092",
                         auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    ids = collections.defaultdict(set)
    try:
        while True:
            batch = await c.getmany(timeout_ms=3000)
            if not batch:
                break
            for records in batch.values():
                for r in records:
                    if marker.encode() in r.value:
                        env = json.loads(r.value)
                        ids[env["payload"]["question"][-len(marker) - 3:]].add(env["event_id"])
    finally:
        await c.stop()
    print(json.dumps({k: sorted(v) for k, v in ids.items()}))
asyncio.run(main())
"""


def answers_by_question(marker: str) -> dict[str, list[str]]:
    # The Kafka image carries aiokafka for its readiness probe; the broker is not published.
    out = _run(DOCKER, "exec", "-i", container("kafka"), "/opt/venv/bin/python", "-", marker,
               stdin=COUNT_ANSWERS)
    return json.loads(out.strip().splitlines()[-1])


def test_docker_kill_is_a_deliberate_stop_for_this_engine_and_compose_up_brings_it_back() -> None:
    cid = container("answer")
    _run(DOCKER, "kill", cid)
    time.sleep(5)
    assert state(cid)["Status"] == "exited"  # the engine's policy: no restart after `docker kill`
    _run("docker-compose", "-p", PROJECT, "-f", str(REPO / "docker-compose.yml"), "up", "-d",
         "--no-deps", "answer")
    deadline = time.monotonic() + 300
    while (state(container("answer")).get("Health") or {}).get("Status") != "healthy":
        assert time.monotonic() < deadline, state(container("answer"))
        time.sleep(1)


def test_killed_answer_restarts_and_each_question_is_answered_once() -> None:
    cid = container("answer")
    marker = f"ck{uuid.uuid4().hex[:8]}"
    restarts = crash(cid)
    with httpx.Client(base_url=GATEWAY, timeout=120) as http:
        first = http.post("/v1/chat", json={"question": f"Which company makes Velnorex? ({marker}-1)"})
        assert first.status_code in {200, 504}, first.text  # answered, or a clean timeout
        wait_restarted_healthy(cid, restarts)
        second = http.post("/v1/chat", json={"question": f"Which company makes Velnorex? ({marker}-2)"})
        assert second.status_code == 200, second.text
    deadline = time.monotonic() + 120
    while True:  # the killed request is answered after the restart (late for its caller)
        ids = answers_by_question(marker)
        if len(ids) == 2 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert set(ids) == {f"{marker}-1)", f"{marker}-2)"}, ids  # nothing lost
    assert all(len(v) == 1 for v in ids.values()), ids      # nothing doubled


def test_killed_classifier_restarts_and_every_run_is_classified_once() -> None:
    cid = container("classifier")
    key = api_key()
    body = {"engine": "restart-test", "model": "m", "prompt": "Who makes Velnorex?",
            "answer": "Lumora Therapeutics (https://lumora.example/products) makes Velnorex.",
            "brand_ids": ["lumora"]}
    run_ids: list[str] = []
    with httpx.Client(base_url=GATEWAY, timeout=60,
                      headers={"authorization": f"Bearer {key}"}) as http:
        def post() -> None:
            # As a client does: a 503 (the classifier not reachable yet right after its
            # restart) is retried after Retry-After with the same key; only a 202 is accepted.
            key, deadline = str(uuid.uuid4()), time.monotonic() + 120
            while True:
                r = http.post("/v1/runs", json=body, headers={"idempotency-key": key})
                if r.status_code != 503 or time.monotonic() > deadline:
                    break
                time.sleep(float(r.headers.get("retry-after", "1")))
            assert r.status_code == 202, r.text
            run_ids.append(r.json()["run_id"])

        # Accepted runs still being classified when the process dies (POST /v1/runs goes
        # through the classifier, so none can be accepted while it is down).
        for _ in range(6):
            post()
        restarts = crash(cid)
        wait_restarted_healthy(cid, restarts)
        for _ in range(2):
            post()

        deadline = time.monotonic() + 240
        pending = set(run_ids)
        while pending and time.monotonic() < deadline:
            for rid in sorted(pending):
                r = http.get(f"/v1/runs/{rid}")
                if r.status_code == 200 and r.json()["brands"] and all(
                        b["status"] != "pending" for b in r.json()["brands"]):
                    pending.discard(rid)
            time.sleep(1)
    assert not pending, f"runs never classified: {sorted(pending)}"  # nothing lost
    quoted = ",".join(f"'{r}'" for r in run_ids)
    rows = psql("attesta_classifier", "SELECT run_id, brand_id, count(*) FROM classification_history"
                f" WHERE run_id IN ({quoted}) GROUP BY run_id, brand_id")
    counts = {tuple(r.split("|")[:2]): int(r.split("|")[2]) for r in rows}
    assert set(counts) == {(r, "lumora") for r in run_ids}, counts
    assert set(counts.values()) == {1}, counts  # nothing doubled
