"""``GET /v1/metrics`` and ``GET /v1/exports/metrics`` restricted to a segment (engine, prompt
tag, branded), with the totals over the window, the values each dimension takes, and every
cell marked ``underpowered`` below the minimum sample (issues #25 item 2, #27 item 7), on real
PostgreSQL: the numbers the web app draws come from here and nowhere else."""

from __future__ import annotations

import csv
import hashlib
import io
import uuid
from datetime import UTC, datetime
from functools import partial

import httpx
import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alerts, metrics
from attesta_classifier.entrypoints.http import create_app
from attesta_classifier.settings import ClassifierSettings
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import PromptContext, RunRecorded


pytestmark = pytest.mark.integration
TOKEN = "test-internal-token"  # conftest's
DAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)

WIDGETS = PromptContext(prompt_id="p-w", prompt_set="demo", topic="widgets", persona="buyer")
GADGETS = PromptContext(prompt_id="p-g", prompt_set="demo", topic="gadgets", persona="buyer")


async def _feed(pool, heuristic, workspace, engine, prompt, answer, *, context):
    run_id = f"seg-{uuid.uuid4().hex}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine=engine, model="m",
                          prompt=prompt, answer=answer,
                          answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=DAY, answered_at=DAY, source="collector",
                          prompt_context=context)
    await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                      ClassifierUnitOfWork(pool), heuristic)


def test_one_definition_of_underpowered():
    # The alerts' rule is the metrics' rule applied to each period (one definition).
    assert alerts.DEFAULT_MIN_N == metrics.DEFAULT_MIN_N == 30
    assert alerts.DEFAULT_MIN_PROMPTS == metrics.DEFAULT_MIN_PROMPTS == 5
    assert metrics.underpowered(29, 10) and metrics.underpowered(100, 4)
    assert not metrics.underpowered(30, 5) and metrics.underpowered(0, 0)
    assert metrics.underpowered(3, 2, min_n=3, min_prompts=3)
    assert not metrics.underpowered(3, 3, min_n=3, min_prompts=3)
    cell = alerts.Cell(before={f"p{i}": (3, 6) for i in range(5)},
                       after={f"p{i}": (3, 6) for i in range(4)})
    assert alerts.underpowered(cell, 20, 5)  # after: 4 prompts
    assert not alerts.underpowered(cell, 20, 4)
    assert alerts.underpowered(cell, 25, 4)  # after: 24 answers


async def test_segment_filters_totals_and_underpowered_cells(make_client, workspace, pool,
                                                            heuristic):
    c = make_client(workspace, actor="analyst")
    await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
    await c.post("/v1/brands/alpha/ground-truth/facts", json={
        "source_url": "https://x.example/", "attribution": "test", "text": "Alpha makes widgets."})
    # e1: 3 widget answers citing Alpha's site, 1 gadget answer without it; e2: 2 widget
    # answers without it, 1 of them a branded prompt.
    for _ in range(3):
        await _feed(pool, heuristic, workspace, "e1", "Which widget maker is best?",
                    "See https://alpha.example/widgets", context=WIDGETS)
    await _feed(pool, heuristic, workspace, "e1", "Best gadgets?", "Nobody in particular.",
                context=GADGETS)
    await _feed(pool, heuristic, workspace, "e2", "Which widget maker is best?",
                "Nobody in particular.", context=WIDGETS)
    await _feed(pool, heuristic, workspace, "e2", "Is Alpha a good widget maker?",
                "Nobody in particular.", context=WIDGETS)

    base = {"period": "day", "brand_id": "alpha", "group_by": ""}
    everything = (await c.get("/v1/metrics", params=base)).json()
    assert everything["segment"] == {"engine": None, "topic": None, "persona": None,
                                     "funnel": None, "branded": None, "source": None,
                                     "include_chats": False, "collection_method": None}
    assert everything["minimum"] == {"n": metrics.DEFAULT_MIN_N,
                                     "prompts": metrics.DEFAULT_MIN_PROMPTS}
    assert everything["segment_values"] == {
        "engine": ["e1", "e2"], "topic": ["gadgets", "widgets"], "persona": ["buyer"],
        "funnel": [], "branded": ["false", "true"], "source": ["collector"],
        "collection_method": []}
    [row] = everything["rows"]
    assert (row["n"], row["citation_rate"]["successes"], row["prompts"]) == (6, 3, 3)
    # 6 answers over 3 prompts: every cell is underpowered, and says so.
    assert row["underpowered"] is True and row["citation_rate"]["underpowered"] is True
    assert row["citation_rate_by_prompt"]["underpowered"] is True
    assert row["source_share"]["owned"]["underpowered"] is True
    # One period: the totals over the window are that row.
    [total] = everything["totals"]
    assert total["citation_rate"] == row["citation_rate"]
    assert total["period_start"] == row["period_start"]

    # A segment: engine e1 and topic widgets -> only the 3 cited answers.
    seg = (await c.get("/v1/metrics", params={**base, "engine": "e1", "topic": "widgets"})).json()
    [row] = seg["rows"]
    assert (row["n"], row["citation_rate"]["successes"]) == (3, 3)
    assert seg["segment"]["engine"] == "e1" and seg["segment"]["topic"] == "widgets"
    # The form's choices do not shrink with the segment chosen.
    assert seg["segment_values"] == everything["segment_values"]
    # Branded prompts only, and the persona tag.
    [row] = (await c.get("/v1/metrics", params={**base, "branded": "true"})).json()["rows"]
    assert (row["n"], row["citation_rate"]["successes"]) == (1, 0)
    [row] = (await c.get("/v1/metrics", params={**base, "branded": "false",
                                                  "persona": "buyer"})).json()["rows"]
    assert row["n"] == 5
    assert (await c.get("/v1/metrics", params={**base, "topic": "none-such"})).json()["rows"] == []

    # The export takes the same parameters (one dependency) and carries the same figures,
    # with the underpowered flags and the prompt bootstrap.
    params = {**base, "engine": "e1", "topic": "widgets"}
    as_json = (await c.get("/v1/exports/metrics", params={**params, "format": "json"})).json()
    assert as_json["rows"] == seg["rows"] and as_json["segment"] == seg["segment"]
    text = (await c.get("/v1/exports/metrics", params={**params, "format": "csv"})).text
    [line] = list(csv.DictReader(io.StringIO(text)))
    assert (line["engine"], line["topic"], line["n"], line["citation_rate_successes"]) == (
        "", "", "3", "3.0")
    assert line["underpowered"] == "True" and line["citation_rate_underpowered"] == "True"
    assert float(line["citation_rate_value"]) == seg["rows"][0]["citation_rate"]["value"]
    assert line["citation_rate_by_prompt_prompts"] == "1"


async def test_the_minimum_is_given_to_the_bus(workspace, pool, heuristic):
    """``metrics_min_n`` / ``metrics_min_prompts`` given to ``build_bus`` (from the settings
    ATTESTA_METRICS_MIN_N / ATTESTA_METRICS_MIN_PROMPTS) reach the handler."""
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                    metrics_min_n=2, metrics_min_prompts=1)
    async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(bus, internal_token=TOKEN)),
            base_url="http://classifier.test",
            headers={"X-Attesta-Internal-Token": TOKEN, "X-Attesta-Workspace": workspace,
                     "X-Attesta-Actor": "analyst"}) as c:
        await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
        await c.post("/v1/brands/alpha/ground-truth/facts", json={
            "source_url": "https://x.example/", "attribution": "test",
            "text": "Alpha makes widgets."})
        for _ in range(2):
            await _feed(pool, heuristic, workspace, "e1", "Which widget maker is best?",
                        "See https://alpha.example/widgets", context=WIDGETS)
        body = (await c.get("/v1/metrics", params={"period": "day", "group_by": ""})).json()
    assert body["minimum"] == {"n": 2, "prompts": 1}
    assert body["rows"][0]["underpowered"] is False
    assert ClassifierSettings().metrics_min_n == metrics.DEFAULT_MIN_N
    assert ClassifierSettings(metrics_min_prompts=3).metrics_min_prompts == 3


async def test_run_export_rows_carry_the_hashes_a_third_party_checks(make_client, workspace, pool,
                                                                     heuristic):
    """Each exported (run, brand) row names the answer's bytes (SHA-256) and the ground truth it
    was judged on (the hash of the active facts' canonical text): docs/metrics.md, "Verifying
    an export offline"."""
    c = make_client(workspace, actor="analyst")
    await c.post("/v1/brands", json={"name": "Alpha", "domains": ["alpha.example"]})
    await c.post("/v1/brands/alpha/ground-truth/facts", json={
        "source_url": "https://x.example/", "attribution": "test", "text": "Alpha makes widgets."})
    answer = "See https://alpha.example/widgets"
    await _feed(pool, heuristic, workspace, "e1", "Which widget maker is best?", answer,
                context=WIDGETS)
    gt = (await c.get("/v1/brands/alpha/ground-truth")).json()
    canonical = "".join(f"{f['fact_id']}\t{f['type']}\t{f['source_url']}\t{f['text']}\n"
                        for f in sorted(gt["facts"], key=lambda f: f["fact_id"]))
    assert hashlib.sha256(canonical.encode()).hexdigest() == gt["ground_truth_hash"]
    [row] = list(csv.DictReader(io.StringIO(
        (await c.get("/v1/exports/runs", params={"format": "csv"})).text)))
    assert row["answer_sha256"] == hashlib.sha256(answer.encode()).hexdigest()
    assert row["ground_truth_hash"] == gt["ground_truth_hash"]
    [line] = (await c.get("/v1/exports/runs", params={"format": "jsonl"})).text.splitlines()
    assert '"ground_truth_hash":"%s"' % gt["ground_truth_hash"] in line
