"""The brand's position in each answer (issue #25 item 3) and the brand's figures over its own
prompts, with the assistant's ad-hoc chats kept apart (item 6), on real PostgreSQL: stored with
every classification (first time, reclassification, reverification), returned per run, and
aggregated in ``GET /v1/metrics`` and its export."""

from __future__ import annotations

import csv
import hashlib
import io
import uuid
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.commands import RecordRuns
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import PromptContext, RunRecorded

pytestmark = pytest.mark.integration
DAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)


async def _feed(pool, heuristic, workspace, prompt, answer, *, source="collector",
                engine="e1") -> str:
    run_id = f"pos-{uuid.uuid4().hex}"
    context = (PromptContext(prompt_id=hashlib.sha256(prompt.encode()).hexdigest()[:8],
                             prompt_set="demo") if source == "collector" else None)
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine=engine, model="m",
                          prompt=prompt, answer=answer,
                          answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=DAY, answered_at=DAY, source=source,
                          prompt_context=context)
    await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                      ClassifierUnitOfWork(pool), heuristic)
    return run_id


async def _brands(c, *names_competitors):
    for name, _ in names_competitors:
        slug = name.lower()
        assert (await c.post("/v1/brands", json={
            "name": name, "domains": [f"{slug}.example"]})).status_code == 201
        assert (await c.post(f"/v1/brands/{slug}/ground-truth/facts", json={
            "source_url": f"https://{slug}.example/", "attribution": "test",
            "text": f"{name} makes widgets."})).status_code == 201
    for name, competitors in names_competitors:  # competitors must be brands already
        if competitors:
            assert (await c.patch(f"/v1/brands/{name.lower()}", json={
                "competitors": competitors})).status_code == 200


def _by_brand(run):
    return {s["brand_id"]: (s["position"], s["named_order"]) for s in run["brands"]}


async def test_position_is_stored_returned_and_aggregated(make_client, workspace, pool,
                                                           heuristic, stand_in_judge):
    c = make_client(workspace, actor="analyst", judge=stand_in_judge())
    await _brands(c, ("Alpha", ["beta"]), ("Beta", ["alpha"]))
    # Deterministic classes (links to the brands' sites): Alpha 1st, 2nd, 1st, not named, over
    # four prompts.
    answers = {
        "p1": "Try https://alpha.example first, then https://beta.example.",
        "p2": "Beta (https://beta.example) is ahead of https://alpha.example here.",
        "p3": "Only https://alpha.example.",
        "p4": "Only https://beta.example.",
    }
    runs = {p: await _feed(pool, heuristic, workspace, f"Which widget maker? {p}", a)
            for p, a in answers.items()}
    got = {p: _by_brand((await c.get(f"/v1/runs/{r}")).json()) for p, r in runs.items()}
    assert got["p1"] == {"alpha": (1, ["alpha", "beta"]), "beta": (2, ["alpha", "beta"])}
    assert got["p2"] == {"alpha": (2, ["beta", "alpha"]), "beta": (1, ["beta", "alpha"])}
    assert got["p3"]["alpha"] == (1, ["alpha"]) and got["p3"]["beta"] == (None, ["alpha"])
    assert got["p4"]["alpha"] == (None, ["beta"])

    body = (await c.get("/v1/metrics", params={"period": "day", "brand_id": "alpha",
                                               "group_by": ""})).json()
    [row] = body["rows"]
    pos = row["position"]
    assert (pos["answers"], pos["named"], pos["prompts"]) == (4, 3, 4)
    assert pos["mean"]["value"] == pytest.approx((1 + 2 + 1) / 3)
    assert pos["mean"]["n"] == 3 and pos["mean"]["prompts"] == 3
    assert pos["mean"]["ci95_low"] <= pos["mean"]["value"] <= pos["mean"]["ci95_high"]
    assert pos["first"]["value"] == pytest.approx(2 / 4) and pos["first"]["n"] == 4
    assert pos["first"]["ci95_low"] < 0.5 < pos["first"]["ci95_high"]  # Wilson
    assert pos["weighted_visibility"]["value"] == pytest.approx((1 + 0.9 + 1 + 0) / 4)
    # Four answers over four prompts: underpowered, like every small cell.
    assert pos["mean"]["underpowered"] is pos["first"]["underpowered"] is True
    assert pos["weighted_visibility"]["underpowered"] is True
    assert body["totals"][0]["position"] == pos

    # The export carries the same figures.
    text = (await c.get("/v1/exports/metrics", params={"period": "day", "brand_id": "alpha",
                                                       "group_by": "", "format": "csv"})).text
    [line] = list(csv.DictReader(io.StringIO(text)))
    assert (line["position_answers"], line["position_named"]) == ("4", "3")
    assert float(line["position_first_value"]) == pytest.approx(0.5)
    assert float(line["position_weighted_visibility_value"]) == pytest.approx(0.725)
    assert line["position_mean_underpowered"] == "True"

    # An answer the heuristic cannot decide is parked (no class, no position); a manual
    # reclassification judges it and records the position in the same transaction.
    parked = await _feed(pool, heuristic, workspace, "Who leads?",
                         "Beta leads the market and Alpha follows closely with new kits.")
    assert _by_brand((await c.get(f"/v1/runs/{parked}")).json()) == {
        "alpha": (None, None), "beta": (None, None)}
    r = await c.post(f"/v1/runs/{parked}/reclassify", json={"reason": "second look"})
    assert r.status_code == 200
    assert _by_brand((await c.get(f"/v1/runs/{parked}")).json()) == {
        "alpha": (2, ["beta", "alpha"]), "beta": (1, ["beta", "alpha"])}

    # A new competitor, then a reverification: every class recorded again, with the position
    # against the brand's competitors as they are now.
    await _brands(c, ("Gamma", []))
    assert (await c.patch("/v1/brands/alpha", json={"competitors": ["beta", "gamma"]})
            ).status_code == 200
    gamma_first = await _feed(pool, heuristic, workspace, "Which widget maker? p5",
                              "Gamma at https://gamma.example, then https://alpha.example")
    assert _by_brand((await c.get(f"/v1/runs/{gamma_first}")).json())["alpha"] == (
        2, ["gamma", "alpha"])
    assert (await c.post("/v1/brands/alpha/reverify")).status_code == 200
    assert _by_brand((await c.get(f"/v1/runs/{runs['p1']}")).json())["alpha"] == (
        1, ["alpha", "beta"])
    history = (await c.get(f"/v1/runs/{runs['p1']}/classifications")).json()["items"]
    assert [h["trigger"] for h in history if h["brand_id"] == "alpha"] == [
        "live", "reverification"]


async def test_chats_with_the_assistant_stay_out_of_the_headline_figures(make_client, workspace,
                                                                         pool, heuristic):
    c = make_client(workspace, actor="analyst")
    await _brands(c, ("Alpha", []))
    for i in range(6):  # the brand's prompts: 4 of 6 answers cite it
        await _feed(pool, heuristic, workspace, f"Which widget maker? {i}",
                    "See https://alpha.example" if i < 4 else "Nobody in particular.")
    params = {"period": "day", "brand_id": "alpha", "group_by": ""}
    before = (await c.get("/v1/metrics", params=params)).json()
    # Many ad-hoc chats with the assistant about something else: each becomes a run for every
    # tracked brand of the workspace, and none names Alpha.
    for i in range(40):
        await _feed(pool, heuristic, workspace, f"Is ibuprofen safe with coffee? {i}",
                    "Usually yes; ask a pharmacist.", source="assistant",
                    engine="attesta-assistant")
    after = (await c.get("/v1/metrics", params=params)).json()
    [row] = after["rows"]
    assert row["citation_rate"] == before["rows"][0]["citation_rate"]
    assert (row["n"], row["citation_rate"]["successes"]) == (6, 4)
    assert row["position"] == before["rows"][0]["position"]
    assert after["totals"] == before["totals"]
    assert after["segment"]["include_chats"] is False and after["segment"]["source"] is None
    # Kept, and shown as their own source: the form can offer it.
    assert after["segment_values"]["source"] == ["assistant", "collector"]
    assert "attesta-assistant" in after["segment_values"]["engine"]
    # On request: with the chats, or the chats alone.
    [with_chats] = (await c.get("/v1/metrics", params={**params, "include_chats": "true"})
                    ).json()["rows"]
    assert (with_chats["n"], with_chats["citation_rate"]["successes"]) == (46, 4)
    [chats] = (await c.get("/v1/metrics", params={**params, "source": "assistant"})).json()["rows"]
    assert (chats["n"], chats["citation_rate"]["successes"]) == (40, 0)
    [collected] = (await c.get("/v1/metrics", params={**params, "source": "collector"})
                   ).json()["rows"]
    assert collected["citation_rate"] == row["citation_rate"]
    # The alerts read the same counts (uow.decisions.tallies): without the chats by default.
    uow = ClassifierUnitOfWork(pool)
    async with uow.read():
        default = await uow.decisions.tallies(workspace, "day", None, None, None)
        everything = await uow.decisions.tallies(workspace, "day", None, None, None,
                                                 include_chats=True)
    assert sum(t.n for t in default) == 6 and sum(t.n for t in everything) == 46
    assert {t.source for t in default} == {"collector"}
