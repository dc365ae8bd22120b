"""Collection end to end on real PostgreSQL and Kafka against the local fake engine
(127.0.0.1): every sample becomes exactly one run on the runs topic, with its sources, raw
response hash, usage and latency; engine faults end in a defined outcome with the reason; two
collector instances on one schedule collect each sample once."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime

import httpx
import jsonschema
import orjson
import pytest

from attesta_collector.adapters import postgres as db
from attesta_collector.adapters.engines import engine_http, openai_engines
from attesta_collector.bootstrap import unit_of_work_factory
from attesta_collector.domain.commands import (
    CreateEngine,
    CreatePrompt,
    CreateSchedule,
    GetSlotProgress,
    PlanDue,
    PlanSlotNow,
)
from attesta_collector.domain.model import BrandNames, EngineSpec, PromptSpec, ScheduleSpec
from attesta_collector.bootstrap import build_bus
from attesta_collector.entrypoints.http import create_app
from attesta_testing.collector import (
    INTERNAL_TOKEN,
    allow_url,
    engine_checks,
    engine_keys,
    private_topics,
    random_box,
)
from attesta_collector.service_layer import catalog
from attesta_collector.service_layer.collecting import Collector, CollectorLimits, CollectorTopics
from attesta_collector.service_layer.planning import plan_due, plan_slot_now
from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_contracts import topic
from attesta_contracts.runs import RunRecorded
from attesta_contracts.schemas import load_snapshot
from attesta_contracts.topics import RUNS_RECORDED
from attesta_platform import outbox
from attesta_platform.messaging import Messaging, ensure_topics
from attesta_platform.outbound import OutboundPolicy
from attesta_testing.infra import end_offsets, kafka_bootstrap, read_from

pytestmark = pytest.mark.integration

WS = "ws-collect"
BRANDS = StaticBrandDirectory({WS: [
    BrandNames("lumora", "Lumora", (), ("lumora.example",), ("vexa",)),
    BrandNames("vexa", "Vexa Labs", (), ("vexa-labs.example",), ("lumora",))]})
SLOT = datetime(2026, 12, 4, 10, tzinfo=UTC)


# The outbound policy the collectors of this module run under: the fake engine's address:port.
FAKE_ENGINE_POLICY: list[OutboundPolicy] = []


@pytest.fixture(autouse=True)
def _fake_engine_allowed(fake_engine):
    FAKE_ENGINE_POLICY[:] = [OutboundPolicy.from_setting(allow_url(fake_engine.base_url))]


@pytest.fixture(scope="module")
def topics() -> CollectorTopics:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    return private_topics(prefix)


@pytest.fixture
async def messaging(topics):
    m = Messaging(kafka_bootstrap(), "collector-test")
    await ensure_topics(kafka_bootstrap(), [topics.runs_recorded, topics.collection_failed,
                                            topics.chat_requested,
                                            topics.engine_response_captured], 3)
    await m.start()
    yield m
    await m.stop()


async def seed(new_uow, engines: dict[str, dict], prompts: list[str], samples: int,
               schedule_id: str = "sch") -> None:
    for text in prompts:
        await catalog.create_prompt(CreatePrompt(WS, PromptSpec(text=text, prompt_set="core")),
                                    new_uow(), BRANDS)
    for engine_id, spec in engines.items():  # the fake engine's address:port is allow-listed
        await catalog.create_engine(CreateEngine(WS, EngineSpec(engine_id=engine_id, **spec)),
                                    new_uow(), engine_checks(allow_url(spec["base_url"])))
    await catalog.create_schedule(CreateSchedule(WS, ScheduleSpec(
        schedule_id=schedule_id, engine_ids=list(engines), interval_s=3600, samples=samples)),
        new_uow())


async def collect_slot(pool, messaging, topics, owner="a", slot=SLOT, limits=None) -> None:
    new_uow = unit_of_work_factory(pool)
    async with engine_http(FAKE_ENGINE_POLICY[0]) as http:
        c = Collector(new_uow, owner, openai_engines(http, engine_keys(new_uow)), topics,
                      limits or CollectorLimits(poll_s=0.05))
        await plan_slot_now(PlanSlotNow(WS, "sch", slot), new_uow())
        stop = asyncio.Event()
        task = asyncio.create_task(c.run(stop))
        await wait_finished(new_uow, slot)
        stop.set()
        await task
    while await outbox.relay_batch(pool, messaging):
        pass


async def wait_finished(new_uow, slot, timeout_s=60.0):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        counts = await catalog.get_slot_progress(GetSlotProgress(WS, "sch", slot), new_uow())
        if counts and set(counts) <= {"collected", "failed"}:
            return counts
        await asyncio.sleep(0.05)
    raise AssertionError(f"slot not finished: {counts}")


def runs_of(values: list[bytes]) -> list[dict]:
    return [orjson.loads(v) for v in values]


async def test_samples_become_runs_once_with_sources_usage_latency_and_raw(
        pool, new_uow, messaging, topics, fake_engine):
    start = await end_offsets(kafka_bootstrap(), topics.runs_recorded)
    raw_start = await end_offsets(kafka_bootstrap(), topics.engine_response_captured)
    await seed(new_uow, {"fake": {"name": "fake-gpt", "base_url": fake_engine.base_url,
                               "model": "fake-1", "concurrency": 4}},
               ["What is the best sleep tracker?", "Compare smart thermostats",
                "Which ring tracks sleep best?"], samples=3)
    await collect_slot(pool, messaging, topics)
    envs = runs_of(await read_from(kafka_bootstrap(), topics.runs_recorded, start,
                                   lambda v: b'"ws-collect"' in v, expected=9, settle_s=1.0))
    assert len(envs) == 9 and len({e["payload"]["run_id"] for e in envs}) == 9
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT * FROM collections ORDER BY collection_id")
    assert {r["status"] for r in rows} == {"collected"}
    assert {r["run_id"] for r in rows} == {e["payload"]["run_id"] for e in envs}
    assert {r["collection_id"] for r in rows} == {r["run_id"] for r in rows}
    sample_texts = {}
    for env in envs:
        run = env["payload"]
        assert run["engine"] == "fake-gpt" and run["model"] == "fake-1"
        assert run["source"] == "collector" and run["usage"]["total_tokens"] > 0
        assert run["latency_ms"] > 0 and len(run["raw_response_sha256"]) == 64
        for s in run["sources"]:
            assert s["domain"] and s["origin"] in ("text", "annotation", "citations")
        sample_texts.setdefault(run["prompt"], set()).add(run["answer"])
    # Three samples of a prompt are three asks: the fake engine varies its answers.
    assert any(len(texts) > 1 for texts in sample_texts.values())
    assert any(s["origin"] != "text" for e in envs for s in e["payload"]["sources"]) or \
        any(e["payload"]["sources"] for e in envs)
    # The raw response is stored byte for byte under its hash, and goes to the evidence log:
    # one event per run, whose content is those bytes and whose sha256 is the run's.
    raw_envs = runs_of(await read_from(kafka_bootstrap(), topics.engine_response_captured,
                                       raw_start, lambda v: b'"ws-collect"' in v, expected=9,
                                       settle_s=1.0))
    captured = {e["payload"]["run_id"]: e["payload"] for e in raw_envs}
    assert len(raw_envs) == 9 and set(captured) == {r["run_id"] for r in rows}
    uow = new_uow()
    async with uow.read():
        for r in rows:
            body = await uow.collections.raw(r["raw_sha256"])
            assert orjson.loads(body)["choices"][0]["message"]["content"]
            event = captured[r["run_id"]]
            assert event["content"].encode("utf-8") == body
            assert event["sha256"] == r["raw_sha256"] == hashlib.sha256(body).hexdigest()
    assert {e["payload"]["run_id"]: e["payload"]["raw_response_sha256"] for e in envs} == {
        k: v["sha256"] for k, v in captured.items()}
    # Each run carries the prompt's id, set and tags, for the classifier's metric splits.
    assert {e["payload"]["prompt_context"]["prompt_set"] for e in envs} == {"core"}
    # Through the API, each source labelled for one brand (owned / competitor / third_party).
    app = create_app(build_bus(new_uow, brands=BRANDS, engine_checks=engine_checks(),
                               sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c",
                                 headers={"X-Attesta-Internal-Token": INTERNAL_TOKEN,
                                          "X-Attesta-Workspace": WS}) as api:
        listed = (await api.get("/v1/collections", params={"brand_id": "lumora"})).json()["items"]
        assert (await api.get("/v1/collections", params={"brand_id": "ghost"})).status_code == 404
    labels = {(s["domain"], s["label"]) for c in listed for s in c["sources"]}
    assert ("lumora.example", "owned") in labels
    assert any(lab == "third_party" for _, lab in labels)
    assert all(lab == ("owned" if d == "lumora.example" else "competitor" if d == "vexa-labs.example"
                       else "third_party") for d, lab in labels)
    # A second run of the same slot plans and publishes nothing new.
    await collect_slot(pool, messaging, topics)
    again = await read_from(kafka_bootstrap(), topics.runs_recorded, start,
                            lambda v: b'"ws-collect"' in v, expected=10, timeout_s=3)
    assert len(again) == 9


async def test_a_raw_body_over_the_evidence_limit_stays_in_the_collector(
        pool, new_uow, messaging, topics, fake_engine):
    raw_start = await end_offsets(kafka_bootstrap(), topics.engine_response_captured)
    start = await end_offsets(kafka_bootstrap(), topics.runs_recorded)
    await seed(new_uow, {"fake": {"name": "fake-small-limit", "base_url": fake_engine.base_url,
                               "model": "fake-1"}}, ["Which ring tracks sleep best?"], samples=2)
    await collect_slot(pool, messaging, topics,
                       limits=CollectorLimits(poll_s=0.05, max_evidence_bytes=100))
    runs = await read_from(kafka_bootstrap(), topics.runs_recorded, start,
                           lambda v: b'"fake-small-limit"' in v, expected=2, settle_s=0.5)
    assert len(runs) == 2  # the runs are recorded and keep their raw_response_sha256 ...
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM collections WHERE raw_sha256 IS NOT NULL "
                                   "AND status = 'collected'") == 2
    # ... but no body goes to the evidence log
    raw = await read_from(kafka_bootstrap(), topics.engine_response_captured, raw_start,
                          lambda v: b'"ws-collect"' in v, expected=1, timeout_s=2)
    assert raw == []


@pytest.mark.parametrize(("model", "status", "needle"), [
    ("fake-flaky", "collected", None),
    ("fake-500", "failed", "server_error: HTTP 500"),
    ("fake-429", "failed", "rate_limited: HTTP 429"),
    ("fake-malformed", "failed", "malformed: response is not JSON"),
    ("fake-empty", "failed", "empty_answer"),
    ("fake-huge", "failed", "too_large"),
    ("fake-timeout", "failed", "timeout"),
    ("fake-unauthorized", "failed", "client_error: HTTP 401"),
])
async def test_engine_faults_have_defined_outcomes(pool, new_uow, messaging, topics, fake_engine,
                                                   model, status, needle):
    start = await end_offsets(kafka_bootstrap(), topics.collection_failed)
    await seed(new_uow, {"e": {"name": model, "base_url": fake_engine.base_url, "model": model,
                            "timeout_s": 1.0 if model == "fake-timeout" else 15.0,
                            "retry": {"attempts": 3, "initial_backoff_s": 0.01,
                                      "max_backoff_s": 0.05}}},
               [f"Tell me about Lumora ({model})"], samples=1)
    await collect_slot(pool, messaging, topics)
    async with pool.acquire() as conn:
        [row] = await conn.fetch("SELECT * FROM collections")
    assert row["status"] == status, row["last_error"]
    if status == "collected":
        assert row["attempts"] == 3  # two 500s retried, then the answer
        return
    assert needle in row["last_error"]
    retried = model not in ("fake-huge", "fake-unauthorized")
    assert row["attempts"] == (3 if retried else 1), row["last_error"]
    failed = runs_of(await read_from(kafka_bootstrap(), topics.collection_failed, start,
                                     lambda v: row["collection_id"].encode() in v, expected=1))
    assert failed[0]["payload"]["reason"] == row["last_error"]


async def test_two_instances_on_one_schedule_collect_each_sample_once(
        collector_db, messaging, topics, fake_engine):
    start = await end_offsets(kafka_bootstrap(), topics.runs_recorded)
    pools = [await db.create_pool(collector_db.app_url, max_size=5) for _ in range(2)]
    uows = [unit_of_work_factory(p) for p in pools]
    try:
        await seed(uows[0], {"slow": {"name": "slow", "base_url": fake_engine.base_url,
                                       "model": "fake-1", "concurrency": 3}},
                   [f"prompt number {i} about sleep" for i in range(6)], samples=2)
        now = datetime.now(UTC)
        # Both instances plan (the schedule row lock lets one win) and both collect.
        assert sum(await asyncio.gather(plan_due(PlanDue(), uows[0](), now),
                                        plan_due(PlanDue(), uows[1](), now))) == 12
        finished: list[tuple[str, str]] = []
        async with engine_http(FAKE_ENGINE_POLICY[0]) as http:
            collectors = [Collector(u, f"inst-{i}", openai_engines(http, engine_keys(u)), topics,
                                    CollectorLimits(poll_s=0.02),
                                    on_finished=lambda cid, st, i=i: finished.append((cid, i)))
                          for i, u in enumerate(uows)]
            stop = asyncio.Event()
            tasks = [asyncio.create_task(c.run(stop)) for c in collectors]
            async with pools[0].acquire() as conn:
                slot = await conn.fetchval("SELECT max(slot) FROM collections")
            await wait_finished(uows[0], slot)
            stop.set()
            await asyncio.gather(*tasks)
        for p in pools:
            while await outbox.relay_batch(p, messaging):
                pass
        assert len(finished) == 12 and len({cid for cid, _ in finished}) == 12
        assert {i for _, i in finished} == {0, 1}, "both instances should have worked"
        envs = runs_of(await read_from(kafka_bootstrap(), topics.runs_recorded, start,
                                       lambda v: b'"ws-collect"' in v, expected=12, settle_s=1.0))
        assert len(envs) == 12 and len({e["payload"]["run_id"] for e in envs}) == 12
    finally:
        for p in pools:
            await p.close()


@pytest.mark.parametrize(("model", "method", "build", "run_model", "notes"), [
    # The endpoint reports a dated build that differs from the requested model.
    ("fake-dated", "api_with_search",
     {"model": "fake-dated-2026-11-01", "system_fingerprint": "fp_fake0001"},
     "fake-dated-2026-11-01", []),
    ("fake-nobuild", "api", None, "fake-nobuild", []),  # nothing reported: None, not a guess
    # A hostile endpoint: a 5,000-character model with a NUL, a JSON object as fingerprint.
    ("fake-hostile-build", "api", {"model": "m" + "x" * 199, "system_fingerprint": None},
     "m" + "x" * 199,
     ["model: control characters removed", "model: 5001 characters reported, kept the first 200",
      "system_fingerprint: the engine reported a JSON object, not a string; dropped"]),
])
async def test_a_collected_run_carries_the_engines_method_and_the_reported_build(
        pool, new_uow, messaging, topics, fake_engine, model, method, build, run_model, notes):
    """Issue #25 item 4, end to end: RunRecorded on Kafka carries the engine's declared
    collection method and the model build the endpoint reported (None when it reports none);
    a hostile build is cleaned with notes on the collection, and the sample is collected."""
    start = await end_offsets(kafka_bootstrap(), topics.runs_recorded)
    await seed(new_uow, {"e": {"name": f"build-{model}", "base_url": fake_engine.base_url,
                               "model": model, "collection_method": method}},
               [f"Which sleep ring is best? ({model})"], samples=1)
    await collect_slot(pool, messaging, topics)
    [value] = await read_from(kafka_bootstrap(), topics.runs_recorded, start,
                              lambda v: f'"build-{model}"'.encode() in v, expected=1,
                              settle_s=0.5)
    jsonschema.validate(orjson.loads(value), load_snapshot(topic(RUNS_RECORDED)))
    run = RunRecorded.model_validate(orjson.loads(value)["payload"])
    assert run.collection_method == method
    assert (run.model_build.model_dump() if run.model_build else None) == build
    assert run.model == run_model
    async with pool.acquire() as conn:
        [row] = await conn.fetch("SELECT * FROM collections")
    assert row["status"] == "collected" and row["collection_method"] == method
    app = create_app(build_bus(new_uow, brands=BRANDS, engine_checks=engine_checks(),
                               sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c",
                                 headers={"X-Attesta-Internal-Token": INTERNAL_TOKEN,
                                          "X-Attesta-Workspace": WS}) as api:
        [listed] = (await api.get("/v1/collections")).json()["items"]
    assert listed["collection_method"] == method and listed["model_build"] == build
    assert listed["model_build_notes"] == notes
