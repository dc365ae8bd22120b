"""How each answer was collected (issue #25 item 4), on real PostgreSQL: the run keeps the
engine's declared collection method and the model build the endpoint reported, the run view and
the runs filter return them, the metrics never average across methods unless asked, and a model
build change is listed per engine and day for the charts."""

from __future__ import annotations

import csv
import hashlib
import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import ModelBuild, PromptContext, RunRecorded

pytestmark = pytest.mark.integration
DAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)


async def _feed(pool, heuristic, workspace, answer, *, method, build=None, engine="e1",
                at=DAY) -> str:
    run_id = f"col-{uuid.uuid4().hex}"
    payload = RunRecorded(
        run_id=run_id, workspace_id=workspace, engine=engine, model="gpt-x", prompt="Which?",
        answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
        requested_at=at, answered_at=at, source="collector",
        prompt_context=PromptContext(prompt_id="p1", prompt_set="demo"),
        collection_method=method,
        model_build=None if build is None else ModelBuild(model=build[0],
                                                          system_fingerprint=build[1]))
    await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                      ClassifierUnitOfWork(pool), heuristic)
    return run_id


async def test_collection_method_and_model_build(make_client, workspace, pool, heuristic):
    c = make_client(workspace, actor="analyst")
    await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
    await c.post("/v1/brands/alpha/ground-truth/facts", json={
        "source_url": "https://x.example/", "attribution": "test", "text": "Alpha makes widgets."})
    cited, absent = "See https://alpha.example", "Nobody in particular."
    # Plain API: 1 of 4 cited; grounded in a web search: 3 of 3 cited.
    api_run = await _feed(pool, heuristic, workspace, cited, method="api",
                          build=("gpt-x-2026-11-01", "fp_a"))
    for _ in range(3):
        await _feed(pool, heuristic, workspace, absent, method="api",
                    build=("gpt-x-2026-11-01", "fp_a"))
    for _ in range(3):
        await _feed(pool, heuristic, workspace, cited, method="api_with_search", engine="e2")
    # The next day e1 reports another build (twice), once the old one: the day's build is the
    # one most runs reported, so a change is marked on that day.
    later = DAY + timedelta(days=1)
    for build in (("gpt-x-2026-11-20", "fp_b"), ("gpt-x-2026-11-20", "fp_b"),
                  ("gpt-x-2026-11-01", "fp_a")):
        await _feed(pool, heuristic, workspace, absent, method="api", build=build, at=later)
    legacy = await _feed(pool, heuristic, workspace, absent, method=None)

    run = (await c.get(f"/v1/runs/{api_run}")).json()
    assert run["collection_method"] == "api"
    assert run["model_build"] == {"model": "gpt-x-2026-11-01", "system_fingerprint": "fp_a"}
    old = (await c.get(f"/v1/runs/{legacy}")).json()
    assert old["collection_method"] is None and old["model_build"] is None
    # The runs filter.
    listed = (await c.get("/v1/runs", params={"collection_method": "api_with_search"})).json()
    assert len(listed["items"]) == 3 and {i["engine"] for i in listed["items"]} == {"e2"}

    base = {"period": "week", "brand_id": "alpha", "group_by": ""}  # Mon 30 Nov and Tue 1 Dec
    split = (await c.get("/v1/metrics", params=base)).json()
    # Never averaged across methods: one row per method (null: runs that recorded none).
    by_method = {r["collection_method"]: (r["n"], r["citation_rate"]["successes"])
                 for r in split["rows"]}
    assert by_method == {None: (1, 0), "api": (7, 1), "api_with_search": (3, 3)}
    assert {t["collection_method"] for t in split["totals"]} == {None, "api", "api_with_search"}
    assert split["segment_values"]["collection_method"] == ["api", "api_with_search"]
    # On request: every method together, or one method.
    [together] = (await c.get("/v1/metrics", params={**base, "collection_method": "any"})
                  ).json()["rows"]
    assert (together["n"], together["collection_method"]) == (11, None)
    [grounded] = (await c.get("/v1/metrics", params={
        **base, "collection_method": "api_with_search"})).json()["rows"]
    assert (grounded["n"], grounded["citation_rate"]["value"]) == (3, 1.0)
    assert grounded["collection_method"] == "api_with_search"

    # The build change, per engine and day, for the charts.
    assert split["build_changes"] == [{
        "engine": "e1", "day": later.date().isoformat(),
        "model_build": {"model": "gpt-x-2026-11-20", "system_fingerprint": "fp_b"},
        "previous": {"model": "gpt-x-2026-11-01", "system_fingerprint": "fp_a"}}]
    only_e2 = (await c.get("/v1/metrics", params={**base, "engine": "e2"})).json()
    assert only_e2["build_changes"] == []

    # The export says which method each row is.
    text = (await c.get("/v1/exports/metrics", params={**base, "format": "csv"})).text
    assert sorted(line["collection_method"] for line in csv.DictReader(io.StringIO(text))) == [
        "", "api", "api_with_search"]
