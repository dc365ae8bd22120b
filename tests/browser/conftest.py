"""Browser tests: Debian's Chromium (driven by chromedriver through Selenium) against the real
gateway, classifier and evidence service started by `tests/test_gateway_services_e2e.py`'s
`system` fixture (reused, not copied: the gateway there also serves `frontend/`)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = os.environ.get("ATTESTA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ATTESTA_CHROMEDRIVER", "/usr/bin/chromedriver")


def _load_e2e():
    spec = importlib.util.spec_from_file_location(
        "attesta_browser_e2e_system", ROOT / "tests" / "test_gateway_services_e2e.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_e2e = _load_e2e()
system = _e2e.system  # the module-scoped fixture of real processes
classifier_env = _e2e.classifier_env  # overridden by a module that needs another classifier setting


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"{path} is missing: install Debian's chromium and chromium-driver "
                        "(apt-get install chromium chromium-driver; .ci/run does)")
    profile = Path(tempfile.mkdtemp(prefix="attesta-chromium-"))
    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1280,1000",
                 "--force-device-scale-factor=1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    # An explicit driver path: Selenium does not run selenium-manager (nothing is downloaded).
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    driver.set_script_timeout(30)
    driver.downloads = downloads  # type: ignore[attr-defined]
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def sign_in(browser, system):
    """Signs the browser in the way a person does: the sign-in page, the key, the brands page.
    ``sign_in()`` uses workspace ws-a's key (an admin); ``sign_in(key, role)`` another key, and
    waits until the page knows its role. Returns (driver, gateway URL)."""
    # Imported where used, as in ``browser``: collecting the suite must not need Selenium.
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def wait(cond, what: str):
        return WebDriverWait(browser, 30, poll_frequency=0.1).until(
            lambda d: cond(d), message=f"timed out waiting for {what}")

    def settled():
        wait(lambda d: d.find_element(By.ID, "app").get_attribute("aria-busy") == "false",
             "the page to render")

    def go(key: str | None = None, role: str | None = None):
        d, gw = browser, system["url"]
        d.get(f"{gw}/signin")
        settled()
        box = d.find_element(By.ID, "api-key")
        box.clear()
        box.send_keys(key or system["keys"]["ws-a"][1])
        d.find_element(By.CSS_SELECTOR, "#signin-form button[type=submit]").click()
        wait(lambda d: d.current_url == f"{gw}/brands", "the brands page")
        settled()
        if role is not None:
            wait(lambda d: d.execute_script("return document.body.dataset.role") == role,
                 f"body[data-role={role}]")
        return d, gw

    return go


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, attach what the browser showed (URL and the page's text) to the report."""
    report = yield
    driver = item.funcargs.get("browser") if hasattr(item, "funcargs") else None
    if report.when == "call" and report.failed and driver is not None:
        try:
            text = driver.find_element("id", "app").text
            report.sections.append(("browser", f"URL: {driver.current_url}\n{text[:3000]}"))
        except Exception as exc:  # noqa: BLE001 - a report helper must not hide the failure
            report.sections.append(("browser", f"(no page state: {exc!r})"))
    return report
