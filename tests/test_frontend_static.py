"""The SPA in frontend/: its node tests (URL safety, score chip, formatting), its house rules
(no innerHTML, nothing fetched from another origin) and a real gateway process serving it."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from tests.gateway_fakes import GatewayProcess, StandInApi, migrated_database
from attesta_testing.infra import kafka_bootstrap, redis_url

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "frontend"
# Our own modules (vendor/ holds third-party files, pinned and listed in frontend/vendor/README.md).
SHIPPED_JS = sorted(p.name for p in FRONTEND.glob("*.js"))
TOKEN = "test-internal-token-" + "f" * 24


@pytest.mark.unit
def test_node_tests_of_the_frontend_pass():
    node = shutil.which("node")
    if node is None:
        pytest.fail("`node` is not installed: the frontend's tests need Node.js >= 20 "
                    "(`node --test frontend/`); install it (e.g. apt-get install nodejs)")
    out = subprocess.run([node, "--test", "frontend/"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    report = out.stdout + out.stderr
    assert out.returncode == 0, f"node --test frontend/ failed:\n{report[-4000:]}"
    passed = re.search(r"^# pass (\d+)$", report, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", report, re.MULTILINE)
    assert passed and failed, f"no TAP summary from node --test:\n{report[-2000:]}"
    assert int(passed.group(1)) >= 10, f"too few node tests ran:\n{report[-2000:]}"
    assert int(failed.group(1)) == 0


@pytest.mark.unit
def test_the_spa_never_uses_innerhtml_or_eval_on_data():
    for name in SHIPPED_JS:
        # Code only: comment lines may name what the code must not do.
        source = re.sub(r"^\s*//.*$", "", (FRONTEND / name).read_text(), flags=re.MULTILINE)
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                       "new Function"):
            assert banned not in source, f"{name} uses {banned}"


@pytest.mark.unit
def test_the_spa_loads_nothing_from_another_origin():
    html = (FRONTEND / "index.html").read_text()
    for attr in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert attr.startswith("/") and not attr.startswith("//"), f"external asset: {attr}"
    assert "default-src 'none'" in html and "connect-src 'self'" in html  # the CSP is there
    for name in SHIPPED_JS:
        for spec in re.findall(r'^\s*(?:import|from)\s.*?["\']([^"\']+)["\']', (FRONTEND / name)
                               .read_text(), re.MULTILINE):
            assert spec.startswith("./"), f"{name} imports {spec}"
    assert "@import" not in (FRONTEND / "styles.css").read_text()


@pytest.mark.unit
def test_the_methodology_page_is_docs_metrics_md():
    # The app renders frontend/methodology.md; it must be the published docs/metrics.md itself
    # (copy it over after editing the doc: `cp docs/metrics.md frontend/methodology.md`).
    assert (FRONTEND / "methodology.md").read_bytes() == (ROOT / "docs" / "metrics.md").read_bytes()


@pytest.mark.unit
def test_the_vendored_libraries_are_the_pinned_releases():
    import hashlib
    import json

    listed = json.loads((FRONTEND / "vendor" / "vendor.json").read_text())
    for item in listed:
        base = ROOT / item["path"]
        meta = json.loads((base / "package.json").read_text())
        assert (meta["name"], meta["version"], meta["license"]) == (
            item["name"], item["version"], item["license"]), item
        assert (base / "LICENSE").is_file()
        for name, digest in item["sha256"].items():
            assert hashlib.sha256((base / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.integration
async def test_a_real_gateway_serves_the_spa_and_keeps_api_paths_json(tmp_path):
    kafka_bootstrap()
    api = StandInApi(TOKEN).start()
    try:
        async with migrated_database() as db_url:
            gw = GatewayProcess({
                "ATTESTA_GATEWAY_DB_URL": db_url,
                "ATTESTA_GATEWAY_SECRET": secrets.token_urlsafe(48),
                "ATTESTA_INTERNAL_TOKEN": TOKEN, "REDIS_URL": redis_url(),
                "ATTESTA_CLASSIFIER_URL": api.url, "ATTESTA_EVIDENCE_URL": api.url,
                "ATTESTA_RATE_LIMIT_PREFIX": f"t-fe-{uuid.uuid4().hex[:8]}:",
                "ATTESTA_STATIC_DIR": str(FRONTEND),
            }, tmp_path, "frontend").start()
            try:
                async with httpx.AsyncClient(base_url=gw.url, timeout=15) as client:
                    index = (FRONTEND / "index.html").read_text()
                    for path in ("/", "/verify", "/verify/"):
                        page = await client.get(path)
                        assert page.status_code == 200, path
                        assert page.headers["content-type"].startswith("text/html"), path
                        assert page.text == index, path
                    for name in SHIPPED_JS:  # ES modules load only with a JavaScript type
                        js = await client.get(f"/{name}")
                        assert js.status_code == 200
                        assert "javascript" in js.headers["content-type"], js.headers
                        assert js.text == (FRONTEND / name).read_text()
                    css = await client.get("/styles.css")
                    assert css.status_code == 200
                    assert css.headers["content-type"].startswith("text/css")
                    # What /verify calls for an unknown hash: the API's JSON 404, not the app.
                    missing = await client.get(f"/v1/public/evidence/{'0' * 64}")
                    assert missing.status_code == 404
                    assert missing.json()["error"]["code"] == "not_found"
                    # A GET to a POST-only API path is a 405 naming its methods, not the app
                    # and not a 404 (the SPA's mount at / matches every GET path in full).
                    wrong = await client.get("/v1/chat")
                    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST", wrong
                    assert wrong.json()["error"]["code"] == "method_not_allowed"
                    unknown = await client.get("/v1/no-such-route")
                    assert unknown.status_code == 404
            finally:
                gw.stop()
    finally:
        api.stop()


@pytest.mark.unit
def test_the_score_chip_reads_the_published_calibration_table():
    # frontend/calibration.json is a copy of docs/retrieval-quality.md's dev-split table (the
    # chip's tooltip words come from it): it must say what the doc says.
    import json

    text = (ROOT / "docs" / "retrieval-quality.md").read_text()
    section = text[text.index("## Calibration on the dev split"):]
    published = [
        {"low": int(m[0]), "high": int(m[1]), "pairs": int(m[2]), "mean_sigmoid": float(m[3]),
         "share_relevant": float(m[4]), "share_answers": float(m[5])}
        for m in re.findall(r"^\| (\d+)-(\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                            section, re.MULTILINE)]
    assert len(published) == 10
    assert json.loads((FRONTEND / "calibration.json").read_text())["rows"] == published
