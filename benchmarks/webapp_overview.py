"""Brand overview: time to first render in headless Chromium vs. the metrics API call alone.

10,000 runs of one brand over 90 days (two engines; half cite the brand's domain -> STRONG,
half never mention it -> ABSENT, both decided by the heuristic) go in through the real gateway
(`POST /v1/runs`), the real classifier classifies them, then, alternating, REPEATS times each:

  api   GET /v1/metrics?period=day&brand_id=…&from=<90 days ago>&group_by=<the page's> from Python (httpx, same
        gateway, same key): the API's own time;
  page  a fresh load of /brands/{id}?period=day&from=… in Chromium: from navigation start to
        the six charts drawn (the page's performance.now() when it has drawn them, kept in
        main[data-ready-at-ms]), and the part of it spent on the same metrics call inside the
        page (main[data-api-ms]).

Everything is real and started by the browser tests' fixtures (tests/browser/conftest.py ->
tests/test_gateway_services_e2e.py `system`). Needs the infrastructure of `.state/env`:

    .venv/bin/python -m pytest benchmarks/webapp_overview.py -s -p no:cacheprovider \
        (ATTESTA_BENCH_RUNS=10000 ATTESTA_BENCH_REPEATS=15 by default)

The numbers are printed and appended to benchmarks/results/webapp_overview.jsonl.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("attesta_browser_fixtures",
                                               ROOT / "tests" / "browser" / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
system, browser = _fixtures.system, _fixtures.browser  # the real stack and Chromium


async def _load(gw: str, key: str, brand: dict, runs: int, days: int) -> float:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    gate = asyncio.Semaphore(16)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=gw, timeout=60,
                                 headers={"Authorization": f"Bearer {key}"}) as c:
        async def one(i: int) -> None:
            answer = (f"{brand['name']} is at https://{brand['domains'][0]}/about ({i})."
                      if i % 2 == 0 else f"Nothing to see in answer {i}.")
            body = {"engine": "chatgpt" if i % 3 else "perplexity", "model": "m",
                    "prompt": f"prompt {i % 50}", "answer": answer,
                    "brand_ids": [brand["brand_id"]],
                    "answered_at": (now - timedelta(days=i % days, hours=i % 24)).isoformat()}
            async with gate:
                r = await c.post("/v1/runs", json=body,
                                 headers={"Idempotency-Key": str(uuid.uuid4())})
            assert r.status_code == 202, r.text
        await asyncio.gather(*(one(i) for i in range(runs)))
    return time.perf_counter() - started


def test_overview_first_render_vs_api(system, browser):
    from attesta_kb import load_brands
    from attesta_kb_tools.sites import local_url

    runs = int(os.environ.get("ATTESTA_BENCH_RUNS", "10000"))
    repeats = int(os.environ.get("ATTESTA_BENCH_REPEATS", "15"))
    days = 90
    gw, key = system["url"], system["keys"]["ws-a"][1]
    kb = load_brands()[2]
    brand = {"brand_id": f"{kb['id']}-bench-{uuid.uuid4().hex[:6]}", "name": kb["name"],
             "domains": kb["domains"],
             "sources": [local_url(u, system["sites"]) for u in kb["sources"]]}
    c = httpx.Client(base_url=gw, timeout=120, headers={"Authorization": f"Bearer {key}"})
    assert c.post("/v1/brands", json=brand).status_code == 201
    for _ in range(5):  # a loaded machine can run the refresh past its deadline (504): again
        refreshed = c.post(f"/v1/brands/{brand['brand_id']}/ground-truth/refresh")
        if refreshed.status_code == 200:
            break
        time.sleep(5)
    assert refreshed.status_code == 200, refreshed.text
    t_load = time.perf_counter()
    load_s = asyncio.run(_load(gw, key, brand, runs, days))
    deadline = time.monotonic() + 900
    since = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%d")
    # The call the page makes: grouped by every dimension (frontend/model.js OVERVIEW_GROUP_BY).
    group_by = re.search(r'OVERVIEW_GROUP_BY = "([^"]*)"',
                         (ROOT / "frontend" / "model.js").read_text()).group(1)
    params = {"period": "day", "brand_id": brand["brand_id"], "from": f"{since}T00:00:00Z",
              "group_by": group_by}
    while True:
        rows = c.get("/v1/metrics", params=params).json()["rows"]
        done = sum(r["n"] for r in rows)
        if done >= runs or time.monotonic() > deadline:
            break
        time.sleep(2)
    classified_s = time.perf_counter() - t_load
    assert done >= runs, f"only {done} of {runs} runs classified"
    periods = len({r["period_start"] for r in rows})

    d = browser
    d.get(f"{gw}/signin")
    d.execute_script("sessionStorage.setItem('attesta.apiKey', arguments[0])", key)
    url = f"{gw}/brands/{brand['brand_id']}?period=day&from={since}"
    api_ms, page_ms, page_api_ms = [], [], []
    for _ in range(repeats):  # alternate, so both see the same machine load
        t0 = time.perf_counter()
        r = c.get("/v1/metrics", params=params)
        api_ms.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200
        d.get(url)
        ready = None
        for _ in range(600):
            ready = d.execute_script(
                "const m = document.getElementById('app');"
                "return m.getAttribute('data-ready-at-ms') && document.querySelectorAll("
                "'figure.chart canvas').length === 6 ? [Number(m.getAttribute("
                "'data-ready-at-ms')), Number(m.getAttribute('data-api-ms'))] : null;")
            if ready:
                break
            time.sleep(0.01)
        assert ready, "the overview did not render"
        page_ms.append(ready[0])
        page_api_ms.append(ready[1])
    med = statistics.median
    result = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"), "runs": runs, "days": days,
        "periods_drawn": periods, "metric_rows": len(rows), "repeats": repeats,
        "load_s": round(load_s, 1), "classified_after_s": round(classified_s, 1),
        "api_ms_p50": round(med(api_ms), 1), "page_first_render_ms_p50": round(med(page_ms), 1),
        "page_metrics_call_ms_p50": round(med(page_api_ms), 1),
        "page_over_api": round(med(page_ms) / med(api_ms) - 1, 3),
    }
    print("\n" + json.dumps(result, indent=1))
    out = ROOT / "benchmarks" / "results" / "webapp_overview.jsonl"
    out.parent.mkdir(exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(result) + "\n")
