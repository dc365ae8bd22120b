"""``GET /v1/metrics?group_by=``: rows split by prompt tag and branded vs unbranded, all engines
together, and the source share / top cited domains, on real PostgreSQL (issue #12)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import PromptContext, RunRecorded, RunSource

pytestmark = pytest.mark.integration

DAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
WIDGETS = PromptContext(prompt_id="p-widgets", prompt_set="demo", topic="widgets",
                        funnel="consideration")
ALPHA_Q = PromptContext(prompt_id="p-alpha", prompt_set="demo", topic="alpha-brand")


async def _feed(pool, heuristic, workspace, engine, prompt, answer, *, context=None, sources=()):
    run_id = f"spl-{uuid.uuid4().hex}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine=engine, model="m",
                          prompt=prompt, answer=answer,
                          answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=DAY, answered_at=DAY, source="collector" if context else "external",
                          sources=list(sources), prompt_context=context)
    await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                      ClassifierUnitOfWork(pool), heuristic)


def _share(row, label):
    s = row["source_share"][label]
    return s["successes"], s["n"]


async def test_metrics_split_by_tag_branded_and_all_engines_with_source_share(
        make_client, workspace, pool, heuristic):
    c = make_client(workspace, actor="analyst")
    fact = {"source_url": "https://x.example/", "attribution": "test"}
    await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
    await c.post("/v1/brands", json={"name": "Beta", "domains": ["beta.example"]})
    await c.patch("/v1/brands/alpha", json={"competitors": ["beta"]})
    for b, text in (("alpha", "Alpha makes widgets."), ("beta", "Beta makes gadgets.")):
        await c.post(f"/v1/brands/{b}/ground-truth/facts", json=fact | {"text": text})
    # R1: collected, the engine's annotation cites a review site next to the link in the text.
    await _feed(pool, heuristic, workspace, "e1", "Which widget maker is best?",
                "See https://alpha.example/widgets", context=WIDGETS, sources=[
                    RunSource(url="https://reviews.example/top", domain="reviews.example",
                              host="reviews.example", position=0, origin="annotation"),
                    RunSource(url="https://alpha.example/widgets", domain="alpha.example",
                              host="alpha.example", position=1)])
    # R2: same prompt, a run without sources on the event: the classifier extracts them.
    await _feed(pool, heuristic, workspace, "e1", "Which widget maker is best?",
                "See https://alpha.example/widgets", context=WIDGETS)
    # R3: a branded prompt (names Alpha) answered with the competitor's link.
    await _feed(pool, heuristic, workspace, "e2", "Is Alpha any good?",
                "Try https://shop.beta.example/gadgets instead.", context=ALPHA_Q)
    # R4: a run POSTed by hand: no prompt context, no sources.
    await _feed(pool, heuristic, workspace, "e2", "Tell me about widgets", "Nothing about any company.")

    # All engines together: one row per brand and period.
    r = await c.get("/v1/metrics", params={"period": "day", "group_by": ""})
    assert r.status_code == 200, r.text
    assert r.json()["group_by"] == []
    rows = {x["brand_id"]: x for x in r.json()["rows"]}
    alpha, beta = rows["alpha"], rows["beta"]
    assert alpha["engine"] is None and alpha["n"] == 4
    assert (alpha["citation_rate"]["successes"], alpha["citation_rate"]["n"]) == (2, 4)
    assert alpha["citation_rate_by_prompt"]["prompts"] == 3
    assert alpha["source_share"]["answers"] == 4 and alpha["source_share"]["prompts"] == 3
    assert _share(alpha, "owned") == (2, 4)  # R1, R2
    assert _share(alpha, "competitor") == (1, 4)  # R3: a subdomain of Beta's domain
    assert _share(alpha, "third_party") == (1, 4)  # R1's review site
    owned = alpha["source_share"]["owned"]
    assert owned["ci95_low"] == pytest.approx(0.150039, abs=1e-6)  # Wilson 2/4
    assert owned["by_prompt"]["prompts"] == 3 and owned["by_prompt"]["value"] == 0.5
    assert owned["by_prompt"]["ci95_low"] is not None
    assert alpha["top_domains"] == [
        {"domain": "alpha.example", "answers": 2, "label": "owned"},
        {"domain": "beta.example", "answers": 1, "label": "competitor"},
        {"domain": "reviews.example", "answers": 1, "label": "third_party"}]
    # From Beta's side the same sources read differently (Beta names no competitors).
    assert _share(beta, "owned") == (1, 4) and _share(beta, "competitor") == (0, 4)
    assert _share(beta, "third_party") == (2, 4)
    assert beta["top_domains"][0] == {"domain": "alpha.example", "answers": 2, "label": "third_party"}

    # Per engine (the default) still sums to the same pairs.
    per_engine = (await c.get("/v1/metrics", params={"period": "day", "brand_id": "alpha"})).json()
    assert per_engine["group_by"] == ["engine"]
    assert {(x["engine"], x["n"], x["source_share"]["owned"]["successes"])
            for x in per_engine["rows"]} == {("e1", 2, 2), ("e2", 2, 0)}

    # By prompt tag: the collector's topic on the run; a run without one is its own row (null).
    topics = (await c.get("/v1/metrics", params={"period": "day", "brand_id": "alpha",
                                                 "group_by": "topic"})).json()["rows"]
    assert {(x["topic"], x["n"], x["citation_rate"]["successes"]) for x in topics} == {
        ("widgets", 2, 2), ("alpha-brand", 1, 0), (None, 1, 0)}
    assert all(x["engine"] is None for x in topics)

    # Branded vs unbranded, per engine: the prompt names a tracked brand (the collector's rule).
    branded = (await c.get("/v1/metrics", params={"period": "day", "brand_id": "alpha",
                                                  "group_by": "engine,branded"})).json()["rows"]
    assert {(x["engine"], x["branded"], x["n"]) for x in branded} == {
        ("e1", False, 2), ("e2", True, 1), ("e2", False, 1)}

    bad = await c.get("/v1/metrics", params={"group_by": "engine,colour"})
    assert bad.status_code == 422 and "group_by" in bad.text
