"""Alerts in the web app (issue #25 item 1), in headless Chromium against the real gateway,
classifier and evidence service: an admin creates a rule, adds a signed-webhook channel that
points at a real receiver on 127.0.0.1 (``attesta_testing.alert_receivers``; the classifier's
``ATTESTA_ALERT_ALLOW`` names its port, nothing else local), sends a test alert, sees it
delivered in the delivery log (the receiver got it once, with a valid signature from the secret
the page showed once), and mutes the rule."""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from attesta_testing.alert_receivers import webhook_receiver_thread
from attesta_testing.infra import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# test_webapp.py's page helpers, loaded by path (tests are imported with importlib).
_w = _load("attesta_browser_webapp_alerts", Path(__file__).with_name("test_webapp.py"))
_accessible, _css, _fill, _settled, _wait = _w._accessible, _w._css, _w._fill, _w._settled, _w._wait


@pytest.fixture(scope="module")
def receiver():
    """A real webhook receiver on 127.0.0.1, in its own thread (the test blocks on Selenium)."""
    with webhook_receiver_thread() as hooks:
        yield hooks


@pytest.fixture(scope="module")
def demo_alert_port():
    """The port scripts/demo.py's own receiver listens on in the second test."""
    return free_port()


@pytest.fixture(scope="module")
def classifier_env(receiver, demo_alert_port):
    """The classifier may deliver alerts to these receivers' ports and no other local one (the
    system fixture sets ATTESTA_FETCH_ALLOW to the brand sites' port only), as scripts/up.sh
    allows the demo's receiver."""
    return {"ATTESTA_ALERT_ALLOW": f"{receiver.allow_setting},127.0.0.1:{demo_alert_port}"}


def _row(d, table: str, text: str):
    return next(r for r in d.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr") if text in r.text)


def _add_rule(d, brand_id: str, name: str, metric: str, method: str | None = None):
    """Fill the rule form (brand, metric, and the collection method when given), submit it and
    wait until the rules table lists the brand's rule; returns its row."""
    Select(_css(d, "#rule-brand")).select_by_value(brand_id)
    Select(_css(d, "#rule-metric")).select_by_value(metric)
    if method is not None:
        Select(_css(d, "#rule-method")).select_by_value(method)
    _css(d, "#rule-form button[type=submit]").click()
    _wait(d, lambda d: name in _text(d, "#rules-table"), what="the new rule listed")
    _settled(d)
    return _row(d, "rules-table", name)


def _text(d, selector: str) -> str:
    """The element's text now, or "" (read in the page: a re-render between finding and reading
    it cannot make the reference stale)."""
    return d.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';", selector)


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_a_rule_a_webhook_a_test_alert_delivered_and_muted(browser, system, sign_in, receiver):
    d, gw = sign_in()
    _, key = system["keys"]["ws-a"]
    api = httpx.Client(base_url=gw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    tag = uuid.uuid4().hex[:6]
    brand_id, name = f"alerts-{tag}", f"Vantrel {tag}"
    assert api.post("/v1/brands", json={"brand_id": brand_id, "name": name,
                                        "domains": [f"vantrel-{tag}.example"]}).status_code == 201

    # -- the page, from the menu --------------------------------------------------------------
    _css(d, "header nav a[href='/alerts']").click()
    _wait(d, lambda d: d.current_url == f"{gw}/alerts", what="the alerts page")
    _settled(d)
    assert _css(d, "h1").text == "Alerts"

    # The metric select offers every metric the API accepts, no more (the OpenAPI's enum).
    offered = [o.get_attribute("value") for o in Select(_css(d, "#rule-metric")).options]
    accepted = api.get("/openapi.json").json()["components"]["schemas"]["AlertMetric"]["enum"]
    assert offered == accepted and "position_mean" in offered and "share_of_voice" in offered

    # -- a rule: the brand's citation rate, either way, the default minimums -------------------
    row = _add_rule(d, brand_id, name, "citation_rate")
    assert "citation rate" in row.text and "active" in row.text
    assert "30 answers, 5 prompts" in row.text  # the metrics' minimums, as the API stored them
    rule_id = row.find_element(By.CSS_SELECTOR, ".test-rule").get_attribute("data-rule")
    rule = api.get(f"/v1/alerts/rules/{rule_id}").json()
    assert (rule["brand_id"], rule["metric"], rule["muted"]) == (brand_id, "citation_rate", False)

    # -- a signed webhook to the receiver: its secret is shown once ----------------------------
    target = receiver.url(f"/hook/{tag}")
    Select(_css(d, "#channel-kind")).select_by_value("webhook")
    _fill(d, "channel-target", target)
    _fill(d, "channel-name", f"receiver {tag}")
    _css(d, "#channel-form button[type=submit]").click()
    secret = _wait(d, lambda d: _text(d, "#channel-secret"), what="the channel's secret")
    receiver.secret = secret  # the receiver checks signatures with the secret the page showed
    assert target in _css(d, "#channels-table").text
    assert secret not in json.dumps(api.get("/v1/alerts/channels").json())  # never again
    _accessible(d, "alerts")

    # -- send a test alert: delivered, signed, once -------------------------------------------
    _css(d, f".test-rule[data-rule='{rule_id}']").click()
    _wait(d, lambda d: "Test alert sent to 1 channel(s)" in _text(d, "#alerts-status"),
          what="the test alert's answer")
    _settled(d)
    deadline = time.monotonic() + 60  # the delivery worker polls every second when idle
    while not receiver.requests and time.monotonic() < deadline:
        time.sleep(0.2)
    [request] = receiver.requests
    assert request.path == f"/hook/{tag}" and request.signature == "ok", request
    body = json.loads(request.body)
    assert (body["type"], body["is_test"], body["rule_id"]) == ("alert.test", True, rule_id)
    assert body["brand"] == {"id": brand_id, "name": name}
    alert_id = body["alert_id"]
    while time.monotonic() < deadline:  # the outcome is committed just after the receiver's 200
        detail = api.get(f"/v1/alerts/{alert_id}").json()
        if detail["deliveries"][0]["status"] == "delivered":
            break
        time.sleep(0.2)
    assert [(x["status"], x["attempts"]) for x in detail["deliveries"]] == [("delivered", 1)]
    assert str(detail["deliveries"][0]["delivery_id"]) == request.delivery_id

    # -- the delivery log on the page ----------------------------------------------------------
    alert_row = _row(d, "alerts-table", brand_id)
    assert "test" in alert_row.text
    alert_row.find_element(By.CSS_SELECTOR, f"[data-alert='{alert_id}']").click()
    _wait(d, lambda d: _text(d, "#delivery-log"), what="the delivery log")
    assert _css(d, "#alert-detail h3").text == f"Test alert {alert_id}"
    [log_row] = d.find_elements(By.CSS_SELECTOR, "#delivery-log tbody tr")
    cells = [c.text for c in log_row.find_elements(By.CSS_SELECTOR, "td")]
    assert cells[:4] == ["signed webhook", "delivered", "1", ""], cells
    assert cells[4]  # when it was delivered
    _accessible(d, "alerts with a delivery log")

    # -- mute the rule ---------------------------------------------------------------------------
    _css(d, f".mute-rule[data-rule='{rule_id}']").click()
    _wait(d, lambda d: _text(d, f".mute-rule[data-rule='{rule_id}']") == "Unmute",
          what="the rule muted")
    _settled(d)
    assert "muted" in _row(d, "rules-table", name).text
    assert api.get(f"/v1/alerts/rules/{rule_id}").json()["muted"] is True
    assert len(receiver.requests) == 1  # nothing else was sent


def _enum(schemas: dict, schema: str, prop: str) -> list[str]:
    """The enum of an OpenAPI property (inline, a $ref, or an optional's anyOf)."""
    spec = schemas[schema]["properties"][prop]
    for option in spec.get("anyOf", [spec]):
        if "$ref" in option:
            option = schemas[option["$ref"].rsplit("/", 1)[-1]]
        if "enum" in option:
            return list(option["enum"])
    raise AssertionError(f"{schema}.{prop} has no enum: {spec}")


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_the_rule_form_offers_the_weighted_visibility_and_the_collection_method_and_shows_a_refusal(
        browser, system, sign_in):
    d, gw = sign_in()
    _, key = system["keys"]["ws-a"]
    api = httpx.Client(base_url=gw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    tag = uuid.uuid4().hex[:6]
    brand_id, name = f"alerts-form-{tag}", f"Corvane {tag}"
    assert api.post("/v1/brands", json={"brand_id": brand_id, "name": name}).status_code == 201
    _css(d, "header nav a[href='/alerts']").click()
    _wait(d, lambda d: d.current_url == f"{gw}/alerts", what="the alerts page")
    _settled(d)

    # The metric select offers the position-weighted visibility; the "Collected by" select
    # offers every collection method the API accepts (the OpenAPI's enum), and "any".
    metric = Select(_css(d, "#rule-metric"))
    labels = {o.get_attribute("value"): o.text for o in metric.options}
    assert labels["position_weighted_visibility"].startswith("position-weighted visibility")
    schemas = api.get("/openapi.json").json()["components"]["schemas"]
    methods = [o.get_attribute("value") for o in Select(_css(d, "#rule-method")).options]
    assert methods == ["", *_enum(schemas, "AlertSegment", "collection_method")]
    assert "api_with_search" in methods

    # A rule on the weighted visibility of the answers collected with web search.
    row = _add_rule(d, brand_id, name, "position_weighted_visibility", method="api_with_search")
    assert "position-weighted visibility" in row.text and "collected by api_with_search" in row.text
    [stored] = [r for r in api.get("/v1/alerts/rules").json()["items"]
                if r["brand_id"] == brand_id]
    given = {k: v for k, v in stored["segment"].items() if v is not None}  # the API lists all
    assert (stored["metric"], given) == (
        "position_weighted_visibility", {"collection_method": "api_with_search"})

    # A collection method the API does not know (a stale page, a hand-edited form): refused,
    # and the page shows the API's own reason, not a generic failure.
    body = {"brand_id": brand_id, "metric": "position_weighted_visibility",
            "segment": {"collection_method": "fax"}}
    refused = api.post("/v1/alerts/rules", json=body,
                       headers={"Idempotency-Key": uuid.uuid4().hex})
    assert refused.status_code == 422, refused.text
    reason = refused.json()["error"]["reason"]
    assert "collection_method" in reason, reason
    Select(_css(d, "#rule-brand")).select_by_value(brand_id)
    Select(_css(d, "#rule-metric")).select_by_value("position_weighted_visibility")
    d.execute_script(
        "const s = document.getElementById('rule-method');"
        "s.add(new Option('fax by hand', 'fax')); s.value = 'fax';")
    _css(d, "#rule-form button[type=submit]").click()
    shown = _wait(d, lambda d: _text(d, "#rule-result"), what="the refusal on the page")
    assert "HTTP 422" in shown and reason in shown, shown
    assert _css(d, "#rule-result [role=alert]")  # announced to screen readers as an error
    listed = api.get("/v1/alerts/rules").json()["items"]
    assert [r["segment"]["collection_method"] for r in listed if r["brand_id"] == brand_id] == [
        "api_with_search"]  # nothing stored for the refused one


@pytest.mark.timeout(600)
def test_the_demo_step_delivers_one_signed_test_alert_to_its_receiver(system, demo_alert_port):
    """scripts/demo.py's step 6 (what `scripts/up.sh` shows) against the same real services:
    its rule, its channel to its own receiver on 127.0.0.1, one test alert delivered with a
    valid signature; run twice, as a second `scripts/up.sh` does (the rule is kept, the channel
    replaced)."""
    demo = _load("attesta_demo_script", ROOT / "scripts" / "demo.py")
    _, key = system["keys"]["ws-b"]
    api = httpx.Client(base_url=system["url"], timeout=30,
                       headers={"Authorization": f"Bearer {key}"})
    assert api.post("/v1/brands", json={"brand_id": "lumora", "name": "Lumora",
                                        "domains": ["lumora.example"]}).status_code == 201
    # A channel an earlier version of the demo made (another name, another secret) is replaced
    # too: otherwise the receiver would get the test alert twice, once badly signed.
    old = api.post("/v1/alerts/channels", json={
        "kind": "webhook", "target": f"http://127.0.0.1:{demo_alert_port}/attesta-alerts",
        "name": demo.ALERT_CHANNEL_OLD_NAMES[0]})
    assert old.status_code == 201, old.text
    for _ in range(2):
        detail = demo.alerts_demo(api, demo_alert_port)
        assert detail is not None and detail["test"] is True
        [delivery] = detail["deliveries"]
        assert (delivery["kind"], delivery["status"], delivery["attempts"]) == (
            "webhook", "delivered", 1)
    rules = api.get("/v1/alerts/rules").json()["items"]
    assert [r["name"] for r in rules] == [demo.ALERT_RULE_NAME]
    channels = api.get("/v1/alerts/channels").json()["items"]
    assert [c["name"] for c in channels] == [demo.ALERT_CHANNEL_NAME]
