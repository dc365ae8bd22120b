"""Prompts, engines and schedules through the collector's internal HTTP API on a real
PostgreSQL: validation (4xx with a reason), branded vs unbranded, bulk import with a per-row
report (a re-import changes nothing), retiring without deleting, keys never stored."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.domain.model import BrandNames
from attesta_collector.bootstrap import build_bus
from attesta_collector.entrypoints.http import create_app
from attesta_testing.collector import INTERNAL_TOKEN, engine_checks, random_box

pytestmark = pytest.mark.integration

WS = "ws-cat"
BRANDS = StaticBrandDirectory({WS: [
    BrandNames("lumora", "Lumora", ("Lumora Health",), ("lumora.example",), ("vexa",)),
    BrandNames("vexa", "Vexa Labs", (), ("vexa-labs.example",), ("lumora",))]})
H = {"X-Attesta-Internal-Token": INTERNAL_TOKEN, "X-Attesta-Workspace": WS}
CHECKS = engine_checks("127.0.0.1:9")  # the operator allows one local engine address:port


@pytest.fixture
async def api(pool, new_uow):
    app = create_app(build_bus(new_uow, brands=BRANDS, engine_checks=CHECKS,
                               sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://collector", headers=H) as client:
        yield client


async def test_prompt_lifecycle_branded_and_retire_keeps_history(api, collector_db):
    r = await api.post("/v1/prompts", json={"text": "Is Lumorá worth it for sleep?",
                                            "tags": {"topic": "sleep", "funnel": "decision"},
                                            "brand_ids": ["lumora"], "prompt_set": "core"})
    assert r.status_code == 201, r.text
    p = r.json()
    assert p["branded"] is True and p["branded_brand_ids"] == ["lumora"]
    r = await api.post("/v1/prompts", json={"text": "best sleep tracker for runners",
                                            "tags": {"topic": "sleep"}, "prompt_set": "core"})
    unbranded = r.json()
    assert r.status_code == 201 and unbranded["branded"] is False
    # The same prompt again is a conflict with the existing id.
    r = await api.post("/v1/prompts", json={"text": "best  sleep tracker for runners",
                                            "prompt_set": "core"})
    assert r.status_code == 409 and unbranded["prompt_id"] in r.json()["error"]["reason"]
    # Filterable by branded and tag.
    r = await api.get("/v1/prompts", params={"branded": "false", "tag": "sleep"})
    assert [x["prompt_id"] for x in r.json()["items"]] == [unbranded["prompt_id"]]
    # A change re-decides branded.
    r = await api.patch(f"/v1/prompts/{unbranded['prompt_id']}",
                        json={"text": "Vexa Labs or a ring for runners?"})
    assert r.status_code == 200 and r.json()["branded_brand_ids"] == ["vexa"]
    # Retire: gone from the default list, kept with include_retired, never deleted.
    r = await api.post(f"/v1/prompts/{p['prompt_id']}/retire")
    assert r.status_code == 200 and r.json()["retired_at"]
    listed = (await api.get("/v1/prompts")).json()["items"]
    assert p["prompt_id"] not in [x["prompt_id"] for x in listed]
    every = (await api.get("/v1/prompts", params={"include_retired": "true"})).json()["items"]
    assert p["prompt_id"] in [x["prompt_id"] for x in every]
    assert (await api.patch(f"/v1/prompts/{p['prompt_id']}", json={"locale": "pt"})).status_code == 409
    conn = await asyncpg.connect(collector_db.admin_url)  # not even the owner may delete
    try:
        with pytest.raises(asyncpg.RaiseError, match="never deleted"):
            await conn.execute("DELETE FROM prompts")
        with pytest.raises(asyncpg.RaiseError, match="never deleted"):
            await conn.execute("TRUNCATE prompts CASCADE")
    finally:
        await conn.close()


@pytest.mark.parametrize(("body", "needle"), [
    ({"text": ""}, "text"),
    ({"text": "x", "locale": "English"}, "locale"),
    ({"text": "x", "tags": {"funnel": "impulse"}}, "funnel"),
    ({"text": "x", "brand_ids": ["nobody"]}, "nobody"),
    ({"text": "x", "extra": 1}, "extra"),
    ({"text": "a\u0000b"}, "NUL"),
])
async def test_prompt_validation_is_a_4xx_with_the_reason(api, body, needle):
    r = await api.post("/v1/prompts", json=body)
    assert r.status_code == 422, r.text
    assert needle in r.json()["error"]["reason"]


async def test_import_csv_and_jsonl_report_per_row_and_reimport_changes_nothing(api, pool):
    csv_file = ("text,prompt_set,locale,topic,persona,funnel,brand_ids\n"
                "What is Lumora?,core,en,brand,,awareness,lumora\n"
                "best thermostat,core,en,home,owner,consideration,\n"
                ",core,en,,,,\n"
                "Lumora vs Vexa Labs,core,pt-BR,compare,,decision,lumora;vexa\n"
                "bad funnel,core,en,,,impulse,\n"
                "unknown brand,core,en,,,,ghost\n").encode()
    r = await api.post("/v1/prompts/import", content=csv_file, headers={"Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    rep = r.json()
    assert (rep["accepted"], rep["unchanged"], rep["refused"]) == (3, 0, 3)
    outcomes = {row["line"]: (row["outcome"], row.get("reason") or "") for row in rep["rows"]}
    assert outcomes[2][0] == outcomes[3][0] == outcomes[5][0] == "accepted"
    assert outcomes[4][0] == "refused" and "text" in outcomes[4][1]
    assert outcomes[6][0] == "refused" and "funnel" in outcomes[6][1]
    assert outcomes[7][0] == "refused" and "ghost" in outcomes[7][1]
    async with pool.acquire() as conn:
        before = await conn.fetch("SELECT * FROM prompts ORDER BY prompt_id")
    again = (await api.post("/v1/prompts/import", content=csv_file,
                            headers={"Content-Type": "text/csv"})).json()
    assert (again["accepted"], again["unchanged"], again["refused"]) == (0, 3, 3)
    async with pool.acquire() as conn:
        assert await conn.fetch("SELECT * FROM prompts ORDER BY prompt_id") == before

    jsonl = (b'{"text": "Lumora Health review", "tags": {"topic": "brand"}}\n'
             b'not json\n\n[1]\n'
             b'{"text": "What is Lumora?", "prompt_set": "core"}\n')
    rep = (await api.post("/v1/prompts/import?format=jsonl", content=jsonl)).json()
    assert (rep["accepted"], rep["unchanged"], rep["refused"]) == (1, 1, 2)
    assert [r["line"] for r in rep["rows"] if r["outcome"] == "refused"] == [2, 4]
    r = await api.post("/v1/prompts/import", content=b"a,b\n1,2\n", headers={"Content-Type": "text/csv"})
    assert r.status_code == 422 and "text" in r.json()["error"]["reason"]
    r = await api.post("/v1/prompts/import", content=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415


async def test_engines_keep_no_key_and_schedules_validate(api, pool, new_uow, monkeypatch):
    r = await api.post("/v1/engines", json={"engine_id": "gpt", "name": "gpt-4o",
                                            "base_url": "http://127.0.0.1:9/v1",
                                            "api_key_env": "OPENAI_API_KEY"})
    assert r.status_code == 422 and "POST /v1/secrets" in r.json()["error"]["reason"]
    secret = (await api.post("/v1/secrets", json={"name": "openai", "value": "sk-1-secret"})).json()
    r = await api.post("/v1/engines", json={"engine_id": "gpt", "name": "gpt-4o",
                                            "base_url": "http://127.0.0.1:9/v1",
                                            "api_key_secret_id": secret["secret_id"],
                                            "concurrency": 8, "retry": {"attempts": 4}})
    assert r.status_code == 201, r.text
    assert r.json()["api_key_secret_id"] == secret["secret_id"] and "sk-1" not in r.text
    r = await api.post("/v1/engines", json={"name": "x", "base_url": "http://a/", "api_key": "sk-1"})
    assert r.status_code == 422 and "api_key" in r.json()["error"]["reason"]
    r = await api.post("/v1/engines", json={"engine_id": "gpt", "name": "again",
                                            "base_url": "http://127.0.0.1:9/v1"})
    assert r.status_code == 409
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT spec::text FROM engines")
    assert "sk-" not in stored
    r = await api.post("/v1/schedules", json={"engine_ids": ["gpt"], "cron": "not cron"})
    assert r.status_code == 422 and "cron" in r.json()["error"]["reason"]
    r = await api.post("/v1/schedules", json={"engine_ids": ["nope"], "interval_s": 3600})
    assert r.status_code == 422 and "nope" in r.json()["error"]["reason"]
    r = await api.post("/v1/schedules", json={"schedule_id": "daily", "engine_ids": ["gpt"],
                                              "cron": "0 9 * * *", "samples": 3,
                                              "missed_slots": "collect"})
    assert r.status_code == 201, r.text
    assert r.json()["samples"] == 3 and r.json()["missed_slots"] == "collect"
    assert (await api.get("/v1/schedules")).json()["items"][0]["schedule_id"] == "daily"
    # Planned once, then the cadence changes: the next due time follows the new cadence.
    # A new schedule is due at once and plans its latest slot (relative to the clock: a fixed
    # date in this test went stale the day it was written).
    from datetime import UTC, datetime, timedelta

    from attesta_collector.domain.commands import PlanDue
    from attesta_collector.service_layer.planning import plan_due

    now = datetime.now(UTC)
    first = now.replace(hour=9, minute=0, second=0, microsecond=0)  # the latest 09:00 slot
    first -= timedelta(days=1) if first > now else timedelta(0)
    await plan_due(PlanDue(), new_uow(), now)
    r = await api.put("/v1/schedules/daily", json={"engine_ids": ["gpt"], "interval_s": 3600})
    assert r.status_code == 200, r.text
    assert datetime.fromisoformat(r.json()["planned_through"]) == first
    assert datetime.fromisoformat(r.json()["next_due_at"]) == first + timedelta(hours=1)
    assert (await api.put("/v1/schedules/nope", json={"engine_ids": ["gpt"],
                                                      "interval_s": 3600})).status_code == 404


async def test_internal_token_and_workspace_required(pool, new_uow):
    app = create_app(build_bus(new_uow, brands=BRANDS, engine_checks=CHECKS,
                               sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://collector") as client:
        assert (await client.get("/v1/prompts")).status_code == 401
        r = await client.get("/v1/prompts", headers={"X-Attesta-Internal-Token": INTERNAL_TOKEN})
        assert r.status_code == 400


async def test_engine_collection_method_is_stored_returned_and_validated(api, pool):
    """Issue #25 item 4: each engine declares how its answers are collected; the API stores it,
    returns it, derives it when omitted, and refuses a wrong one with the reason."""
    base = {"base_url": "http://127.0.0.1:9/v1"}
    r = await api.post("/v1/engines", json={"engine_id": "grounded", "name": "gemini-grounded",
                                            "collection_method": "api_with_search", **base})
    assert r.status_code == 201, r.text
    assert r.json()["collection_method"] == "api_with_search"
    r = await api.post("/v1/engines", json={"engine_id": "plain", "name": "gpt-4o", **base})
    assert r.status_code == 201 and r.json()["collection_method"] == "api"  # the default
    r = await api.post("/v1/engines", json={"engine_id": "sonar", "name": "sonar", **base,
                                            "params": {"search_mode": "web"}})
    assert r.status_code == 201 and r.json()["collection_method"] == "api_with_search"
    r = await api.post("/v1/engines", json={"engine_id": "ours", "name": "assistant",
                                            "kind": "assistant"})
    assert r.status_code == 201 and r.json()["collection_method"] == "assistant"
    async with pool.acquire() as conn:
        stored = {r["engine_id"]: r["spec"]["collection_method"]
                  for r in await conn.fetch("SELECT engine_id, spec FROM engines")}
    assert stored == {"grounded": "api_with_search", "plain": "api", "sonar": "api_with_search",
                      "ours": "assistant"}
    listed = (await api.get("/v1/engines")).json()["items"]
    assert {e["engine_id"]: e["collection_method"] for e in listed} == stored
    # Replacing the engine changes its method (later runs carry the new one).
    r = await api.put("/v1/engines/plain", json={"name": "gpt-4o", **base,
                                                 "collection_method": "api_with_search"})
    assert r.status_code == 200 and r.json()["collection_method"] == "api_with_search"
    for body, reason in [
        ({"collection_method": "grounded"}, "collection_method"),
        ({"collection_method": 3}, "collection_method"),
        ({"collection_method": "assistant"}, "only for our own assistant"),
        ({"collection_method": "api", "params": {"enable_search": True}},
         "declare collection_method 'api_with_search'"),
    ]:
        r = await api.post("/v1/engines", json={"name": "bad", **base, **body})
        assert r.status_code == 422, (body, r.text)
        assert reason in r.json()["error"]["reason"], r.json()
    r = await api.post("/v1/engines", json={"name": "x", "kind": "assistant",
                                            "collection_method": "api"})
    assert r.status_code == 422
    assert "the assistant engine's collection_method is 'assistant'" in r.json()["error"]["reason"]
    assert len((await api.get("/v1/engines")).json()["items"]) == 4  # nothing refused was stored
