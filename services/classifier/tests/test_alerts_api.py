"""Alert rules, channels and fired alerts over the real API on real PostgreSQL (issue #25): CRUD
scoped to the workspace, the outbound policy on webhook URLs at create time (422 with the
reason), the signing secret shown once, a test alert stored with one pending delivery per
channel and its ``alerts.raised.v1`` event staged in the same transaction."""

from __future__ import annotations

import uuid
from functools import partial

import httpx
import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.entrypoints.http import create_app
from attesta_contracts import Envelope
from attesta_contracts.alerts import AlertRaised
from attesta_platform.outbound import OutboundPolicy

pytestmark = pytest.mark.integration

TOKEN = "test-internal-token"


@pytest.fixture
def alerts_client(pool, heuristic):
    """``alerts_client(workspace, allow="")`` -> an HTTP client on the real app."""
    clients = []

    def make(workspace: str, allow: str = "") -> httpx.AsyncClient:
        bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                        alert_outbound=OutboundPolicy.from_setting(allow))
        app = create_app(bus, internal_token=TOKEN, database=pool)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://classifier.test",
            headers={"X-Attesta-Internal-Token": TOKEN, "X-Attesta-Workspace": workspace})
        clients.append(client)
        return client

    return make


async def _brand(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/brands", json={"brand_id": "lumora", "name": "Lumora",
                                               "domains": ["lumora.example"]})
    assert r.status_code == 201, r.text


async def test_rules_are_created_read_muted_and_deleted_within_the_workspace(alerts_client,
                                                                             workspace):
    client = alerts_client(workspace)
    await _brand(client)
    r = await client.post("/v1/alerts/rules", json={
        "brand_id": "lumora", "metric": "citation_rate", "direction": "down",
        "segment": {"engine": "chatgpt", "branded": False}, "min_n": 40, "name": "drops"})
    assert r.status_code == 201, r.text
    rule = r.json()
    assert rule["segment"] == {"engine": "chatgpt", "tag": None, "branded": False,
                               "collection_method": None}
    assert (rule["min_n"], rule["min_prompts"], rule["alpha"], rule["muted"]) == (40, 5, 0.05, False)
    rid = rule["rule_id"]

    listed = (await client.get("/v1/alerts/rules")).json()["items"]
    assert [x["rule_id"] for x in listed] == [rid]
    r = await client.patch(f"/v1/alerts/rules/{rid}", json={"muted": True, "min_prompts": 8})
    assert r.status_code == 200, r.text
    assert (r.json()["muted"], r.json()["min_prompts"], r.json()["direction"]) == (True, 8, "down")

    other = alerts_client(f"{workspace}-other")
    assert (await other.get(f"/v1/alerts/rules/{rid}")).status_code == 404
    assert (await other.delete(f"/v1/alerts/rules/{rid}")).status_code == 404
    assert (await other.get("/v1/alerts/rules")).json()["items"] == []

    assert (await client.delete(f"/v1/alerts/rules/{rid}")).status_code == 204
    assert (await client.get(f"/v1/alerts/rules/{rid}")).status_code == 404
    assert (await client.get("/v1/alerts/rules")).json()["items"] == []


async def test_a_rule_needs_a_known_brand_and_a_metric_the_test_can_evaluate(alerts_client,
                                                                            workspace):
    client = alerts_client(workspace)
    await _brand(client)
    r = await client.post("/v1/alerts/rules", json={"brand_id": "nobody", "metric": "citation_rate"})
    assert r.status_code == 422 and "not a brand of this workspace" in r.json()["error"]["reason"]
    # Not figures of the metrics rows (position and source share are named per figure).
    for metric in ("position", "source_share", "reach"):
        r = await client.post("/v1/alerts/rules", json={"brand_id": "lumora", "metric": metric})
        assert r.status_code == 422, metric
    # Every figure the alerts can test (docs/alerts.md "Metrics"): stored as asked.
    for metric in ("share_of_voice", "source_share_owned", "source_share_competitor",
                   "source_share_third_party", "position_first", "position_mean", "score"):
        r = await client.post("/v1/alerts/rules", json={"brand_id": "lumora", "metric": metric})
        assert r.status_code == 201 and r.json()["metric"] == metric, metric
    r = await client.post("/v1/alerts/rules", json={"brand_id": "lumora",
                                                    "metric": "citation_rate", "min_prompts": 1})
    assert r.status_code == 422


async def test_webhook_urls_pass_the_outbound_policy_at_create_time(alerts_client, workspace):
    client = alerts_client(workspace)
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest/meta-data",
                "http://10.0.0.5/hook", "http://[::ffff:127.0.0.1]/hook", "http://2130706433/",
                "http://user:pw@hooks.example/x"):
        r = await client.post("/v1/alerts/channels", json={"kind": "webhook", "target": url})
        assert r.status_code == 422, (url, r.text)
        assert r.json()["error"]["reason"].startswith("target refused"), r.text
    r = await client.post("/v1/alerts/channels", json={"kind": "slack", "target": "ftp://x.example/"})
    assert r.status_code == 422
    r = await client.post("/v1/alerts/channels", json={"kind": "email", "target": "not-an-address"})
    assert r.status_code == 422
    assert (await client.get("/v1/alerts/channels")).json()["items"] == []


async def test_a_channel_shows_its_secret_once(alerts_client, workspace):
    client = alerts_client(workspace, allow="127.0.0.1:8999")
    r = await client.post("/v1/alerts/channels", json={
        "kind": "webhook", "target": "http://127.0.0.1:8999/hook", "name": "ops"})
    assert r.status_code == 201, r.text
    created = r.json()
    assert len(created["secret"]) >= 32
    r = await client.post("/v1/alerts/channels", json={"kind": "email", "target": "team@lumora.example"})
    assert r.status_code == 201, r.text
    listed = (await client.get("/v1/alerts/channels")).json()["items"]
    assert [c["kind"] for c in listed] == ["webhook", "email"]
    assert all("secret" not in c for c in listed)
    assert (await client.delete(f"/v1/alerts/channels/{created['channel_id']}")).status_code == 204
    assert [c["kind"] for c in (await client.get("/v1/alerts/channels")).json()["items"]] == ["email"]
    assert (await client.delete(f"/v1/alerts/channels/{uuid.uuid4()}")).status_code == 404


async def test_a_test_alert_is_stored_with_a_delivery_per_channel_and_its_event(alerts_client,
                                                                               workspace, pool):
    client = alerts_client(workspace, allow="127.0.0.1:8999")
    await _brand(client)
    rid = (await client.post("/v1/alerts/rules", json={"brand_id": "lumora",
                                                       "metric": "citation_rate"})).json()["rule_id"]
    for body in ({"kind": "webhook", "target": "http://127.0.0.1:8999/a"},
                 {"kind": "slack", "target": "http://127.0.0.1:8999/b"},
                 {"kind": "email", "target": "team@lumora.example"}):
        assert (await client.post("/v1/alerts/channels", json=body)).status_code == 201
    r = await client.post(f"/v1/alerts/rules/{rid}/test")
    assert r.status_code == 202, r.text
    assert r.json()["deliveries"] == 3
    alert_id = r.json()["alert_id"]

    page = (await client.get("/v1/alerts")).json()
    assert [a["alert_id"] for a in page["items"]] == [alert_id] and page["next_cursor"] is None
    detail = (await client.get(f"/v1/alerts/{alert_id}")).json()
    assert detail["test"] is True and detail["rule_id"] == rid
    assert detail["after"]["n"] == 0 and detail["p_value"] is None  # no answers: underpowered
    assert sorted(d["kind"] for d in detail["deliveries"]) == ["email", "slack", "webhook"]
    assert {d["status"] for d in detail["deliveries"]} == {"pending"}
    assert (await alerts_client(f"{workspace}-x").get(f"/v1/alerts/{alert_id}")).status_code == 404

    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT topic, key, value FROM messaging_outbox WHERE event_id = $1",
                                  uuid.UUID(alert_id))
    assert row["topic"] == "alerts.raised.v1" and row["key"] == rid
    event = Envelope[AlertRaised].model_validate_json(row["value"]).payload
    assert event.test and str(event.alert_id) == alert_id and event.metric == "citation_rate"


async def test_alerts_are_paged_newest_first(alerts_client, workspace):
    client = alerts_client(workspace)
    await _brand(client)
    rid = (await client.post("/v1/alerts/rules", json={"brand_id": "lumora",
                                                       "metric": "confabulation_rate"})).json()["rule_id"]
    ids = [(await client.post(f"/v1/alerts/rules/{rid}/test")).json()["alert_id"] for _ in range(3)]
    first = (await client.get("/v1/alerts", params={"limit": 2})).json()
    assert [a["alert_id"] for a in first["items"]] == ids[::-1][:2]
    second = (await client.get("/v1/alerts", params={"limit": 2, "cursor": first["next_cursor"]})).json()
    assert [a["alert_id"] for a in second["items"]] == ids[:1] and second["next_cursor"] is None
    assert (await client.get("/v1/alerts", params={"cursor": "garbage"})).status_code == 422
