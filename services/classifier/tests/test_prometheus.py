"""``GET /metrics`` of the real classifier process (``attesta run classifier``): its own database,
real Kafka, PostgreSQL and Redis (verdict cache), and the LLM judge against a stand-in
OpenAI-compatible server on 127.0.0.1. Runs go in through the internal API, through
runs.recorded.v1 and the live consumer, and the counters move by exactly what was decided:
per class and deciding stage, refusals, pairs parked for the judge, judge calls and latency,
verdict-cache misses and hits, and the consumed messages."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from attesta_testing.infra import MetricsScrape, free_port
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "test-internal-token-prometheus"
JUDGE_MODEL = "stand-in-llm-judge"


@pytest.fixture
async def classifier_process(tmp_path):
    from attesta_classifier.adapters.migrate import migrate
    from attesta_classifier.settings import ClassifierSettings
    from attesta_platform.settings import app_database_url
    from attesta_contracts.topics import RUNS_RECORDED
    from attesta_testing.infra import commit_group_at_end, kafka_bootstrap, temp_database

    fields = ClassifierSettings.model_fields  # the default app role, as the service runs it
    role, password = fields["classifier_db_role"].default, fields["classifier_db_password"].default
    verdict = FakeReply.json({"class": "CONFABULATED", "claims": [
                                  {"claim": "sold in 40 countries", "verdict": "absent", "fact_ids": []}],
                              "reason": "claims sales in 40 countries, which no fact supports"})
    llm = FakeChatServer(responder=lambda body: verdict).start()
    group = f"t-prom-{uuid.uuid4().hex[:8]}"
    # A fresh group at the end of the shared topic: only the runs published from now on.
    await commit_group_at_end(kafka_bootstrap(), RUNS_RECORDED, group)
    port = free_port()
    log = tmp_path / "classifier.log"
    async with temp_database("clsfprom") as admin_url:
        name = admin_url.rsplit("/", 1)[1]
        await migrate(admin_url, name, role, password)
        env = {**os.environ, "ATTESTA_LOG_JSON": "false",
               "ATTESTA_CLASSIFIER_DB_URL": app_database_url(admin_url, name, role, password),
               "ATTESTA_INTERNAL_TOKEN": TOKEN, "ATTESTA_CLASSIFIER_HTTP_PORT": str(port),
               "ATTESTA_CLASSIFIER_GROUP": group, "ATTESTA_JUDGE": "openai",
               "ATTESTA_LLM_BASE_URL": llm.base_url, "ATTESTA_LLM_MODEL": JUDGE_MODEL,
               "ATTESTA_VERDICT_CACHE": "true", "ATTESTA_JUDGE_RETRY_INITIAL_S": "0.2"}
        proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", "classifier"],
                                env=env, cwd=ROOT, stdout=open(log, "ab"),  # noqa: SIM115
                                stderr=subprocess.STDOUT)
        client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30)
        try:
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, f"classifier exited:\n{log.read_text()[-3000:]}"
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, f"not ready:\n{log.read_text()[-3000:]}"
                await asyncio.sleep(0.3)
            yield client, llm, group
        finally:
            await client.aclose()
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            llm.stop()


async def _settled(client: httpx.AsyncClient, headers: dict, run_id: str, timeout_s: float = 90) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        view = (await client.get(f"/v1/runs/{run_id}", headers=headers)).json()
        if view["brands"] and all(b["status"] != "pending" for b in view["brands"]):
            return {b["brand_id"]: b for b in view["brands"]}
        assert time.monotonic() < deadline, view
        await asyncio.sleep(0.2)


async def test_metrics_count_what_the_running_classifier_decided(classifier_process):
    client, llm, group = classifier_process
    tag = uuid.uuid4().hex[:8]
    # Own brand ids: verdict-cache keys include the brand, so no earlier run of this test hits.
    brand, bare = f"kestrel-{tag}", f"nogt-{tag}"
    h = {"X-Attesta-Internal-Token": TOKEN, "X-Attesta-Workspace": f"prom-{tag}"}
    assert (await client.post("/v1/brands", headers=h, json={
        "brand_id": brand, "name": "Kestrel Labs", "domains": ["kestrel.example"]})).status_code == 201
    assert (await client.post(f"/v1/brands/{brand}/ground-truth/facts", headers=h, json={
        "text": "Kestrel Labs makes diagnostic test kits.", "source_url": "https://kestrel.example/",
        "attribution": "kestrel.example"})).status_code == 201
    assert (await client.post("/v1/brands", headers=h, json={  # no ground truth: refused
        "brand_id": bare, "name": "Nogt Corp"})).status_code == 201
    scrape = MetricsScrape(client)
    await scrape.mark()

    runs = {}
    for label, answer, brands in (
            ("strong", "See https://kestrel.example/kits for the kits.", [brand]),
            ("absent", "Nothing about that company here.", [brand]),
            ("judged", "Kestrel Labs makes diagnostic kits sold in 40 countries.", [brand, bare])):
        r = await client.post("/v1/runs", headers=h, json={
            "engine": "chatgpt", "model": "gpt-x", "prompt": "Who makes test kits?",
            "answer": answer, "brand_ids": brands, "answered_at": "2026-12-01T00:00:00Z"})
        assert r.status_code == 202, r.text
        runs[label] = r.json()["run_id"]
    states = {label: await _settled(client, h, run_id) for label, run_id in runs.items()}
    assert states["strong"][brand]["citation_class"] == "STRONG"
    assert states["absent"][brand]["citation_class"] == "ABSENT"
    judged = states["judged"][brand]
    assert (judged["citation_class"], judged["decided_by"]) == ("CONFABULATED", "judge")
    assert states["judged"][bare]["status"] == "refused"

    after = await scrape.text()
    d = scrape.delta
    cls = "attesta_classifier_classifications_total"
    assert d(after, cls, citation_class="STRONG", decided_by="deterministic", trigger="live") == 1
    assert d(after, cls, citation_class="ABSENT", decided_by="deterministic", trigger="live") == 1
    assert d(after, cls, citation_class="CONFABULATED", decided_by="judge", trigger="live") == 1
    assert d(after, cls) == 3  # every series of the family together: nothing else was decided
    assert d(after, "attesta_classifier_refusals_total", trigger="live") == 1
    assert d(after, "attesta_classifier_parked_total", trigger="live") == 1
    assert d(after, "attesta_classifier_judge_calls_total", judge_model=JUDGE_MODEL, outcome="ok") == 1
    assert d(after, "attesta_classifier_judge_calls_total") == 1
    assert d(after, "attesta_classifier_judge_seconds_count", judge_model=JUDGE_MODEL) == 1
    assert d(after, "attesta_classifier_judge_seconds_sum", judge_model=JUDGE_MODEL) > 0
    assert d(after, "attesta_classifier_verdict_cache_total", result="miss") == 1
    assert d(after, "attesta_classifier_verdict_cache_total", result="hit") == 0
    assert d(after, "attesta_messages_consumed_total", consumer=group, topic="runs.recorded.v1",
             outcome="processed") == 3
    assert d(after, "attesta_messages_consumed_total", consumer=group,
             outcome="dead_lettered") == 0
    assert len(llm.requests) == 1

    # A manual reclassification judges inline: the verdict comes from the Redis cache (a hit,
    # no judge call), and it is counted under its own trigger.
    await scrape.mark()
    r = await client.post(f"/v1/runs/{runs['judged']}/reclassify",
                          headers={**h, "X-Attesta-Actor": "key_prom"},
                          json={"reason": "metrics test", "brand_ids": [brand]})
    assert r.status_code == 200 and r.json()["brands"][0]["citation_class"] == "CONFABULATED"
    after = await scrape.text()
    assert d(after, "attesta_classifier_verdict_cache_total", result="hit") == 1
    assert d(after, "attesta_classifier_verdict_cache_total", result="miss") == 0
    assert d(after, "attesta_classifier_judge_calls_total") == 0
    assert d(after, cls, citation_class="CONFABULATED", decided_by="judge", trigger="manual") == 1
    assert d(after, cls) == 1
    assert len(llm.requests) == 1

    openapi = (await client.get("/openapi.json")).json()
    assert "/metrics" not in openapi["paths"]  # an operations route, not part of the API
