"""Published formulas with pinned values (Wilson intervals checked against textbook values), and
the /v1/metrics endpoint on real PostgreSQL over the current class of each (run, brand)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain import metrics as m
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import RunRecorded


@pytest.mark.unit
@pytest.mark.parametrize("successes,n,low,high", [
    (81, 263, 0.255289, 0.366210),  # Newcombe (1998) / Wikipedia worked example
    (8, 10, 0.490162, 0.943318),
    (0, 4, 0.0, 0.489891),
    (4, 8, 0.215216, 0.784784),
    (1, 1, 0.206549, 1.0),
])
def test_wilson_pinned(successes, n, low, high):
    p = m.wilson(successes, n)
    assert p.value == pytest.approx(successes / n)
    assert p.low == pytest.approx(low, abs=1e-6) and p.high == pytest.approx(high, abs=1e-6)


@pytest.mark.unit
def test_wilson_empty_and_invalid():
    assert m.wilson(0, 0) == m.Proportion(0, 0, None, None, None)
    with pytest.raises(ValueError):
        m.wilson(5, 4)


@pytest.mark.unit
def test_formulas():
    c = {"STRONG": 3, "DESCRIPTIVE": 1, "ECHO": 2, "CONFABULATED": 1, "ABSENT": 3}
    assert m.citation_rate(c).value == 0.4 and m.citation_rate(c).n == 10
    assert m.confabulation_rate(c).n == 7 and m.confabulation_rate(c).successes == 1
    assert m.echo_rate(c).value == 0.2 and m.absent_rate(c).value == 0.3
    assert m.score(c).successes == pytest.approx(3 + 0.75 + 0.5) and m.score(c).n == 10
    sov = m.share_of_voice(c, [{"STRONG": 2, "ABSENT": 9}, {"DESCRIPTIVE": 2}])
    assert (sov.successes, sov.n) == (4, 8)


async def _feed(pool, heuristic, workspace, engine, answer, at, prompt="Tell me about migraine"):
    run_id = f"met-{uuid.uuid4().hex}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine=engine, model="m", prompt=prompt,
                          answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=at, answered_at=at)
    await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                      ClassifierUnitOfWork(pool), heuristic)
    return run_id


@pytest.mark.integration
async def test_metrics_endpoint_pinned(make_client, workspace, pool, heuristic, stand_in_judge):
    c = make_client(workspace, judge=stand_in_judge(), actor="analyst")
    fact = {"source_url": "https://x.example/", "attribution": "test"}
    await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
    await c.post("/v1/brands", json={"name": "Beta", "domains": ["beta.example"]})
    await c.post("/v1/brands", json={"name": "Gamma", "domains": ["gamma.example"]})  # no ground truth
    await c.patch("/v1/brands/alpha", json={"competitors": ["beta"]})
    await c.post("/v1/brands/alpha/ground-truth/facts", json=fact | {"text": "Alpha makes widgets."})
    await c.post("/v1/brands/beta/ground-truth/facts", json=fact | {"text": "Beta makes gadgets."})
    day = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
    # Every run is about every brand of the workspace (brand_ids empty).
    for _ in range(3):  # Alpha STRONG, Beta ABSENT, Gamma refused
        await _feed(pool, heuristic, workspace, "e1", "See https://alpha.example/widgets", day)
    for _ in range(2):  # Alpha ABSENT, Beta STRONG
        await _feed(pool, heuristic, workspace, "e1", "See https://beta.example/gadgets", day)
    for _ in range(2):  # both ABSENT
        await _feed(pool, heuristic, workspace, "e1", "Nothing about any company.", day)
    judged = await _feed(pool, heuristic, workspace, "e1", "Alpha is a company with 40 years of widgets.", day)
    r = await c.post(f"/v1/runs/{judged}/reclassify", json={"reason": "judge it", "brand_ids": ["alpha"]})
    assert r.json()["brands"][0]["citation_class"] == "DESCRIPTIVE"
    await _feed(pool, heuristic, workspace, "e2", "See https://alpha.example/", datetime(2026, 12, 2, tzinfo=UTC))

    r = await c.get("/v1/metrics", params={"period": "day", "engine": "e1"})
    assert r.status_code == 200, r.text
    rows = {(x["brand_id"], x["period_start"][:10]): x for x in r.json()["rows"]}
    alpha = rows[("alpha", "2026-11-30")]
    assert alpha["n"] == 8
    assert alpha["counts"] == {"STRONG": 3, "DESCRIPTIVE": 1, "ECHO": 0, "CONFABULATED": 0, "ABSENT": 4}
    cr = alpha["citation_rate"]
    assert (cr["successes"], cr["n"], cr["value"]) == (4, 8, 0.5)
    assert cr["ci95_low"] == pytest.approx(0.215216, abs=1e-6) and cr["ci95_high"] == pytest.approx(0.784784, abs=1e-6)
    sov = alpha["share_of_voice"]  # Alpha 4 citations vs Beta 2
    assert (sov["successes"], sov["n"]) == (4, 6)
    assert sov["ci95_low"] == pytest.approx(0.299993, abs=1e-6)
    assert alpha["confabulation_rate"]["n"] == 4 and alpha["confabulation_rate"]["value"] == 0.0
    assert alpha["absent_rate"]["value"] == 0.5
    assert alpha["score"]["successes"] == pytest.approx(3.75) and alpha["score"]["ci95_high"] == pytest.approx(0.763296, abs=1e-6)
    beta = rows[("beta", "2026-11-30")]
    assert beta["counts"]["STRONG"] == 2 and beta["counts"]["ABSENT"] == 6 and beta["n"] == 8
    # Beta names no competitors: its share of voice is over its own citations only.
    assert (beta["share_of_voice"]["successes"], beta["share_of_voice"]["n"]) == (2, 2)
    # One prompt asked 8 times: the prompt-level interval has nothing to resample (null bounds),
    # the Wilson one above treats the 8 samples as independent (docs/metrics.md says which to read).
    bp = alpha["citation_rate_by_prompt"]
    assert (bp["value"], bp["prompts"], bp["n"], bp["ci95_low"]) == (0.5, 1, 8, None)
    assert alpha["citation_rate_change"] is None  # no earlier period
    gamma = rows[("gamma", "2026-11-30")]
    assert gamma["n"] == 0 and gamma["refused"] == 8 and gamma["citation_rate"]["value"] is None
    # Weekly buckets, brand and engine filters.
    week = (await c.get("/v1/metrics", params={"period": "week", "brand_id": "alpha"})).json()["rows"]
    assert {(x["engine"], x["period_start"][:10], x["n"]) for x in week} == {("e1", "2026-11-30", 8), ("e2", "2026-11-30", 1)}
    month = (await c.get("/v1/metrics", params={"period": "month", "brand_id": "alpha",
                                                "from": "2026-12-01T00:00:00Z"})).json()["rows"]
    assert [(x["engine"], x["period_start"][:10], x["n"]) for x in month] == [("e2", "2026-12-01", 1)]
    # Period over period (alpha on e1): 4/8 on Nov 30, then 0/6 on Dec 1; the Wilson intervals
    # [0.215, 0.785] and [0, 0.390] overlap, so the drop is reported but not flagged.
    for i in range(6):
        await _feed(pool, heuristic, workspace, "e1", "Nothing about any company.",
                    datetime(2026, 12, 1, 9, tzinfo=UTC), prompt=f"prompt {i % 3}")
    days = {x["period_start"][:10]: x for x in (await c.get("/v1/metrics", params={
        "period": "day", "engine": "e1", "brand_id": "alpha"})).json()["rows"]}
    ch = days["2026-12-01"]["citation_rate_change"]
    assert ch["previous_period_start"][:10] == "2026-11-30" and ch["delta"] == -0.5
    assert ch["significant"] is False
    assert days["2026-12-01"]["citation_rate_by_prompt"]["prompts"] == 3
    assert (await c.get("/v1/metrics", params={"period": "year"})).status_code == 422
    assert (await c.get("/v1/metrics", params={"from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"})).status_code == 422
    assert (await make_client(f"{workspace}-o").get("/v1/metrics")).json()["rows"] == []
