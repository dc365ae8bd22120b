"""The web app in headless Chromium against the real gateway and services: an auditor signs in
with a key, creates a brand (and sees the API's validation error next to the field), refreshes
and adds ground truth, records runs, sees their classes and history, opens the evidence in
/verify, reads the metrics charts with their interval bands, exports CSV, signs out. Every
page is checked with axe-core (no serious/critical violations) and screenshotted; the key never
appears in a URL, the page's HTML, or any request other than the API's own."""

from __future__ import annotations

import csv
import io
import json
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "screenshots"
AXE = Path(__file__).resolve().parent / "vendor" / "axe-core-4.14.1" / "axe.min.js"


def axe_violations(driver) -> list[dict]:
    """axe-core's serious and critical violations on the current page (WCAG 2.x A/AA rules)."""
    driver.execute_script(AXE.read_text())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a',"
        " 'wcag21aa', 'best-practice']}}).then(r => done(JSON.stringify(r.violations)),"
        " e => done(JSON.stringify([{id: 'axe-error', impact: 'critical', help: String(e)}])));")
    return [v for v in json.loads(result) if v.get("impact") in ("serious", "critical")]


def requests_seen(driver) -> list[dict]:
    """Every request the page sent since the last call (Chrome's performance log)."""
    out = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") in ("Network.requestWillBeSent", "Network.requestWillBeSentExtraInfo"):
            out.append(msg["params"])
    return out


def _wait(driver, cond, timeout=30, what="condition"):
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: cond(d), message=f"timed out waiting for {what}")


def _settled(driver):
    """The router finished drawing the page (main[aria-busy=false])."""
    _wait(driver, lambda d: d.find_element(By.ID, "app").get_attribute("aria-busy") == "false",
          what="the page to render")


def _css(driver, selector):
    return driver.find_element(By.CSS_SELECTOR, selector)


def _shot(driver, name, tmp_path):
    """A screenshot of the page; into docs/screenshots with ATTESTA_UPDATE_SCREENSHOTS=1."""
    target = SHOTS if os.environ.get("ATTESTA_UPDATE_SCREENSHOTS") == "1" else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return Math.min(document.body.scrollHeight, 2400)")
    driver.set_window_size(1280, max(800, height + 40))
    assert driver.save_screenshot(str(target / f"{name}.png"))
    driver.set_window_size(1280, 1000)


def _accessible(driver, page):
    bad = axe_violations(driver)
    assert not bad, f"{page}: " + "; ".join(
        f"{v['id']} ({v['impact']}): {v.get('help')} x{len(v.get('nodes', []))}" for v in bad)


def _fill(driver, element_id, text):
    box = driver.find_element(By.ID, element_id)
    box.clear()
    box.send_keys(text)


def _key_leaks(driver, key, gateway):
    """Requests carrying the key that are not the gateway's own authenticated API calls."""
    leaks = []
    for params in requests_seen(driver):
        blob = json.dumps(params)
        if key not in blob:
            continue
        request = params.get("request") or {}
        url = request.get("url") or ""
        headers = params.get("headers") or request.get("headers") or {}
        if not url:  # ExtraInfo events carry the headers only; pair them by the key's place
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if auth == f"Bearer {key}" and key not in blob.replace(auth, ""):
                continue
            leaks.append(blob[:300])
            continue
        ok_url = url.startswith(f"{gateway}/v1/") and not url.startswith(f"{gateway}/v1/public/")
        in_url_or_body = key in url or key in (request.get("postData") or "")
        if not ok_url or in_url_or_body:
            leaks.append(f"{request.get('method')} {url}")
    return leaks


@pytest.fixture
def engine(system):
    """A local OpenAI-compatible engine (the collector's fake) the schedule's runs ask, on the
    one local port the system's collector allows."""
    from attesta_collector.fake_engine import FakeEngine
    from attesta_kb import load_brands

    kb = load_brands()[1]
    fake = FakeEngine(brands=[{"name": kb["name"], "domain": kb["domains"][0],
                               "product": "medicines", "fact": "based in the test"}],
                      port=system["engine_port"]).start()
    yield fake
    fake.stop()


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_the_auditor_flow_in_a_real_browser(browser, system, sign_in, engine, tmp_path):
    from attesta_kb import load_brands
    from attesta_kb_tools.sites import local_url

    d, gw = browser, system["url"]
    key_id, key = system["keys"]["ws-a"]
    kb = load_brands()[1]
    brand_id = f"{kb['id']}-ui-{uuid.uuid4().hex[:6]}"
    sources = [local_url(u, system["sites"]) for u in kb["sources"]]

    # -- open pages without a key: chat and /verify; an auditor page sends you to sign-in ----
    d.get(f"{gw}/")
    _settled(d)
    assert _css(d, "h1").text == "Ask the knowledge base"
    _accessible(d, "chat")
    _shot(d, "chat", tmp_path)
    d.get(f"{gw}/verify")
    _settled(d)
    assert _css(d, "h1").text == "Verify evidence"
    _accessible(d, "verify")
    d.get(f"{gw}/brands")
    _settled(d)
    _wait(d, lambda d: d.current_url == f"{gw}/signin", what="redirect to sign-in")
    assert "Sign in with an API key" in _css(d, "#app").text
    # A wrong key: back to sign-in with the gateway's reason.
    _fill(d, "api-key", "atk_0000000000000000_" + "A" * 43)
    _css(d, "#signin-form button[type=submit]").click()
    _wait(d, lambda d: "refused the key" in _css(d, "#app").text, what="the 401 reason")
    assert "unauthorized" in _css(d, "#app").text
    _accessible(d, "sign-in")
    _shot(d, "signin", tmp_path)

    # -- sign in ------------------------------------------------------------------------------
    sign_in(key)
    assert d.execute_script("return window.sessionStorage.getItem('attesta.apiKey')") == key
    assert d.execute_script("return window.localStorage.length") == 0
    assert d.get_cookies() == []

    # -- create a brand: the API's validation error sits next to its field ---------------------
    _fill(d, "brand-brand-id", brand_id)
    _fill(d, "brand-name", kb["name"])
    _fill(d, "brand-aliases", "\n".join(kb["aliases"]))
    _fill(d, "brand-domains", "not a domain")
    _fill(d, "brand-sources", "\n".join(sources))
    _css(d, "#brand-form button[type=submit]").click()
    error = _wait(d, lambda d: _css(d, "#brand-domains-error").is_displayed()
                  and _css(d, "#brand-domains-error"), what="the domains error")
    assert "domains" in error.text and "422" in error.text
    assert _css(d, "#brand-domains").get_attribute("aria-invalid") == "true"
    _accessible(d, "brands with a validation error")
    _shot(d, "brands", tmp_path)
    _fill(d, "brand-domains", "\n".join(kb["domains"]))
    _css(d, "#brand-form button[type=submit]").click()
    _wait(d, lambda d: d.current_url == f"{gw}/brands/{brand_id}/ground-truth",
          what="the ground-truth page")
    _settled(d)

    # -- ground truth: refresh from the brand's sites, then add a manual fact ------------------
    _css(d, "#refresh").click()
    _wait(d, lambda d: "Changed:" in _css(d, "#refresh-result").text, timeout=60,
          what="the refresh result")
    assert "fetched" in _css(d, "#refresh-result").text
    _css(d, "#reload-facts").click()
    _settled(d)
    facts_rows = d.find_elements(By.CSS_SELECTOR, "#facts-table tbody tr")
    assert facts_rows, "no facts after the refresh"
    assert all(len(r.find_element(By.CSS_SELECTOR, "td:nth-child(6) code").text) == 64
               for r in facts_rows)
    for link in d.find_elements(By.CSS_SELECTOR, "#facts-table a"):
        assert link.get_attribute("href").startswith("http://127.0.0.1:")
        assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    gt_hash = _css(d, "#gt-hash").text
    manual = f"{kb['name']} publishes its audited results every quarter."
    _fill(d, "fact-text", manual)
    _fill(d, "fact-url", sources[0])
    _fill(d, "fact-attribution", "browser test")
    _css(d, "#fact-form button[type=submit]").click()
    _wait(d, lambda d: manual in _css(d, "#app").text, what="the manual fact")
    _settled(d)
    assert _css(d, "#gt-hash").text != gt_hash  # a new fact, a new ground-truth hash
    # -- edit the brand (drop its last source), refresh: that source's facts are superseded ---
    d.get(f"{gw}/brands/{brand_id}/edit")
    _settled(d)
    assert _css(d, "#brand-name").get_attribute("value") == kb["name"]
    _fill(d, "brand-sources", "\n".join(sources[:-1]))
    _css(d, "#brand-form button[type=submit]").click()
    _wait(d, lambda d: d.current_url == f"{gw}/brands/{brand_id}", what="the overview after editing")
    _settled(d)
    d.get(f"{gw}/brands/{brand_id}/ground-truth")
    _settled(d)
    _css(d, "#refresh").click()
    _wait(d, lambda d: "superseded." in _css(d, "#refresh-result").text, timeout=60,
          what="the refresh that supersedes")
    assert " 0 superseded" not in _css(d, "#refresh-result").text
    _css(d, "#superseded-toggle").click()
    _wait(d, lambda d: "superseded=1" in d.current_url, what="the superseded facts' URL")
    _settled(d)
    old_rows = d.find_elements(By.CSS_SELECTOR, "#superseded-table tbody tr")
    assert old_rows, "no superseded facts listed"
    for row in old_rows:
        assert len(row.find_element(By.CSS_SELECTOR, "td:nth-child(6) code").text) == 64
        assert "(superseded)" in row.find_element(By.CSS_SELECTOR, "td:nth-child(7)").text
    assert manual in _css(d, "#facts-table").text  # a manual fact is never superseded
    _accessible(d, "ground truth with superseded facts")
    _shot(d, "ground-truth", tmp_path)
    d.back()
    _settled(d)
    assert not d.find_elements(By.ID, "superseded-table")

    # -- record runs from the app: a linked answer (STRONG) and a bare mention ----------------
    d.get(f"{gw}/runs")
    _settled(d)
    Select(_css(d, "#run-brand")).select_by_value(brand_id)
    linked = f"See https://{kb['domains'][0]}/about for {kb['name']} ({uuid.uuid4().hex[:8]})."
    _fill(d, "run-prompt", f"Who is {kb['name']}?")
    _fill(d, "run-answer", linked)
    _css(d, "#run-form button[type=submit]").click()
    opened = _wait(d, lambda d: d.find_elements(By.PARTIAL_LINK_TEXT, "Open run"),
                   what="the recorded run")[0]
    run_href = opened.get_attribute("href")
    opened.click()
    _wait(d, lambda d: d.current_url == run_href, what="the run page")
    _settled(d)
    # The classifier consumes runs.recorded.v1 and decides. Its test group starts at the end of
    # the SHARED topic, so other work's runs published meanwhile come first: allow minutes.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if "STRONG" in _css(d, "#run-classes").text:
            break
        time.sleep(0.5)
        d.refresh()
        _settled(d)
    classes = _css(d, "#run-classes").text
    assert "STRONG" in classes and "deterministic" in classes, classes
    marks = [m.text for m in d.find_elements(By.CSS_SELECTOR, "#run-answer-text mark")]
    assert f"https://{kb['domains'][0]}/about" in marks and kb["name"] in marks, marks
    history = _css(d, "#history-table").text
    assert "STRONG" in history and "none used" in history, history  # a link decides, no facts
    sha = _css(d, "#evidence-sha").text
    for _ in range(60):  # the evidence service records the answer and signs a tree head
        if "leaf" in _css(d, "#app dl").text:
            break
        time.sleep(1)
        d.refresh()
        _settled(d)
    assert "in the signed log at leaf" in _css(d, "#app dl").text
    # "as of" a time before the run: nothing classified yet, and the URL keeps the choice.
    before = (datetime.now(UTC) - timedelta(days=3650)).strftime("%Y-%m-%dT%H:%M")
    d.execute_script("document.getElementById('as-of').value = arguments[0]", before)
    _css(d, "#as-of-form button").click()
    _wait(d, lambda d: "as_of=" in d.current_url, what="the as-of URL")
    _settled(d)
    assert "No classification existed yet" in _css(d, "#app").text
    d.back()
    _settled(d)
    _wait(d, lambda d: d.current_url == run_href, what="back to the run")
    _accessible(d, "run")
    _shot(d, "run", tmp_path)

    # -- the evidence in /verify ------------------------------------------------------------
    _css(d, "#verify-link").click()
    _wait(d, lambda d: "Recorded." in _css(d, "#app").text, what="the evidence lookup")
    assert sha in _css(d, "#app").text and "Leaf index" in _css(d, "#app").text
    _accessible(d, "verify with a result")
    _shot(d, "verify", tmp_path)
    d.back()
    _settled(d)
    assert d.current_url == run_href

    # -- more runs over 30 days (through the API) so the charts have intervals to draw --------
    c = httpx.Client(base_url=gw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    now = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    run_ids = []
    for i in range(40):
        day = now - timedelta(days=i % 10)
        answer = (f"https://{kb['domains'][0]} is where {kb['name']} is described." if i % 3 == 0
                  else f"{kb['name']} is a company. ({i})" if i % 3 == 1
                  else f"Nothing relevant here ({i}).")
        r = c.post("/v1/runs", headers={"Idempotency-Key": str(uuid.uuid4())}, json={
            "engine": "chatgpt" if i % 2 else "perplexity", "model": "m", "prompt": f"p{i}",
            "answer": answer, "brand_ids": [brand_id], "answered_at": day.isoformat()})
        assert r.status_code == 202, r.text
        run_ids.append(r.json()["run_id"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = c.get("/v1/metrics", params={"period": "day", "brand_id": brand_id}).json()["rows"]
        # every run recorded and decided, or parked for the judge (which may abstain)
        if sum(r["n"] + r["refused"] + r["pending"] for r in rows) >= 41:
            break
        time.sleep(1)

    # -- the brand overview: six figures, each with its band; n on hover ----------------------
    d.get(f"{gw}/brands/{brand_id}")
    _settled(d)
    Select(_css(d, "#period")).select_by_value("day")
    _css(d, "#overview-controls button[type=submit]").click()
    _wait(d, lambda d: "period=day" in d.current_url, what="the period in the URL")
    _settled(d)
    charts = d.find_elements(By.CSS_SELECTOR, "figure.chart")
    assert [c_.get_attribute("data-figure") for c_ in charts] == [
        "Citation rate", "Share of voice", "Confabulation rate", "Echo rate", "Absent rate",
        "Attesta score",
        # issue #25 item 3: where the answers name the brand, from the API's position figures
        "Named first (share of answers)", "Position-weighted visibility"]
    # The band: pixels of its fill colour are on the canvas (rgba(31,95,191,0.15) over white).
    band_pixels = d.execute_script("""
        const cv = document.querySelector('figure.chart canvas');
        const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
        let n = 0;
        for (let i = 0; i < px.length; i += 4) {
          const [r, g, b, a] = [px[i], px[i+1], px[i+2], px[i+3]];
          if (a > 0 && a < 90 && b > r + 20) n++;  // translucent blue = the band
        }
        return n;""")
    assert band_pixels > 500, f"no interval band drawn ({band_pixels} band pixels)"
    plot = _css(d, "figure.chart .u-over")
    ActionChains(d).move_to_element(plot).perform()
    readout = _wait(d, lambda d: "n = " in _css(d, "figure.chart .readout").text
                    and _css(d, "figure.chart .readout").text, what="n on hover")
    assert "95 % interval" in readout
    assert "all engines (" in _css(d, "#overview-summary").text
    engines = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#engine option")]
    assert {"all", "chatgpt", "perplexity"} <= set(engines), engines
    Select(_css(d, "#engine")).select_by_value("perplexity")
    _css(d, "#overview-controls button[type=submit]").click()
    _wait(d, lambda d: "engine=perplexity" in d.current_url, what="the engine in the URL")
    _settled(d)
    assert "engine perplexity" in _css(d, "#overview-summary").text
    d.back()
    _settled(d)
    assert "all engines" in _css(d, "#overview-summary").text
    # The date range: the last 12 days (runs of other tests on the shared topics, with other
    # dates, stay out of the picture).
    for box, day in (("from", now - timedelta(days=11)), ("to", now)):
        d.execute_script("document.getElementById(arguments[0]).value = arguments[1]", box,
                         day.strftime("%Y-%m-%d"))
    _css(d, "#overview-controls button[type=submit]").click()
    _wait(d, lambda d: "from=" in d.current_url and "to=" in d.current_url, what="the range")
    _settled(d)
    assert "10 day(s)" in _css(d, "#overview-summary").text or "11 day(s)" in _css(
        d, "#overview-summary").text, _css(d, "#overview-summary").text
    _accessible(d, "overview")
    _shot(d, "overview", tmp_path)

    # -- runs table with filters, pagination and export -------------------------------------
    d.get(f"{gw}/runs?brand_id={brand_id}&engine=perplexity")
    _settled(d)
    rows = d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr")
    assert rows and all("perplexity" in r.text for r in rows)
    ids = lambda d: [r.text for r in d.find_elements(By.CSS_SELECTOR, "#runs-table tbody td:first-child")]  # noqa: E731
    first_page = ids(d)
    _css(d, "#next-page").click()  # 20 perplexity runs, 15 a page
    _wait(d, lambda d: "cursor=" in d.current_url, what="the next page")
    _settled(d)
    second = ids(d)
    assert len(first_page) == 15 and len(second) == 5 and not set(first_page) & set(second)
    d.back()
    _settled(d)
    assert ids(d) == first_page
    _accessible(d, "runs")
    _shot(d, "runs", tmp_path)
    # -- export the filtered runs as CSV (streamed by the classifier, through the gateway) ----
    _css(d, "[data-export=runs-csv]").click()
    _wait(d, lambda d: "Downloaded" in _css(d, ".exports").text or "failed" in
          _css(d, ".exports").text, what="the export")
    assert "Downloaded" in _css(d, ".exports").text, _css(d, ".exports").text
    target = d.downloads / "attesta-runs.csv"
    _wait(d, lambda d: target.is_file() and target.stat().st_size > 0, what="the CSV file")
    exported = list(csv.DictReader(io.StringIO(target.read_text())))
    expected = {r["run_id"] for r in c.get("/v1/runs", params={
        "brand_id": brand_id, "engine": "perplexity", "limit": 200}).json()["items"]}
    assert len(expected) == 20 and {r["run_id"] for r in exported} == expected
    assert all(r["engine"] == "perplexity" and r["brand_id"] == brand_id for r in exported)
    assert {r["citation_class"] for r in exported} <= {"STRONG", "ECHO", "ABSENT", "DESCRIPTIVE",
                                                       "CONFABULATED", ""}

    # The other export forms, straight from the API: JSON Lines of the same runs, and the
    # metrics as CSV (one row per brand, engine, day) and as the /v1/metrics JSON itself.
    lines = c.get("/v1/exports/runs", params={"format": "jsonl", "brand_id": brand_id,
                                              "engine": "perplexity"})
    assert lines.headers["content-type"].startswith("application/x-ndjson")
    assert {json.loads(x)["run_id"] for x in lines.text.splitlines()} == expected
    query = {"period": "day", "brand_id": brand_id}
    metrics = c.get("/v1/metrics", params=query).json()
    as_json = c.get("/v1/exports/metrics", params={**query, "format": "json"})
    assert as_json.json()["rows"] == metrics["rows"]
    as_csv = list(csv.DictReader(io.StringIO(c.get("/v1/exports/metrics", params={
        **query, "format": "csv"}).text)))
    assert [(r["engine"], int(r["n"])) for r in as_csv] == [
        (r["engine"], r["n"]) for r in metrics["rows"]]
    assert c.get("/v1/exports/runs", params={"format": "xml"}).status_code == 422
    # Filter by who decided: the links and bare mentions are decided by the heuristic.
    d.get(f"{gw}/runs?brand_id={brand_id}&engine=perplexity")
    _settled(d)
    Select(_css(d, "#f-decided-by")).select_by_value("deterministic")
    _css(d, "#runs-filters button[type=submit]").click()
    _wait(d, lambda d: "decided_by=deterministic" in d.current_url, what="the decided-by filter")
    _settled(d)
    decided = c.get("/v1/runs", params={"brand_id": brand_id, "engine": "perplexity",
                                        "decided_by": "deterministic", "limit": 200}).json()["items"]
    assert decided and all(b["decided_by"] == "deterministic" for r in decided for b in r["brands"])
    shown = d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr")
    assert len(shown) == min(15, len(decided)) and all("(deterministic)" in r.text for r in shown)
    by_judge = c.get("/v1/exports/runs", params={"format": "jsonl", "brand_id": brand_id,
                                                 "decided_by": "judge"}).text.splitlines()
    assert all(b["decided_by"] == "judge" for x in by_judge for b in json.loads(x)["brands"])

    # -- collection: prompts (add; import a CSV with its per-row report), engines, schedules ---
    d.get(f"{gw}/collect/prompts")
    _settled(d)
    prompt = f"What does {kb['name']} make? ({uuid.uuid4().hex[:6]})"
    _fill(d, "prompt-form-text", prompt)
    _css(d, "#prompt-form button[type=submit]").click()
    _wait(d, lambda d: prompt in _css(d, "#app").text and _settled(d) is None, what="the prompt")
    upload = tmp_path / "prompts.csv"
    upload.write_text(f"text,prompt_set,topic\nIs {kb['name']} safe? {uuid.uuid4().hex[:6]},"
                      f"ui,safety\nBest biotech firms? {uuid.uuid4().hex[:6]},ui,market\n"
                      "too,many,fields,here\n")
    _css(d, "#import-file").send_keys(str(upload))
    _css(d, "#import-form button[type=submit]").click()
    report = _wait(d, lambda d: "accepted" in _css(d, "#import-report").text
                   and _css(d, "#import-report").text, what="the import report")
    assert "2 accepted, 0 unchanged, 1 refused" in report, report
    assert "more fields than the header" in report
    _accessible(d, "prompts")
    _shot(d, "prompts", tmp_path)
    d.get(f"{gw}/collect/engines")
    _settled(d)
    # The engine's key: a workspace secret, typed once into a password field, never shown again.
    engine_key = f"sk-ui-{uuid.uuid4().hex}"
    assert _css(d, "#secret-form-value").get_attribute("type") == "password"
    _fill(d, "secret-form-name", "ui engine key")
    _fill(d, "secret-form-value", engine_key)
    _css(d, "#secret-form button[type=submit]").click()
    _wait(d, lambda d: d.find_elements(By.ID, "secrets-table")
          and "ui engine key" in _css(d, "#secrets-table").text, what="the secret")
    assert engine_key not in d.page_source
    Select(_css(d, "#engine-form-api-key-secret-id")).select_by_visible_text("ui engine key")
    _fill(d, "engine-form-name", "Local test engine")
    _css(d, "#engine-form button[type=submit]").click()  # an openai engine needs its endpoint
    _wait(d, lambda d: "base_url" in _css(d, "#engine-form").text, what="the engine's 422")
    _fill(d, "engine-form-base-url", engine.base_url)  # the local OpenAI-compatible fake
    _fill(d, "engine-form-model", "test-model")
    _css(d, "#engine-form button[type=submit]").click()
    _wait(d, lambda d: d.find_elements(By.ID, "engines-table")
          and "Local test engine" in _css(d, "#engines-table").text, what="the engine")
    assert "secret ui engine key" in _css(d, "#engines-table").text
    assert engine_key not in d.page_source
    _accessible(d, "engines")
    _shot(d, "engines", tmp_path)
    d.get(f"{gw}/collect/schedules")
    _settled(d)
    _fill(d, "schedule-form-name", "daily ui")
    Select(_css(d, "#schedule-form-engine-ids")).select_by_index(0)
    _fill(d, "schedule-form-prompt-sets", "ui")
    _css(d, "#schedule-form button[type=submit]").click()
    _wait(d, lambda d: d.find_elements(By.ID, "schedules-table")
          and "daily ui" in _css(d, "#schedules-table").text, what="the schedule")
    _css(d, "#schedules-table [data-run-now]").click()
    _wait(d, lambda d: "Planned" in _css(d, "#run-now-result").text
          or "failed" in _css(d, "#run-now-result").text, what="run now")
    assert "Planned" in _css(d, "#run-now-result").text, _css(d, "#run-now-result").text
    _accessible(d, "schedules")
    _shot(d, "schedules", tmp_path)

    # -- collected runs carry their prompt's tags: the runs' tag filter, the overview's
    # branded/unbranded and tag segments and its sources view ----------------------------------
    # The classifier reads the SHARED runs topic: behind other work's runs on a loaded machine.
    deadline, tagged = time.monotonic() + 600, []
    while time.monotonic() < deadline and not tagged:
        # recorded for the brand: decided, or parked for the judge (the fake's answers vary)
        tagged = c.get("/v1/runs", params={"tag": "safety", "brand_id": brand_id}).json()["items"]
        time.sleep(1)
    assert tagged, "no collected run with its prompt's tag was recorded"
    d.get(f"{gw}/runs")
    _settled(d)
    _fill(d, "f-tag", "safety")
    _css(d, "#runs-filters button[type=submit]").click()
    _wait(d, lambda d: "tag=safety" in d.current_url, what="the tag filter")
    _settled(d)
    all_safety = c.get("/v1/runs", params={"tag": "safety", "limit": 200}).json()["items"]
    shown = d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr")
    assert len(shown) == min(15, len(all_safety))
    assert {r.text for r in d.find_elements(By.CSS_SELECTOR, "#runs-table tbody td:first-child")} == {
        r["run_id"][:13] for r in all_safety[:15]}
    d.get(f"{gw}/brands/{brand_id}?period=day")
    _settled(d)
    topics = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#segment-topic option")]
    assert {"", "safety", "market"} <= set(topics), topics
    branded = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#segment-branded option")]
    assert {"", "true", "false"} <= set(branded), branded  # "Who is …?" names it, "p7" does not
    Select(_css(d, "#segment-topic")).select_by_value("safety")
    Select(_css(d, "#segment-branded")).select_by_value("true")
    _css(d, "#overview-controls button[type=submit]").click()
    _wait(d, lambda d: "topic=safety" in d.current_url and "branded=true" in d.current_url,
          what="the segment in the URL")
    _settled(d)
    summary = _css(d, "#overview-summary").text
    assert "topic safety" in summary and "branded prompts" in summary, summary
    assert len(d.find_elements(By.CSS_SELECTOR, "figure.chart")) == 8  # six figures and two of position
    share_rows = d.find_elements(By.CSS_SELECTOR, "#source-share-table tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "td").text for r in share_rows] == [
        "the brand's own domains", "a competitor's domains", "anyone else's (third party)"]
    assert all("95 % CI" in r.text or "n = 0" in r.text for r in share_rows)
    _accessible(d, "overview with a segment and its sources")
    _shot(d, "overview-segment", tmp_path)
    d.back()
    _settled(d)
    assert "topic safety" not in _css(d, "#overview-summary").text

    # -- methodology: the page renders docs/metrics.md --------------------------------------
    d.get(f"{gw}/methodology")
    _settled(d)
    text = _css(d, "#app").text
    assert "Wilson score interval" in text and "share of voice" in text.lower()
    assert "perplexity" in text  # the engines in use
    _accessible(d, "methodology")
    _shot(d, "methodology", tmp_path)

    # -- the key: never in a URL, the HTML, or a request other than the API's own ------------
    assert key not in d.page_source
    assert not _key_leaks(d, key, gw)

    # -- sign out ---------------------------------------------------------------------------
    d.get(f"{gw}/runs")
    _settled(d)
    _css(d, "#signout").click()
    _wait(d, lambda d: d.current_url == f"{gw}/signin", what="sign-in after signing out")
    assert d.execute_script("return window.sessionStorage.getItem('attesta.apiKey')") is None
    d.get(f"{gw}/brands")
    _wait(d, lambda d: d.current_url == f"{gw}/signin", what="a signed-out redirect")
    assert key not in d.page_source
