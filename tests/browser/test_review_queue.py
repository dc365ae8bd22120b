"""The review queue in headless Chromium against the real gateway and services (issue #28): a
reviewer signed in with a named key sees on the brand's overview that a pair waits, works
through the queue (a pair the judge could not decide, decided with a note; then a judge label
drawn for a blind review, which shows nothing of the judge), sees the human label and its
history on the run page, and the judge-human agreement on the methodology page moves from
n = 0 to the new figure.

The classifier runs with the whole-answer LLM judge ("openai") pointed at a local fake model
this test scripts: an answer carrying NEEDS_PERSON gets HTTP 503 (the judge is unavailable, the
pair stays pending), any other a valid DESCRIPTIVE verdict; every judge label is drawn for a
blind review (ATTESTA_REVIEW_SAMPLE_SHARE=1). So which pair lands where does not depend on how
a judge reads meaning."""

from __future__ import annotations

import importlib.util
import json
import os
import time
import uuid
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By

pytestmark = pytest.mark.integration


def _webapp_helpers():
    """test_webapp.py's page helpers (axe, screenshots, waits), loaded by path: tests are
    imported with importlib, so a sibling test module is not importable by name."""
    spec = importlib.util.spec_from_file_location("attesta_browser_webapp",
                                                  Path(__file__).with_name("test_webapp.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_w = _webapp_helpers()
_accessible, _css, _fill, _key_leaks = _w._accessible, _w._css, _w._fill, _w._key_leaks
_settled, _shot, _wait = _w._settled, _w._shot, _w._wait
NEEDS_PERSON = "NEEDS-A-PERSON"


def _verdict(body: dict) -> object:
    """The fake judge model: a verdict in the LLM judge's JSON shape, or 503."""
    from attesta_testing.chat_server import FakeReply

    try:
        data = json.loads(body["messages"][-1]["content"])
        answer, facts = data["answer"], data["facts"]
    except (KeyError, IndexError, TypeError, ValueError):
        return FakeReply.status(400, body='{"error": "not a judge request"}')
    if NEEDS_PERSON in answer:
        return FakeReply.status(503)
    return FakeReply.json({"class": "DESCRIPTIVE", "reason": "every statement is in the facts",
                           "claims": [{"claim": answer[:200], "verdict": "supported",
                                       "fact_ids": [facts[0]["id"]]}]})


@pytest.fixture(scope="module")
def judge_model():
    from attesta_testing.chat_server import FakeChatServer

    server = FakeChatServer(responder=_verdict).start()  # type: ignore[arg-type]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def classifier_env(judge_model):
    return {"ATTESTA_JUDGE": "openai", "ATTESTA_LLM_BASE_URL": judge_model.base_url,
            "ATTESTA_LLM_MODEL": "fake-judge", "ATTESTA_LLM_API_KEY": "test",
            "ATTESTA_LLM_TIMEOUT_S": "5", "ATTESTA_JUDGE_VERDICT_ATTEMPTS": "1",
            "ATTESTA_VERDICT_CACHE": "false", "ATTESTA_REVIEW_SAMPLE_SHARE": "1"}


def _queue(c: httpx.Client, brand_id: str) -> dict:
    r = c.get("/v1/review/queue", params={"brand_id": brand_id})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_a_reviewer_works_through_the_queue(browser, system, tmp_path):
    d, gw = browser, system["url"]
    _, key = system["keys"]["ws-a"]
    reviewer = "Auditor ws-a"  # the key's name (tests/test_gateway_services_e2e.py)
    tag = uuid.uuid4().hex[:6]
    # A name no other test's answers contain: runs of the shared topic that name no brand are
    # classified for every brand of the workspace, and must not reach this brand's queue.
    brand_id, name = f"veridian-{tag}", f"Veridian Optics {tag}"
    fact = f"{name} grinds lenses for research telescopes in Porto."
    c = httpx.Client(base_url=gw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    assert c.post("/v1/brands", json={"brand_id": brand_id, "name": name, "aliases": [f"Veridian {tag}"],
                                      "domains": [f"veridian-{tag}.example"]}).status_code == 201
    assert c.post(f"/v1/brands/{brand_id}/ground-truth/facts", json={
        "text": fact, "source_url": f"https://veridian-{tag}.example/about",
        "attribution": "the brand's site"}).status_code == 201
    runs = {}
    for kind, answer in (
            ("pending", f"{name} has made lenses in 40 countries since 1990, says Veridian {tag}. "
                        f"{NEEDS_PERSON}"),
            ("sample", f"{name} grinds lenses for research telescopes in Porto.")):
        r = c.post("/v1/runs", headers={"Idempotency-Key": str(uuid.uuid4())}, json={
            "engine": "perplexity", "model": "m", "prompt": f"Who makes telescope lenses? ({kind})",
            "answer": answer, "brand_ids": [brand_id]})
        assert r.status_code == 202, r.text
        runs[kind] = r.json()["run_id"]
    # The classifier reads the SHARED runs topic (behind other work's runs): allow minutes.
    deadline, queue = time.monotonic() + 420, {}
    while time.monotonic() < deadline:
        queue = _queue(c, brand_id)
        if queue["pending"] == 1 and queue["sample_open"] == 1:
            break
        time.sleep(1)
    assert (queue.get("pending"), queue.get("sample_open")) == (1, 1), queue
    assert [i["kind"] for i in queue["items"]] == ["pending", "sample"]

    # -- sign in; the brand's overview says a pair waits, and how long ------------------------
    d.get(f"{gw}/signin")
    _settled(d)
    _fill(d, "api-key", key)
    _css(d, "#signin-form button[type=submit]").click()
    _wait(d, lambda d: d.current_url == f"{gw}/brands", what="the brands page")
    d.get(f"{gw}/methodology")  # before any review: n = 0
    _settled(d)
    _wait(d, lambda d: "n = 0" in _css(d, "#agreement-summary").text, what="the agreement (none yet)")
    d.get(f"{gw}/brands/{brand_id}")
    _settled(d)
    waiting = _css(d, "#overview-review").text
    assert "1 pair is pending review (the oldest waiting" in waiting, waiting
    d.find_element(By.LINK_TEXT, "Open the review queue").click()
    _wait(d, lambda d: d.current_url == f"{gw}/review?brand_id={brand_id}", what="the queue")
    _settled(d)
    rows = d.find_elements(By.CSS_SELECTOR, "#queue-table tbody tr")
    assert len(rows) == 2 and "pending" in rows[0].text and "blind sample" in rows[1].text
    assert "hidden (blind review)" in rows[1].text
    assert "1 pair is pending review" in _css(d, "#queue-pending").text
    assert "1 judge label waits for a blind review (100 % " in _css(d, "#queue-sample").text
    _accessible(d, "review queue")
    _shot(d, "review-queue", tmp_path)

    # -- the first pair: the judge could not decide it; decide it, with a note ----------------
    _css(d, "#queue-start").click()
    _wait(d, lambda d: f"/review/{runs['pending']}/{brand_id}" in d.current_url, what="the first pair")
    _settled(d)
    assert "pending" in _css(d, "#review-kind").text
    marks = [(m.text, m.get_attribute("data-mention")) for m in d.find_elements(By.CSS_SELECTOR, "#review-answer mark")]
    assert marks == [(name, "name"), (f"Veridian {tag}", "name")], marks
    facts = d.find_elements(By.CSS_SELECTOR, "#review-facts tbody tr")
    assert len(facts) == 1 and fact in facts[0].text
    assert len(facts[0].find_element(By.CSS_SELECTOR, "td:nth-child(5) code").text) == 64
    assert len(_css(d, "#review-gt-hash").text) == 64
    judge = _css(d, "#review-judge").text
    assert "could not answer" in judge or "not judged yet" in judge, judge
    _accessible(d, "a pending pair")
    _shot(d, "review-pending", tmp_path)
    note = "Nothing in the facts about 40 countries; the rest matches the about page."
    _css(d, "#review-class-descriptive").click()
    _fill(d, "review-note", note)
    _css(d, "#review-form button[type=submit]").click()
    done = _wait(d, lambda d: "Recorded" in _css(d, "#review-result").text
                 and _css(d, "#review-result").text, what="the recorded class")
    assert f"Recorded DESCRIPTIVE by {reviewer}" in done and "history" in done, done

    # -- the next pair: a judge label drawn for a blind review; nothing of the judge shows ---
    _wait(d, lambda d: d.find_elements(By.ID, "review-next"), what="the next pair's link")[0].click()
    _wait(d, lambda d: f"/review/{runs['sample']}/{brand_id}" in d.current_url, what="the sample pair")
    _settled(d)
    assert "blind sample" in _css(d, "#review-kind").text
    assert d.find_elements(By.ID, "review-blind") and not d.find_elements(By.ID, "review-judge")
    assert "every statement is in the facts" not in _css(d, "#app").text  # the judge's reason
    _accessible(d, "a blind sample pair")
    _shot(d, "review-sample", tmp_path)
    _css(d, "#review-class-confabulated").click()  # the person disagrees with the judge
    _css(d, "#review-form button[type=submit]").click()
    done = _wait(d, lambda d: "Recorded" in _css(d, "#review-result").text
                 and _css(d, "#review-result").text, what="the blind review")
    assert f"Recorded CONFABULATED by {reviewer} as a blind review" in done, done
    _wait(d, lambda d: d.find_elements(By.ID, "review-done"), what="the empty queue")

    # -- the run page: the human label is the current class, and in the history --------------
    d.get(f"{gw}/runs/{runs['pending']}")
    _settled(d)
    classes = _css(d, "#run-classes").text
    assert "DESCRIPTIVE" in classes and "human" in classes, classes
    history = _css(d, "#history-table").text
    assert f"human ({reviewer})" in history and note in history and "review" in history, history
    _accessible(d, "a run decided by a person")
    _shot(d, "review-run", tmp_path)
    # the sample's pair keeps the judge's label
    d.get(f"{gw}/runs/{runs['sample']}")
    _settled(d)
    assert "judge" in _css(d, "#run-classes").text and "human" not in _css(d, "#history-table").text

    # -- the methodology page: the agreement moved ---------------------------------------------
    d.get(f"{gw}/methodology")
    _settled(d)
    summary = _wait(d, lambda d: "n = 1" in _css(d, "#agreement-summary").text
                    and _css(d, "#agreement-summary").text, what="the agreement figure")
    assert "Cohen's kappa 0.00" in summary, summary
    [row] = d.find_elements(By.CSS_SELECTOR, "#agreement-table tbody tr")
    cells = [td.text for td in row.find_elements(By.CSS_SELECTOR, "td")]
    assert cells[:3] == ["DESCRIPTIVE", "1", "0"] and cells[3].startswith("0.0 %"), cells
    _accessible(d, "methodology with the agreement")
    # the figure sits below the whole method: a picture of that section alone
    d.execute_script("document.getElementById('agreement').scrollIntoView()")
    target = _w.SHOTS if os.environ.get("ATTESTA_UPDATE_SCREENSHOTS") == "1" else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    assert _css(d, "#agreement").screenshot(str(target / "review-agreement.png"))

    d.get(f"{gw}/brands/{brand_id}")
    _settled(d)
    assert "No pair is pending review." in _css(d, "#overview-review").text
    assert key not in d.page_source and not _key_leaks(d, key, gw)
