"""The internal HTTP API on the real app and real PostgreSQL: every status code, workspace
isolation, refusal without ground truth, refresh idempotency, manual reclassification, history
as of a time. Runs are fed to the pipeline the way the consumer does (record_runs)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime

import orjson
import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import PromptContext, RunRecorded

pytestmark = pytest.mark.integration


async def feed(pool, heuristic, run_id: str, workspace: str, answer: str, brand_ids=(),
               prompt: str = "What do you know about Lumora?", engine: str = "engine-a",
               consumer: str = "classifier", trigger: str = "live", event_id=None,
               answered_at=None, prompt_context=None):
    """What the live consumer does with one runs.recorded.v1 event."""
    at = answered_at or datetime.now(UTC)
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine=engine, model="m-1",
                          prompt=prompt, answer=answer,
                          answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          brand_ids=list(brand_ids), requested_at=at, answered_at=at,
                          prompt_context=prompt_context)
    return await record_runs(RecordRuns((IncomingRun(event_id or uuid.uuid4(), payload, run_id),), consumer, trigger),
                             ClassifierUnitOfWork(pool), heuristic)


async def outbox(pool, topic: str, key: str) -> list[dict]:
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT value FROM messaging_outbox WHERE topic = $1 AND key = $2 "
                                "ORDER BY id", topic, key)
    return [orjson.loads(r["value"]) for r in rows]


async def test_auth_and_workspace_header(make_client, workspace):
    no_token = make_client(workspace, token="wrong")
    r = await no_token.get("/v1/brands")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    no_ws = make_client(None)
    r = await no_ws.get("/v1/brands")
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_workspace"


async def test_brand_crud_statuses_and_isolation(make_client, workspace, lumora_body):
    c = make_client(workspace)
    r = await c.post("/v1/brands", json=lumora_body)
    assert r.status_code == 201, r.text
    assert r.json()["domains"] == ["lumora.example"]
    assert (await c.post("/v1/brands", json=lumora_body)).status_code == 409
    bad = await c.post("/v1/brands", json={"name": "x", "sources": ["file:///etc/passwd"]})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
    unknown_rival = await c.post("/v1/brands", json={"name": "Orbisan", "competitors": ["nobody"]})
    assert unknown_rival.status_code == 422 and "nobody" in unknown_rival.json()["error"]["reason"]
    r = await c.post("/v1/brands", json={"name": "Orbisan Health", "competitors": ["lumora"]})
    assert r.status_code == 201 and r.json()["brand_id"] == "orbisan-health"
    r = await c.patch("/v1/brands/lumora", json={"competitors": ["orbisan-health"], "aliases": ["Lumora"]})
    assert r.status_code == 200 and r.json()["competitors"] == ["orbisan-health"]
    assert r.json()["aliases"] == ["Lumora"]
    assert (await c.patch("/v1/brands/lumora", json={"colour": "red"})).status_code == 422
    assert [b["brand_id"] for b in (await c.get("/v1/brands")).json()["items"]] == ["lumora", "orbisan-health"]

    other = make_client(f"{workspace}-other")
    for method, path in (("GET", "/v1/brands/lumora"), ("PATCH", "/v1/brands/lumora"),
                         ("GET", "/v1/brands/lumora/ground-truth"),
                         ("POST", "/v1/brands/lumora/ground-truth/refresh"),
                         ("POST", "/v1/brands/lumora/reverify")):
        r = await other.request(method, path, json={} if method == "PATCH" else None)
        assert r.status_code == 404, (method, path, r.text)
        assert "Lumora" not in r.text and r.json()["error"]["code"] == "not_found"
    assert (await other.get("/v1/brands")).json()["items"] == []
    # Same brand id in another workspace is another brand.
    assert (await other.post("/v1/brands", json=lumora_body)).status_code == 201


async def test_refusal_without_ground_truth_then_classified_after_refresh(
        make_client, workspace, lumora_body, pool, heuristic):
    c = make_client(workspace)
    assert (await c.post("/v1/brands", json=lumora_body)).status_code == 201
    gt = (await c.get("/v1/brands/lumora/ground-truth")).json()
    assert gt["facts"] == [] and gt["ground_truth_hash"] == hashlib.sha256(b"").hexdigest()

    run_id = f"run-{uuid.uuid4().hex}"
    counts, rejected = await feed(pool, heuristic, run_id, workspace,
                                  "Details at https://lumora.example/about.")
    assert rejected == [] and counts["refused"] == 1 and counts["recorded"] == 0
    run = (await c.get(f"/v1/runs/{run_id}")).json()
    [state] = run["brands"]
    assert state["status"] == "refused" and state["citation_class"] is None
    assert "no active ground truth" in state["reason"]
    [refused] = await outbox(pool, "classification.refused.v1", run_id)
    assert refused["payload"]["brand_id"] == "lumora"
    assert (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"] == []

    r = await c.post("/v1/brands/lumora/ground-truth/refresh")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["changed"] and len(body["added_fact_ids"]) >= 10 and body["superseded_fact_ids"] == []
    assert all(s["ok"] for s in body["sources"])
    reverify = (await c.post("/v1/brands/lumora/reverify")).json()
    assert reverify["runs"] == 1 and reverify["recorded"] == 1
    state = (await c.get(f"/v1/runs/{run_id}")).json()["brands"][0]
    assert state["status"] == "classified" and state["citation_class"] == "STRONG"
    assert state["ground_truth_hash"] == body["ground_truth_hash"]
    [row] = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
    assert row["trigger"] == "reverification" and row["decided_by"] == "deterministic"
    assert row["evidence_sha256"] == hashlib.sha256(b"Details at https://lumora.example/about.").hexdigest()


async def test_refresh_is_idempotent_and_records_evidence(make_client, workspace, lumora_body, pool, sites):
    c = make_client(workspace)
    lumora_body = lumora_body | {"sources": lumora_body["sources"] + [
        sites.url("https://lumora.example/partners/portal"),  # SSRF bait: redirect to metadata
        sites.url("https://lumora.example/redirect-loop")]}
    assert (await c.post("/v1/brands", json=lumora_body)).status_code == 201
    first = (await c.post("/v1/brands/lumora/ground-truth/refresh")).json()
    outcomes = {s["url"].rsplit("/", 2)[-1]: s for s in first["sources"]}
    assert outcomes["portal"]["ok"] is False and "169.254.169.254" in outcomes["portal"]["error"]
    assert outcomes["redirect-loop"]["ok"] is False and "redirects" in outcomes["redirect-loop"]["error"]
    assert outcomes["about"]["ok"] and outcomes["about"]["facts_extracted"] > 5
    fetched = await outbox(pool, "groundtruth.source-fetched.v1", "lumora")
    fetched = [e for e in fetched if e["payload"]["workspace_id"] == workspace]
    assert len(fetched) == 2
    for e in fetched:
        assert hashlib.sha256(e["payload"]["content"].encode()).hexdigest() == e["payload"]["sha256"]
    facts = (await c.get("/v1/brands/lumora/ground-truth")).json()["facts"]
    assert {f["content_sha256"] for f in facts} <= {e["payload"]["sha256"] for e in fetched}
    assert all(f["active"] and f["attribution"] and f["fetched_at"] for f in facts)

    async with pool.acquire() as conn:
        before = await conn.fetchval("SELECT count(*) FROM messaging_outbox")
        facts_before = await conn.fetchval("SELECT count(*) FROM ground_truth_facts WHERE workspace_id = $1", workspace)
    second = (await c.post("/v1/brands/lumora/ground-truth/refresh")).json()
    assert second["changed"] is False and second["added_fact_ids"] == [] and second["superseded_fact_ids"] == []
    assert second["ground_truth_hash"] == first["ground_truth_hash"]
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM messaging_outbox") == before
        assert await conn.fetchval("SELECT count(*) FROM ground_truth_facts WHERE workspace_id = $1",
                                   workspace) == facts_before

    # Dropping a source supersedes its facts (inactive, never deleted) and publishes the change.
    r = await c.patch("/v1/brands/lumora", json={"sources": lumora_body["sources"][:1]})
    assert r.status_code == 200
    third = (await c.post("/v1/brands/lumora/ground-truth/refresh")).json()
    assert third["changed"] and third["superseded_fact_ids"] and third["added_fact_ids"] == []
    async with pool.acquire() as conn:
        inactive = await conn.fetchval("SELECT count(*) FROM ground_truth_facts WHERE workspace_id = $1 "
                                       "AND NOT active AND superseded_at IS NOT NULL", workspace)
    assert inactive == len(third["superseded_fact_ids"])
    # The superseded facts on request, with their validity (recorded_at .. superseded_at); they
    # are not part of the hash, and the plain answer does not carry them.
    plain = (await c.get("/v1/brands/lumora/ground-truth")).json()
    assert plain["superseded"] is None and plain["ground_truth_hash"] == third["ground_truth_hash"]
    full = (await c.get("/v1/brands/lumora/ground-truth", params={"include_superseded": "true"})).json()
    assert full["facts"] == plain["facts"] and full["ground_truth_hash"] == plain["ground_truth_hash"]
    assert sorted(f["fact_id"] for f in full["superseded"]) == sorted(third["superseded_fact_ids"])
    for f in full["superseded"]:
        assert f["active"] is False and f["content_sha256"] and f["source_url"]
        assert f["recorded_at"] < f["superseded_at"]
    assert all(f["recorded_at"] and f["superseded_at"] is None for f in full["facts"])
    assert (await make_client(f"{workspace}-x").get(
        "/v1/brands/lumora/ground-truth", params={"include_superseded": "true"})).status_code == 404
    refreshed = [e for e in await outbox(pool, "groundtruth.refreshed.v1", "lumora")
                 if e["payload"]["workspace_id"] == workspace]
    assert [e["payload"]["refresh_id"] for e in refreshed] == [first["refresh_id"], third["refresh_id"]]


async def test_refresh_errors(make_client, workspace, sites):
    c = make_client(workspace)
    await c.post("/v1/brands", json={"name": "No Sources"})
    r = await c.post("/v1/brands/no-sources/ground-truth/refresh")
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
    await c.post("/v1/brands", json={"name": "Metadata", "sources": [
        sites.url("https://lumora.example/partners/portal")]})
    r = await c.post("/v1/brands/metadata/ground-truth/refresh")
    assert r.status_code == 422 and "SSRF" in r.json()["error"]["reason"]
    assert r.json()["error"]["code"] == "sources_refused"
    # Without the allow-list even the local sites server (loopback) is refused.
    strict = make_client(workspace, allow="")
    await strict.post("/v1/brands", json={"name": "Loop", "sources": [sites.url("https://lumora.example/about")]})
    r = await strict.post("/v1/brands/loop/ground-truth/refresh")
    assert r.status_code == 422 and "loopback" in r.json()["error"]["reason"]


async def test_manual_fact(make_client, workspace):
    c = make_client(workspace)
    await c.post("/v1/brands", json={"name": "Kestrel Labs"})
    body = {"text": "Kestrel Labs was founded in 2011.", "source_url": "https://kestrel.example/about",
            "attribution": "confirmed by Kestrel's press office, 2026-12-01"}
    r = await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json=body)
    assert r.status_code == 201 and r.json()["type"] == "manual" and r.json()["active"]
    assert (await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json=body)).status_code == 200
    r = await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json=body | {"attribution": ""})
    assert r.status_code == 422
    assert (await c.post("/v1/brands/nope/ground-truth/facts", json=body)).status_code == 404
    gt = (await c.get("/v1/brands/kestrel-labs/ground-truth")).json()
    assert [f["text"] for f in gt["facts"]] == [body["text"]]


async def test_runs_api_history_as_of_and_manual_reclassify(make_client, workspace, pool, heuristic,
                                                            stand_in_judge):
    judge_down = stand_in_judge(down=True)
    c = make_client(workspace, judge=judge_down, actor="key_123")
    await c.post("/v1/brands", json={"name": "Kestrel Labs", "domains": ["kestrel.example"]})
    await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json={
        "text": "Kestrel Labs makes diagnostic test kits.", "source_url": "https://kestrel.example/",
        "attribution": "kestrel.example"})
    r = await c.post("/v1/runs", json={"engine": "chatgpt", "model": "gpt-x", "prompt": "Who makes test kits?",
                                       "answer": "Kestrel Labs makes diagnostic kits sold in 40 countries.",
                                       "brand_ids": ["kestrel-labs"]})
    assert r.status_code == 202
    run_id, sha = r.json()["run_id"], r.json()["answer_sha256"]
    assert sha == hashlib.sha256(b"Kestrel Labs makes diagnostic kits sold in 40 countries.").hexdigest()
    [event] = await outbox(pool, "runs.recorded.v1", run_id)
    assert event["payload"]["answer_sha256"] == sha and event["payload"]["brand_ids"] == ["kestrel-labs"]
    view = (await c.get(f"/v1/runs/{run_id}")).json()
    assert view["brands"][0]["status"] == "pending"
    bad = await c.post("/v1/runs", json={"engine": "e", "model": "m", "prompt": "p", "answer": "a",
                                         "brand_ids": ["ghost"]})
    assert bad.status_code == 422 and "ghost" in bad.json()["error"]["reason"]
    assert (await c.post("/v1/runs", json={"engine": "e"})).status_code == 422
    for field in ("requested_at", "answered_at"):  # a Unix number is refused, never guessed at
        bad = await c.post("/v1/runs", json={"engine": "e", "model": "m", "prompt": "p",
                                             "answer": "a", field: 1764547200})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
        assert bad.json()["error"]["reason"].startswith(f"body.{field}: ")
        assert "not a number" in bad.json()["error"]["reason"]
    for query in ({"from": "1764547200"}, {"to": "2026-12-01"}):
        bad = await c.get("/v1/runs", params=query)
        assert bad.status_code == 422 and "date-time" in bad.json()["error"]["reason"]
    assert len(await outbox(pool, "runs.recorded.v1", run_id)) == 1  # nothing else was staged

    # The consumer path: the answer is ambiguous for the heuristic, so the pair is parked.
    counts, _ = await feed(pool, heuristic, run_id, workspace,
                           "Kestrel Labs makes diagnostic kits sold in 40 countries.", ["kestrel-labs"],
                           prompt="Who makes test kits?")
    assert counts["pending"] == 1
    # Manual reclassification while the judge is down: stays pending, nothing guessed.
    r = await c.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "customer asked"})
    assert r.status_code == 200 and r.json()["brands"][0]["status"] == "pending"
    assert judge_down.calls == 1
    judge_down.down = False
    r = await c.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "judge is back"})
    state = r.json()["brands"][0]
    assert state["status"] == "classified" and state["citation_class"] == "DESCRIPTIVE"
    assert state["decided_by"] == "judge" and state["judge_model"] == "stand-in-judge"
    t_first = datetime.now(UTC)
    await asyncio.sleep(0.02)
    r = await c.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "second look", "brand_ids": ["kestrel-labs"]})
    assert r.status_code == 200
    hist = (await c.get(f"/v1/runs/{run_id}/classifications")).json()
    assert [h["trigger"] for h in hist["items"]] == ["manual", "manual"]
    assert [h["trigger_reason"] for h in hist["items"]] == ["judge is back", "second look"]
    assert all(h["actor"] == "key_123" and h["prompt_version"] == "stand-in-1" for h in hist["items"])
    as_of = (await c.get(f"/v1/runs/{run_id}/classifications",
                         params={"as_of": t_first.isoformat()})).json()
    assert len(as_of["items"]) == 1
    assert as_of["as_of_classes"][0]["classification_id"] == hist["items"][0]["classification_id"]
    assert (await c.get(f"/v1/runs/{run_id}/classifications", params={"as_of": "yesterday"})).status_code == 422
    no_actor = make_client(workspace)
    r = await no_actor.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "x"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_actor"
    assert (await c.post(f"/v1/runs/{run_id}/reclassify", json={})).status_code == 422
    r = await c.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "x", "brand_ids": ["ghost"]})
    assert r.status_code == 422 and "ghost" in r.json()["error"]["reason"]
    other = make_client(f"{workspace}-x", actor="k")
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/classifications"):
        assert (await other.get(path)).status_code == 404
    assert (await other.post(f"/v1/runs/{run_id}/reclassify", json={"reason": "x"})).status_code == 404
    assert (await other.get("/v1/runs")).json()["items"] == []

    listed = (await c.get("/v1/runs", params={"engine": "chatgpt", "citation_class": "DESCRIPTIVE"})).json()
    assert [i["run_id"] for i in listed["items"]] == [run_id]
    listed = (await c.get("/v1/runs", params={"decided_by": "judge"})).json()
    assert [i["run_id"] for i in listed["items"]] == [run_id]
    assert (await c.get("/v1/runs", params={"decided_by": "deterministic"})).json()["items"] == []
    assert (await c.get("/v1/runs", params={"decided_by": "guess"})).status_code == 422
    assert (await c.get("/v1/runs", params={"engine": "nope"})).json()["items"] == []
    assert (await c.get("/v1/runs", params={"limit": 0})).status_code == 422
    assert (await c.get("/v1/runs", params={"cursor": "garbage!"})).status_code == 422


async def test_a_run_retried_with_its_idempotency_key_is_recorded_once(make_client, workspace,
                                                                       pool):
    """Found by the fault harness: the gateway stores the answer of an Idempotency-Key in its
    PostgreSQL; when that was down right after the run was stored (or the gateway retried us
    after a lost reply), the client's retry came back as a second run. Here the key decides."""
    c = make_client(workspace)
    body = {"engine": "e", "model": "m", "prompt": "p", "answer": "one answer, once"}
    key = {"idempotency-key": f"k-{uuid.uuid4()}"}
    first = await c.post("/v1/runs", json=body, headers=key)
    again = await c.post("/v1/runs", json=body, headers=key)
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    run_id = first.json()["run_id"]
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM runs WHERE workspace_id = $1",
                                   workspace) == 1
    [event] = await outbox(pool, "runs.recorded.v1", run_id)
    assert event["payload"]["run_id"] == run_id
    # concurrent first tries with one key: one run, one event id
    key = {"idempotency-key": f"k-{uuid.uuid4()}"}
    body = {**body, "answer": "raced"}
    replies = await asyncio.gather(*(c.post("/v1/runs", json=body, headers=key)
                                     for _ in range(4)))
    assert [r.status_code for r in replies] == [202] * 4
    assert {r.json()["run_id"] for r in replies} == {replies[0].json()["run_id"]}
    assert len(await outbox(pool, "runs.recorded.v1", replies[0].json()["run_id"])) == 1
    # the same key with another run is refused; without a key every POST is a new run
    other = await c.post("/v1/runs", json={**body, "answer": "another answer"}, headers=key)
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    a, b = [(await c.post("/v1/runs", json=body)).json()["run_id"] for _ in range(2)]
    assert a != b
    # one key in two workspaces: two runs
    elsewhere = make_client(f"{workspace}-other")
    r = await elsewhere.post("/v1/runs", json=body, headers=key)
    assert r.status_code == 202 and r.json()["run_id"] != replies[0].json()["run_id"]


async def test_runs_pagination(make_client, workspace, pool, heuristic):
    c = make_client(workspace)
    ids = [f"page-{i}-{uuid.uuid4().hex[:6]}" for i in range(5)]
    for rid in ids:
        await feed(pool, heuristic, rid, workspace, "nothing relevant here")
    seen, cursor = [], None
    while True:
        page = (await c.get("/v1/runs", params={"limit": 2} | ({"cursor": cursor} if cursor else {}))).json()
        seen += [i["run_id"] for i in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 5


async def test_runs_filter_by_prompt_tag(make_client, workspace, pool, heuristic):
    c = make_client(workspace)
    tagged = f"tag-{uuid.uuid4().hex[:8]}"
    await feed(pool, heuristic, tagged, workspace, "nothing relevant here", prompt_context=PromptContext(
        prompt_id="p-1", prompt_set="demo", topic="widgets", funnel="consideration"))
    await feed(pool, heuristic, f"untagged-{uuid.uuid4().hex[:8]}", workspace, "nothing here")
    for tag in ("widgets", "consideration"):  # a topic or a funnel stage: any of the tags
        listed = (await c.get("/v1/runs", params={"tag": tag})).json()["items"]
        assert [i["run_id"] for i in listed] == [tagged]
    assert (await c.get("/v1/runs", params={"tag": "demo"})).json()["items"] == []  # a set, not a tag
    exported = (await c.get("/v1/exports/runs", params={"format": "jsonl", "tag": "widgets"})).text
    assert [orjson.loads(x)["run_id"] for x in exported.splitlines()] == [tagged]


async def test_rejects_bad_runs_and_foreign_run_ids(pool, heuristic, workspace):
    run_id = f"run-{uuid.uuid4().hex}"
    await feed(pool, heuristic, run_id, workspace, "hello")
    _, rejected = await feed(pool, heuristic, run_id, f"{workspace}-thief", "hello")
    assert len(rejected) == 1 and "another workspace" in rejected[0].reason
    at = datetime.now(UTC)
    payload = RunRecorded(run_id="x", workspace_id=workspace, engine="e", model="m", prompt="p",
                          answer="a", answer_sha256="0" * 64, requested_at=at, answered_at=at)
    _, rejected = await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, "x"),), "classifier", "live"),
                                    ClassifierUnitOfWork(pool), heuristic)
    assert "answer_sha256" in rejected[0].reason


async def test_redelivered_event_changes_nothing(pool, heuristic, workspace, make_client):
    c = make_client(workspace)
    await c.post("/v1/brands", json={"name": "Kestrel Labs", "domains": ["kestrel.example"]})
    await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json={
        "text": "Kestrel Labs makes test kits.", "source_url": "https://kestrel.example/",
        "attribution": "kestrel.example"})
    event_id, run_id = uuid.uuid4(), f"run-{uuid.uuid4().hex}"
    for _ in range(3):
        await feed(pool, heuristic, run_id, workspace, "See https://kestrel.example/kits", event_id=event_id)
    hist = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
    assert len(hist) == 1 and hist[0]["citation_class"] == "STRONG"
    assert len(await outbox(pool, "classification.recorded.v1", run_id)) == 1


async def test_a_redelivery_in_the_same_batch_is_processed_once(pool, heuristic, workspace, make_client):
    """The same event twice in one batch (a producer republished it after a crash) must not make
    the batch fail forever on its own derived history id: it is one run, classified once."""
    c = make_client(workspace)
    await c.post("/v1/brands", json={"name": "Kestrel Labs", "domains": ["kestrel.example"]})
    await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json={
        "text": "Kestrel Labs makes test kits.", "source_url": "https://kestrel.example/",
        "attribution": "kestrel.example"})
    event_id, run_id = uuid.uuid4(), f"run-{uuid.uuid4().hex}"
    answer = "See https://kestrel.example/kits"
    at = datetime.now(UTC)
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m", prompt="p",
                          answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          brand_ids=["kestrel-labs"], requested_at=at, answered_at=at)
    twice = [IncomingRun(event_id, payload, run_id), IncomingRun(event_id, payload, run_id)]
    counts, rejected = await record_runs(RecordRuns(tuple(twice), "classifier", "live"),
                                         ClassifierUnitOfWork(pool), heuristic)
    assert rejected == [] and counts["runs"] == 1
    hist = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
    assert [h["citation_class"] for h in hist] == ["STRONG"]
    assert len(await outbox(pool, "classification.recorded.v1", run_id)) == 1


async def test_every_staged_event_honours_its_contract(pool, heuristic, make_client, workspace, lumora_body):
    """The outbox bytes (some serialized without pydantic on the hot path) parse as the topic's
    envelope, exactly as a consumer would parse them."""
    from attesta_contracts import topic
    from attesta_platform.messaging import decode

    c = make_client(workspace)
    await c.post("/v1/brands", json=lumora_body)
    await c.post("/v1/brands", json={"name": "Empty"})
    assert (await c.post("/v1/brands/lumora/ground-truth/refresh")).status_code == 200
    assert (await c.post("/v1/runs", json={"engine": "e", "model": "m", "prompt": "p", "answer": "a"})).status_code == 202
    await feed(pool, heuristic, f"run-{uuid.uuid4().hex}", workspace, "See https://lumora.example/about")
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT topic, value FROM messaging_outbox ORDER BY id")
    assert rows
    seen = set()
    for r in rows:
        env = decode(topic(r["topic"]), bytes(r["value"]))
        assert env.producer == "classifier"
        seen.add(r["topic"])
    assert {"classification.recorded.v1", "classification.refused.v1", "runs.recorded.v1",
            "groundtruth.source-fetched.v1", "groundtruth.refreshed.v1"} <= seen


async def test_reverify_covers_runs_recorded_before_the_brand(make_client, workspace, pool, heuristic):
    c = make_client(workspace)
    old_run = f"run-{uuid.uuid4().hex}"
    await feed(pool, heuristic, old_run, workspace, "Try https://kestrel.example/kits")  # no brands yet
    assert (await c.get(f"/v1/runs/{old_run}")).json()["brands"] == []
    await c.post("/v1/brands", json={"name": "Kestrel Labs", "domains": ["kestrel.example"]})
    await c.post("/v1/brands/kestrel-labs/ground-truth/facts", json={
        "text": "Kestrel Labs makes test kits.", "source_url": "https://kestrel.example/", "attribution": "t"})
    r = (await c.post("/v1/brands/kestrel-labs/reverify")).json()
    assert r["runs"] == 1 and r["recorded"] == 1
    [state] = (await c.get(f"/v1/runs/{old_run}")).json()["brands"]
    assert state["citation_class"] == "STRONG"
