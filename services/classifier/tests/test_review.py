"""The review queue (issue #28): a person decides what the judge left pending (a history row
``decided_by = human`` with the reviewer, its outbox event, its metrics), the blind sample of
judge labels is drawn deterministically and labelled without overriding the judge, and the
published agreement (per-class precision, Cohen's kappa) is right on known tables. The API
tests run the real app on real PostgreSQL; the pure parts run alone."""

from __future__ import annotations

import hashlib
import math
import uuid
from datetime import UTC, datetime
from functools import partial
from urllib.parse import quote

import asyncpg
import httpx
import pytest

from attesta_classifier.adapters.memory import InMemoryClassifierUnitOfWork
from attesta_classifier.adapters.postgres import SAMPLE_KEY_SQL, ClassifierUnitOfWork
from attesta_classifier.domain.model import Brand, Run
from attesta_classifier.domain.review import (
    agreement, answer_segments, cohen_kappa, in_sample, judge_note, sample_bound, sample_key)
from attesta_classifier.service_layer.unit_of_work import (
    HistoryRow, JudgeReview, PendingRow, QueueQuery)

ANSWER = ("Lumora Therapeutics has sold diagnostic kits in 40 countries since 1990; ask "
          "Lumora for more.")
FACT = "Lumora Therapeutics develops diagnostic kits for rare diseases."


# -- the sample, pure ---------------------------------------------------------------------------
@pytest.mark.unit
def test_the_sample_is_a_reproducible_hash_of_run_and_brand():
    expected = int.from_bytes(hashlib.sha256("run-1\x1facme".encode()).digest()[:4], "big")
    assert sample_key("run-1", "acme") == expected == sample_key("run-1", "acme")
    assert sample_key("run-1", "acme") != sample_key("run-1a", "cme")  # the separator counts
    pairs = [(f"run-{i}", "acme") for i in range(4000)]
    five = {p for p in pairs if in_sample(*p, 0.05)}
    ten = {p for p in pairs if in_sample(*p, 0.10)}
    assert 0.035 < len(five) / len(pairs) < 0.065
    assert five < ten  # a larger share only adds pairs: earlier reviews stay in the sample
    assert not any(in_sample(*p, 0.0) for p in pairs) and all(in_sample(*p, 1.0) for p in pairs)
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            sample_bound(bad)


# -- agreement, pure ----------------------------------------------------------------------------
@pytest.mark.unit
def test_agreement_figures_on_a_known_table():
    # judge -> human: D->D x4, D->C x1, C->C x2, C->D x1, E->E x2 (n = 10, 8 agree)
    table = ([("DESCRIPTIVE", "DESCRIPTIVE")] * 4 + [("DESCRIPTIVE", "CONFABULATED")]
             + [("CONFABULATED", "CONFABULATED")] * 2 + [("CONFABULATED", "DESCRIPTIVE")]
             + [("ECHO", "ECHO")] * 2)
    a = agreement(table)
    assert a.n == 10 and a.observed.successes == 8 and a.observed.value == 0.8
    # by hand: p_o = 0.8, p_e = (5*5 + 3*3 + 2*2) / 100 = 0.38, kappa = 0.42 / 0.62 = 21/31
    assert a.kappa == pytest.approx(21 / 31, abs=1e-12)
    by_class = {c.citation_class: c for c in a.per_class}
    assert set(by_class) == {"DESCRIPTIVE", "CONFABULATED", "ECHO"}
    d, c, e = by_class["DESCRIPTIVE"], by_class["CONFABULATED"], by_class["ECHO"]
    assert (d.judge_n, d.human_n, d.agreed, d.precision.value) == (5, 5, 4, 0.8)
    assert (c.judge_n, c.agreed) == (3, 2) and c.precision.value == pytest.approx(2 / 3)
    assert (e.judge_n, e.agreed, e.precision.value, e.precision.high) == (2, 2, 1.0, 1.0)
    # the Wilson interval of 4/5 (z = 1.96), by hand: [0.375535, 0.963776]
    assert (d.precision.low, d.precision.high) == (pytest.approx(0.375535, abs=1e-6),
                                                   pytest.approx(0.963776, abs=1e-6))
    assert a.confusion == {"DESCRIPTIVE": {"DESCRIPTIVE": 4, "CONFABULATED": 1},
                           "CONFABULATED": {"CONFABULATED": 2, "DESCRIPTIVE": 1},
                           "ECHO": {"ECHO": 2}}


@pytest.mark.unit
def test_kappa_is_none_where_it_is_undefined_and_signed_where_raters_disagree():
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["ECHO"] * 3, ["ECHO"] * 3) is None  # chance agreement is 1
    assert cohen_kappa(["DESCRIPTIVE", "DESCRIPTIVE"], ["DESCRIPTIVE", "CONFABULATED"]) == 0.0
    assert cohen_kappa(["ECHO", "ABSENT"], ["ABSENT", "ECHO"]) == pytest.approx(-1.0)
    empty = agreement([])
    assert (empty.n, empty.kappa, empty.observed.value, empty.per_class) == (0, None, None, ())
    with pytest.raises(ValueError):
        agreement([("DESCRIPTIVE", "MAYBE")])


# -- what the reviewer sees, pure ------------------------------------------------------------------
@pytest.mark.unit
def test_judge_note_tells_waiting_abstained_and_unavailable_apart():
    assert judge_note("waiting for the judge", 0, None, None).state == "waiting"
    down = judge_note("waiting for the judge", 2, "JudgeUnavailable('down')", None)
    assert down.state == "unavailable" and down.reason == "waiting for the judge"
    abstained = judge_note("offline judge abstained: weak evidence", 1, "JudgeAbstained(...)", None)
    assert abstained.state == "abstained" and "weak evidence" in str(abstained.reason)
    stored = judge_note("waiting for the judge", 1, "x", {
        "reason": "one claim could not be matched", "judge_model": "qwen-1.5b",
        "claims": [{"claim": "sold kits in 40 countries", "verdict": "unsure",
                    "reason": "no fact names countries", "fact_ids": ["f1", 7]},
                   {"claim": ""}, "not a claim", {"verdict": "supported"}]})
    assert stored.state == "abstained" and stored.reason == "one claim could not be matched"
    assert stored.judge_model == "qwen-1.5b"
    [claim] = stored.claims  # malformed entries are left out, never made up
    assert (claim.claim, claim.verdict, claim.fact_ids) == ("sold kits in 40 countries", "unsure",
                                                            ("f1",))


@pytest.mark.unit
def test_answer_segments_mark_names_and_domains_and_join_back():
    answer = "Ｌｕｍｏｒａ Tx ships kits; mail info@lumora.example or visit www.lumora.example/kits."
    segments = answer_segments(answer, ("Lumora Therapeutics", "Lumora Tx"), ("lumora.example",))
    assert "".join(t for t, _ in segments) == answer
    assert [(t, k) for t, k in segments if k] == [
        ("Ｌｕｍｏｒａ Tx", "name"), ("lumora.example", "domain"), ("www.lumora.example", "domain")]
    assert answer_segments("", ("Lumora",), ()) == [("", None)]


# -- the repositories: the in-memory fakes behave like PostgreSQL ----------------------------------
@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def new_uow(request):
    if request.param == "memory":
        state = InMemoryClassifierUnitOfWork().state
        return lambda: InMemoryClassifierUnitOfWork(state)
    pool = request.getfixturevalue("module_pool")
    return lambda: ClassifierUnitOfWork(pool)


def _judged(ws: str, run_id: str, cls: str = "DESCRIPTIVE") -> HistoryRow:
    return HistoryRow(uuid.uuid4(), run_id, "acme", ws, cls, "judge", "judge-1", "a" * 64, [],
                      "judged", "live", None, "h-1", "p-1", "0" * 64, None, datetime.now(UTC))


async def test_queue_order_counts_and_blind_reviews_on_both_stores(new_uow):
    ws = f"ws-{uuid.uuid4().hex[:8]}"
    runs = [Run(f"q-{uuid.uuid4().hex[:10]}", ws, "e", "m", "p?", "Acme is fine.", "0" * 64,
                ("acme",), datetime.now(UTC), datetime.now(UTC)) for _ in range(4)]
    async with new_uow() as uow:
        await uow.brands.add(Brand("acme", ws, "Acme"))
        await uow.runs.add(runs)
        await uow.decisions.park([PendingRow(r.run_id, "acme", ws, "live", None, None)
                                  for r in runs[:2]], datetime.now(UTC))
        judged = [_judged(ws, r.run_id) for r in runs[2:]]
        await uow.decisions.append(judged)
        await uow.commit()
    everyone = sample_bound(1.0)
    async with new_uow().read() as uow:
        entries = await uow.reviews.queue(ws, QueueQuery(), everyone, 10)
        counts = await uow.reviews.counts(ws, None, everyone)
        nobody = await uow.reviews.counts(ws, None, sample_bound(0.0))
        pending_only = await uow.reviews.queue(ws, QueueQuery(kind="pending"), everyone, 10)
        page = await uow.reviews.queue(ws, QueueQuery(kind="sample"), everyone, 1)
        rest = await uow.reviews.queue(ws, QueueQuery(kind="sample", after=(
            1, page[0].since, page[0].run_id, page[0].brand_id)), everyone, 10)
        detail = await uow.reviews.pending_detail(runs[0].run_id, "acme")
    assert [e.kind for e in entries] == ["pending", "pending", "sample", "sample"]
    assert pending_only == entries[:2]
    assert {e.run_id for e in entries[:2]} == {r.run_id for r in runs[:2]}
    assert {e.classification_id for e in entries[2:]} == {h.classification_id for h in judged}
    assert (counts.pending, counts.sample_open) == (2, 2) and counts.oldest_pending_at is not None
    assert (nobody.pending, nobody.sample_open) == (2, 0)
    assert len(page) == 1 and len(rest) == 1 and page[0].run_id != rest[0].run_id
    assert detail is not None and detail.attempts == 0 and detail.judgment is None

    review = JudgeReview(uuid.uuid4(), ws, runs[2].run_id, "acme", judged[0].classification_id,
                         "CONFABULATED", "a" * 64, "Ana", "k1", None, datetime.now(UTC))
    async with new_uow() as uow:
        state = await uow.reviews.lock_pair(ws, runs[2].run_id, "acme")
        assert state is not None and state.decided_by == "judge"
        assert await uow.reviews.lock_pair(f"{ws}-other", runs[2].run_id, "acme") is None
        assert await uow.reviews.add(review)
        # one review per judge label, whoever sends it
        assert not await uow.reviews.add(JudgeReview(uuid.uuid4(), *list(vars(review).values())[1:]))
        await uow.commit()
    async with new_uow().read() as uow:
        assert await uow.reviews.get(review.review_id) == review
        assert await uow.reviews.of_label(judged[0].classification_id) == review
        assert [(r.judge_class, r.human_class) for r in await uow.reviews.reviewed(ws, None)] == [
            ("DESCRIPTIVE", "CONFABULATED")]
        assert await uow.reviews.reviewed(ws, "another-judge") == []
        assert (await uow.reviews.counts(ws, None, everyone)).sample_open == 1


async def test_a_deferred_pair_keeps_the_judgment_the_judge_left(new_uow):
    ws, run_id = f"ws-{uuid.uuid4().hex[:8]}", f"d-{uuid.uuid4().hex[:10]}"
    async with new_uow() as uow:
        await uow.brands.add(Brand("acme", ws, "Acme"))
        await uow.runs.add([Run(run_id, ws, "e", "m", "p", "Acme.", "0" * 64, ("acme",))])
        await uow.decisions.park([PendingRow(run_id, "acme", ws, "live", None, None)],
                                 datetime.now(UTC))
        await uow.commit()
    token = uuid.uuid4()
    judgment = {"reason": "not sure", "claims": [{"claim": "Acme.", "verdict": "unsure"}]}
    async with new_uow() as uow:
        claimed = await uow.decisions.claim_due(token, 100, 60.0)  # the module's pairs too
        assert run_id in {c.run_id for c in claimed}
        await uow.decisions.defer(run_id, "acme", token, 60.0, "JudgeAbstained('not sure')",
                                  "judge abstained: not sure", judgment=judgment)
        await uow.commit()
    async with new_uow().read() as uow:
        detail = await uow.reviews.pending_detail(run_id, "acme")
    assert detail is not None and detail.attempts == 1 and detail.judgment == judgment


# -- the API on real PostgreSQL ---------------------------------------------------------------------
pg = pytest.mark.integration
TOKEN = "test-internal-token"


@pytest.fixture
def review_client(pool, heuristic):
    """``review_client(workspace, share=..., name=..., actor=...)``: the real app."""
    from attesta_classifier.adapters.fetcher import SafeFetcher
    from attesta_classifier.bootstrap import build_bus
    from attesta_classifier.entrypoints.http import create_app

    def make(workspace: str, *, share: float = 0.05, name: str | None = "Ana Lúcia",
             actor: str | None = "key-ana") -> httpx.AsyncClient:
        app = create_app(build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                                   fetcher=SafeFetcher(), review_sample_share=share),
                         internal_token=TOKEN, database=pool)
        headers = {"X-Attesta-Internal-Token": TOKEN, "X-Attesta-Workspace": workspace}
        if actor:
            headers["X-Attesta-Actor"] = actor
        if name:
            headers["X-Attesta-Actor-Name"] = quote(name)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://classifier.test", headers=headers)

    return make


async def _feed(pool, heuristic, run_id: str, workspace: str) -> dict[str, int]:
    """What the live consumer does with one runs.recorded.v1 event of the brand."""
    from attesta_classifier.domain.commands import RecordRuns
    from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
    from attesta_contracts.runs import RunRecorded

    at = datetime.now(UTC)
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="engine-a", model="m-1",
                          prompt="What does Lumora do?", answer=ANSWER,
                          answer_sha256=hashlib.sha256(ANSWER.encode()).hexdigest(),
                          brand_ids=["lumora"], requested_at=at, answered_at=at)
    counts, _ = await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                                  ClassifierUnitOfWork(pool), heuristic)
    return counts


async def _pending_pairs(pool, heuristic, c: httpx.AsyncClient, workspace: str, n: int) -> list[str]:
    r = await c.post("/v1/brands", json={"brand_id": "lumora", "name": "Lumora Therapeutics",
                                         "aliases": ["Lumora"], "domains": ["lumora.example"]})
    assert r.status_code == 201, r.text
    r = await c.post("/v1/brands/lumora/ground-truth/facts", json={
        "text": FACT, "source_url": "https://lumora.example/about", "attribution": "lumora.example"})
    assert r.status_code == 201, r.text
    ids = []
    for _ in range(n):
        run_id = f"rv-{uuid.uuid4().hex}"
        counts = await _feed(pool, heuristic, run_id, workspace)
        assert counts["pending"] == 1, "the heuristic must leave this answer to the judge"
        ids.append(run_id)
    return ids


def _human_labels() -> float:
    from attesta_classifier.adapters import telemetry

    return telemetry.CLASSIFICATIONS.labels("DESCRIPTIVE", "human", "review")._value.get()


@pg
async def test_a_person_decides_a_pending_pair(pool, heuristic, workspace, review_client):
    from attesta_contracts import Envelope
    from attesta_contracts.classification import ClassificationRecorded

    c = review_client(workspace)
    [run_id] = await _pending_pairs(pool, heuristic, c, workspace, 1)
    queue = (await c.get("/v1/review/queue")).json()
    assert [(i["run_id"], i["kind"], i["brand_name"]) for i in queue["items"]] == [
        (run_id, "pending", "Lumora Therapeutics")]
    assert queue["pending"] == 1 and queue["sample_open"] == 0 and queue["sample_share"] == 0.05
    assert queue["oldest_pending_age_s"] >= 0 and queue["oldest_pending_at"]
    item = (await c.get(f"/v1/review/queue/{run_id}/lumora")).json()
    assert item["kind"] == "pending" and item["judge"]["state"] == "waiting"
    assert "".join(s["text"] for s in item["answer_segments"]) == ANSWER
    assert [(s["text"], s["mention"]) for s in item["answer_segments"] if s["mention"]] == [
        ("Lumora Therapeutics", "name"), ("Lumora", "name")]
    [fact] = item["facts"]
    assert fact["text"] == FACT and len(fact["content_sha256"]) == 64
    assert item["classification_id"] is None

    path = f"/v1/review/queue/{run_id}/lumora/decision"
    stale = await c.post(path, json={"citation_class": "DESCRIPTIVE", "ground_truth_hash": "f" * 64})
    assert stale.status_code == 409 and "facts changed" in stale.json()["error"]["reason"]
    before = _human_labels()
    r = await c.post(path, json={"citation_class": "DESCRIPTIVE", "note": "  matches the about page ",
                                 "ground_truth_hash": item["ground_truth_hash"]})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["kind"], body["reviewer"], body["note"]) == ("pending", "Ana Lúcia",
                                                              "matches the about page")
    label = body["classification"]
    assert (label["decided_by"], label["reviewer"], label["trigger"], label["actor"]) == (
        "human", "Ana Lúcia", "review", "key-ana")
    assert label["ground_truth_hash"] == item["ground_truth_hash"] and label["judge_model"] is None
    assert _human_labels() == before + 1  # counted on /metrics like every decision

    # appended to the history, and the pair's current class
    history = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
    assert [(h["decided_by"], h["citation_class"], h["reviewer"], h["note"]) for h in history] == [
        ("human", "DESCRIPTIVE", "Ana Lúcia", "matches the about page")]
    [state] = (await c.get(f"/v1/runs/{run_id}")).json()["brands"]
    assert (state["status"], state["citation_class"], state["decided_by"]) == (
        "classified", "DESCRIPTIVE", "human")
    human_runs = (await c.get("/v1/runs", params={"decided_by": "human"})).json()["items"]
    assert [r_["run_id"] for r_ in human_runs] == [run_id]
    # staged like every label, with who decided
    async with pool.acquire() as conn:
        [event] = await conn.fetch("SELECT value FROM messaging_outbox WHERE topic = "
                                   "'classification.recorded.v1' AND key = $1", run_id)
    recorded = Envelope[ClassificationRecorded].model_validate_json(event["value"]).payload
    assert (recorded.decided_by, recorded.reviewer, recorded.note, recorded.trigger) == (
        "human", "Ana Lúcia", "matches the about page", "review")
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM pending_judgments WHERE run_id = $1",
                                   run_id) == 0
    # counted in the metrics like any decided label
    [row] = (await c.get("/v1/metrics", params={"period": "day", "brand_id": "lumora"})).json()["rows"]
    assert (row["n"], row["pending"], row["counts"]["DESCRIPTIVE"]) == (1, 0, 1)
    assert row["citation_rate"]["successes"] == 1  # a described brand counts as a citation

    again = await c.post(path, json={"citation_class": "ECHO",
                                     "ground_truth_hash": item["ground_truth_hash"]})
    assert again.status_code == 409 and "decided by human" in again.json()["error"]["reason"]
    assert (await c.get(f"/v1/review/queue/{run_id}/lumora")).status_code == 404
    assert (await c.get("/v1/review/queue")).json()["pending"] == 0


@pg
async def test_a_retried_decision_with_its_idempotency_key_is_recorded_once(
        pool, heuristic, workspace, review_client):
    c = review_client(workspace)
    [run_id] = await _pending_pairs(pool, heuristic, c, workspace, 1)
    gt = (await c.get(f"/v1/review/queue/{run_id}/lumora")).json()["ground_truth_hash"]
    path, key = f"/v1/review/queue/{run_id}/lumora/decision", {"Idempotency-Key": "k-1"}
    body = {"citation_class": "CONFABULATED", "ground_truth_hash": gt}
    first = await c.post(path, json=body, headers=key)
    again = await c.post(path, json=body, headers=key)
    assert first.status_code == again.status_code == 201, again.text
    assert first.json()["classification"] == again.json()["classification"]
    other = await c.post(path, json={**body, "citation_class": "ECHO"}, headers=key)
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    history = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
    assert [h["citation_class"] for h in history] == ["CONFABULATED"]


@pg
async def test_who_reviews_comes_from_the_forwarded_key(pool, heuristic, workspace, review_client):
    c = review_client(workspace)
    [run_id, other] = await _pending_pairs(pool, heuristic, c, workspace, 2)
    gt = (await c.get(f"/v1/review/queue/{run_id}/lumora")).json()["ground_truth_hash"]
    body = {"citation_class": "ECHO", "ground_truth_hash": gt}
    nobody = review_client(workspace, name=None, actor=None)
    r = await nobody.post(f"/v1/review/queue/{run_id}/lumora/decision", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_actor"
    unnamed = review_client(workspace, name=None, actor="key-7")  # a key without a name
    r = await unnamed.post(f"/v1/review/queue/{run_id}/lumora/decision", json=body)
    assert r.status_code == 201 and r.json()["reviewer"] == "key-7"
    stranger = review_client(f"{workspace}-other")
    assert (await stranger.get(f"/v1/review/queue/{other}/lumora")).status_code == 404
    r = await stranger.post(f"/v1/review/queue/{other}/lumora/decision", json=body)
    assert r.status_code == 404 and "Lumora" not in r.text
    bad = await c.post(f"/v1/review/queue/{other}/lumora/decision",
                       json={**body, "citation_class": "MAYBE"})
    assert bad.status_code == 422


@pg
async def test_the_blind_sample_is_reviewed_without_overriding_the_judge(
        pool, heuristic, workspace, review_client, stand_in_judge):
    from attesta_classifier.domain.commands import JudgeDuePairs
    from attesta_classifier.service_layer.judge_worker import judge_due

    c = review_client(workspace, share=1.0)
    ids = await _pending_pairs(pool, heuristic, c, workspace, 2)
    judged = await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), stand_in_judge(),
                             heuristic)
    assert judged["judged"] >= 2
    none_drawn = review_client(workspace, share=0.0)
    assert (await none_drawn.get("/v1/review/queue")).json()["items"] == []
    assert (await none_drawn.get(f"/v1/review/queue/{ids[0]}/lumora")).status_code == 404
    queue = (await c.get("/v1/review/queue")).json()
    assert sorted(i["run_id"] for i in queue["items"]) == sorted(ids)
    assert {i["kind"] for i in queue["items"]} == {"sample"} and queue["sample_open"] == 2
    assert (await c.get("/v1/review/agreement")).json()["n"] == 0

    decided = []
    for run_id, human in zip(ids, ("DESCRIPTIVE", "CONFABULATED"), strict=True):
        r = await c.get(f"/v1/review/queue/{run_id}/lumora")
        item = r.json()
        # blind: nothing of the judge's label or output
        assert item["kind"] == "sample" and item["judge"] is None and item["classification_id"]
        assert "stand-in" not in r.text and "DESCRIPTIVE" not in r.text
        path = f"/v1/review/queue/{run_id}/lumora/decision"
        body = {"citation_class": human, "ground_truth_hash": item["ground_truth_hash"]}
        missing = await c.post(path, json=body)
        assert missing.status_code == 409 and "classification_id" in missing.json()["error"]["reason"]
        r = await c.post(path, json={**body, "classification_id": item["classification_id"]})
        assert r.status_code == 201, r.text
        assert r.json()["kind"] == "sample" and r.json()["review_id"] and r.json()["classification"] is None
        decided.append(item["classification_id"])
        # the judge's label stays the pair's class; the history has no human row
        [state] = (await c.get(f"/v1/runs/{run_id}")).json()["brands"]
        assert (state["decided_by"], state["citation_class"]) == ("judge", "DESCRIPTIVE")
        history = (await c.get(f"/v1/runs/{run_id}/classifications")).json()["items"]
        assert [h["decided_by"] for h in history] == ["judge"]
        again = await c.post(path, json={**body, "classification_id": item["classification_id"]})
        assert again.status_code == 409

    a = (await c.get("/v1/review/agreement")).json()
    assert (a["n"], a["observed"]["successes"], a["kappa"], a["sample_share"]) == (2, 1, 0.0, 1.0)
    [d] = [x for x in a["per_class"] if x["citation_class"] == "DESCRIPTIVE"]
    assert (d["judge_n"], d["agreed"], d["precision"]["value"], d["precision"]["n"]) == (2, 1, 0.5, 2)
    assert a["confusion"] == {"DESCRIPTIVE": {"DESCRIPTIVE": 1, "CONFABULATED": 1}}
    assert (await c.get("/v1/review/agreement", params={"judge_model": "other"})).json()["n"] == 0
    assert (await c.get("/v1/review/queue")).json()["sample_open"] == 0

    # append-only, like the history: the app role may not, and the triggers refuse everyone
    async with pool.acquire() as conn:
        for sql in ("UPDATE judge_reviews SET human_class = 'ECHO' WHERE classification_id = $1::uuid",
                    "DELETE FROM judge_reviews WHERE classification_id = $1::uuid"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(sql, decided[0])


@pg
async def test_the_database_draws_the_same_sample_as_the_code(pool):
    run_ids = [f"run-{uuid.uuid4()}" for _ in range(300)] + ["rün-ünicode-✓", "a\x1fb"]
    brand_ids = [f"brand-{i % 7}" for i in range(len(run_ids))]
    async with pool.acquire() as conn:
        keys = await conn.fetch(f"SELECT {SAMPLE_KEY_SQL} AS key FROM unnest($1::text[], $2::text[]) "
                                "AS s(run_id, brand_id)", run_ids, brand_ids)
    assert [r["key"] for r in keys] == [sample_key(r, b) for r, b in zip(run_ids, brand_ids,
                                                                         strict=True)]


@pg
async def test_human_labels_and_reviews_are_append_only_for_the_owner_too(admin_conn):
    admin = admin_conn
    with pytest.raises(asyncpg.CheckViolationError):  # a human label names its reviewer
        await admin.execute(
            "INSERT INTO classification_history (classification_id, run_id, brand_id, "
            "workspace_id, citation_class, decided_by, ground_truth_hash, reason, trigger, "
            "heuristic_version, evidence_sha256) SELECT $1, run_id, 'b', 'ws', 'ECHO', "
            "'human', $2, 'r', 'review', 'h', $2 FROM runs LIMIT 1", uuid.uuid4(), "a" * 64)
    for statement in ("UPDATE judge_reviews SET note = 'x'", "DELETE FROM judge_reviews",
                      "TRUNCATE judge_reviews CASCADE"):
        await admin.execute("INSERT INTO runs (run_id, workspace_id, engine, model, prompt, "
                            "answer, answer_sha256) VALUES ($1, 'ws', 'e', 'm', 'p', 'a', $2)",
                            rid := f"ao-{uuid.uuid4().hex}", "0" * 64)
        cid = uuid.uuid4()
        await admin.execute(
            "INSERT INTO classification_history (classification_id, run_id, brand_id, "
            "workspace_id, citation_class, decided_by, judge_model, ground_truth_hash, reason, "
            "trigger, heuristic_version, evidence_sha256) VALUES ($1, $2, 'b', 'ws', 'ECHO', "
            "'judge', 'j', $3, 'r', 'live', 'h', $3)", cid, rid, "a" * 64)
        await admin.execute(
            "INSERT INTO judge_reviews (review_id, workspace_id, run_id, brand_id, "
            "classification_id, human_class, ground_truth_hash, reviewer) VALUES "
            "($1, 'ws', $2, 'b', $3, 'ECHO', $4, 'Ana')", uuid.uuid4(), rid, cid, "a" * 64)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await admin.execute(statement)
