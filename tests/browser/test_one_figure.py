"""One figure, three places (issues #27 item 7 and #25 item 2): the citation rate the overview
shows for a segment (one engine, unbranded prompts) is the figure ``GET /v1/metrics`` returns
for the same parameters and the row the overview's export button downloads — the page computes
nothing of its own — and a period with too little data is marked "underpowered" on the
overview instead of drawn as a precise figure. Headless Chromium against the real gateway,
classifier and evidence service (the ``system`` fixture of tests/test_gateway_services_e2e.py).
"""

from __future__ import annotations

import csv
import io
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.integration


def _wait(driver, cond, timeout=30, what="condition"):
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: cond(d), message=f"timed out waiting for {what}")


def _settled(driver):
    _wait(driver, lambda d: d.find_element(By.ID, "app").get_attribute("aria-busy") == "false",
          what="the page to render")


def _css(driver, selector):
    return driver.find_element(By.CSS_SELECTOR, selector)


def _pct(v: float) -> str:
    return f"{v * 100:.1f} %"


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_one_figure_on_screen_in_the_api_and_in_the_export(browser, system, sign_in, tmp_path):
    d, gw = browser, system["url"]
    _, key = system["keys"]["ws-a"]
    tag = uuid.uuid4().hex[:6]
    brand_id, name, domain = f"onefig-{tag}", f"Quillon {tag}", f"quillon-{tag}.example"
    c = httpx.Client(base_url=gw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    assert c.post("/v1/brands", json={"brand_id": brand_id, "name": name,
                                      "domains": [domain]}).status_code == 201
    r = c.post(f"/v1/brands/{brand_id}/ground-truth/facts", json={
        "text": f"{name} makes quills.", "source_url": f"https://{domain}/about",
        "attribution": "one-figure browser test"})
    assert r.status_code in (200, 201), r.text

    # Yesterday: 40 chatgpt answers to 8 unbranded prompts (powered: n >= 30, >= 5 prompts),
    # 11 of them citing the brand's site; plus answers the segment must leave out (another
    # engine, a branded prompt). Today: 4 chatgpt answers to 2 prompts (underpowered).
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    yesterday = today - timedelta(days=1)
    cited = f"See https://{domain}/quills for {name}."
    plan = [("chatgpt", f"quill question {i % 8} {tag}", cited if i < 11 else f"Nothing here ({i}).",
             yesterday) for i in range(40)]
    plan += [("perplexity", f"quill question {i} {tag}", cited, yesterday) for i in range(6)]
    plan += [("chatgpt", f"Is {name} any good?", cited, yesterday) for _ in range(5)]
    plan += [("chatgpt", f"quill question {i % 2} {tag}", cited if i == 0 else "Nothing at all.",
              today) for i in range(4)]
    for engine, prompt, answer, day in plan:
        r = c.post("/v1/runs", headers={"Idempotency-Key": str(uuid.uuid4())}, json={
            "engine": engine, "model": "m", "prompt": prompt, "answer": answer,
            "brand_ids": [brand_id], "answered_at": day.isoformat()})
        assert r.status_code == 202, r.text

    day = lambda t: t.strftime("%Y-%m-%d")  # noqa: E731 - a local shorthand
    segment = {"period": "day", "brand_id": brand_id, "group_by": "", "engine": "chatgpt",
               "branded": "false", "from": f"{day(yesterday)}T00:00:00Z",
               "to": f"{day(today + timedelta(days=1))}T00:00:00Z"}
    deadline = time.monotonic() + 600  # the classifier reads the shared runs topic
    while True:
        everything = c.get("/v1/metrics", params={k: v for k, v in segment.items()
                                                  if k not in ("engine", "branded")}).json()
        if sum(r["n"] for r in everything["rows"]) >= len(plan) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert sum(r["n"] for r in everything["rows"]) == len(plan), everything["rows"]
    api = c.get("/v1/metrics", params=segment).json()
    rows = api["rows"]
    assert [r["period_start"][:10] for r in rows] == [day(yesterday), day(today)]
    powered, weak = rows
    assert (powered["n"], powered["citation_rate"]["successes"]) == (40, 11)
    assert powered["underpowered"] is False and powered["citation_rate"]["underpowered"] is False
    assert weak["n"] == 4 and weak["citation_rate"]["underpowered"] is True
    # The segment is the server's, not a sum: all engines and prompts give another figure.
    assert everything["rows"][0]["citation_rate"]["n"] == 51

    # -- the overview with that segment on screen ---------------------------------------------
    sign_in(key)
    d.get(f"{gw}/brands/{brand_id}?period=day&engine=chatgpt&branded=false"
          f"&from={day(yesterday)}&to={day(today)}")
    _settled(d)
    assert "engine chatgpt" in _css(d, "#overview-summary").text
    assert "unbranded prompts" in _css(d, "#overview-summary").text
    # The latest period (today) is underpowered: labelled, its figure not shown bare.
    latest = {cells[0].text: cells[-1].text for cells in (
        r.find_elements(By.CSS_SELECTOR, "td")
        for r in d.find_elements(By.CSS_SELECTOR, "#latest-table tbody tr"))}
    assert latest["Citation rate"].startswith("underpowered (n = 4): "), latest
    # On the chart: the underpowered period is listed under the card and drawn apart.
    card = _css(d, 'figure.chart[data-figure="Citation rate"]')
    assert card.get_attribute("data-underpowered") == "1"
    marks = [li.text for li in card.find_elements(By.CSS_SELECTOR, "ul.underpowered li")]
    assert marks == [f"{day(today)}: underpowered (n = 4)"], marks
    assert "underpowered" in _css(d, "#underpowered-rule").text
    # Yesterday's figure on screen: the chart's readout when the pointer is on that period.
    over = card.find_element(By.CSS_SELECTOR, ".u-over")
    width = over.size["width"]
    shown = ""
    for dx in range(2, width - 2, 3):  # from the left edge of the plot to the right
        ActionChains(d).move_to_element_with_offset(over, dx - width // 2, 0).perform()
        shown = card.find_element(By.CSS_SELECTOR, ".readout").text
        if shown.startswith(day(yesterday)):
            break
    expected = powered["citation_rate"]
    assert shown == (f"{day(yesterday)}: {_pct(expected['value'])}, 95 % interval "
                     f"{_pct(expected['ci95_low'])}–{_pct(expected['ci95_high'])}, "
                     f"n = {expected['n']}"), shown
    # The prompt bootstrap is the server's too.
    boot = weak["citation_rate_by_prompt"]
    row = [k for k in latest if k.startswith("Citation rate, prompts as the unit")]
    assert row and f"bootstrap over {boot['prompts']} prompt(s)" in row[0], latest

    # -- the export button exports the segment on screen ---------------------------------------
    target = d.downloads / "attesta-metrics.csv"
    if target.exists():
        target.unlink()
    _css(d, "[data-export=metrics-csv]").click()
    _wait(d, lambda d: target.is_file() and target.stat().st_size > 0, what="the CSV file")
    exported = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [(r["period_start"][:10], int(r["n"])) for r in exported] == [
        (day(yesterday), 40), (day(today), 4)]
    first = exported[0]
    assert float(first["citation_rate_value"]) == expected["value"]
    assert (float(first["citation_rate_ci95_low"]), float(first["citation_rate_ci95_high"])) == (
        expected["ci95_low"], expected["ci95_high"])
    assert first["underpowered"] == "False" and exported[1]["underpowered"] == "True"
    assert exported[1]["citation_rate_underpowered"] == "True"
    assert d.save_screenshot(str(tmp_path / "one-figure.png"))
