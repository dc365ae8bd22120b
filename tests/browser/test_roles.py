"""Roles in the web app, in headless Chromium against the real gateway and services (#25 item
5): a viewer key sees no edit button or form (and the gateway refuses its writes anyway); an
admin creates a key on the keys page, sees its secret once with a copy button and a warning,
sees it listed with its role, and revokes it after a confirmation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

pytestmark = pytest.mark.integration


def _webapp_helpers():
    """test_webapp.py's page helpers, loaded by path (tests are imported with importlib)."""
    spec = importlib.util.spec_from_file_location("attesta_browser_webapp_roles",
                                                  Path(__file__).with_name("test_webapp.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_w = _webapp_helpers()
_accessible, _css, _fill, _settled, _wait = _w._accessible, _w._css, _w._fill, _w._settled, _w._wait
# The collection pages' write forms and buttons (frontend/collection.js), by page.
WRITES = {"/collect/prompts": ["#prompt-form", "#import-form"],
          "/collect/engines": ["#engine-form", "#secret-form"],
          "/collect/schedules": ["#schedule-form"]}


def _open(d, gw: str, path: str) -> None:
    d.get(f"{gw}{path}")
    _settled(d)


def _status_of_write(d, key: str) -> int:
    """What the gateway answers this page's own fetch of a write with this key."""
    return d.execute_async_script("""
        const [key, done] = arguments;
        fetch('/v1/prompts', {method: 'POST', headers: {'Authorization': `Bearer ${key}`,
              'Content-Type': 'application/json'}, body: JSON.stringify({text: 'x'})})
          .then((r) => done(r.status), () => done(0));""", key)


@pytest.mark.timeout(1500)  # real services on a shared 2-core box: start-up alone takes minutes
def test_a_viewer_sees_no_edit_buttons_and_an_admin_creates_a_key_shown_once(browser, system,
                                                                            sign_in):
    d, gw = browser, system["url"]
    _, admin = system["keys"]["ws-a"]  # created before roles' defaults: an admin
    made = httpx.post(f"{gw}/v1/keys", headers={"Authorization": f"Bearer {admin}"},
                      json={"name": "UI viewer", "role": "viewer"}, timeout=15)
    assert made.status_code == 201, made.text
    viewer = made.json()["key"]

    # -- a viewer: every write form and button is there but hidden; Keys is not in the menu ----
    sign_in(viewer, "viewer")
    assert not _css(d, "header nav a[href='/keys']").is_displayed()
    assert _css(d, "header nav a[href='/alerts']").is_displayed()
    for path, forms in WRITES.items():
        _open(d, gw, path)
        _wait(d, lambda d: d.execute_script("return document.body.dataset.role") == "viewer",
              what="the role after a page load")
        for selector in forms:
            assert not _css(d, selector).is_displayed(), (path, selector)
        writes = d.find_elements(By.CSS_SELECTOR, "#app .write-action")
        assert writes and not any(e.is_displayed() for e in writes), path
        # No submit button of any form is visible on the page for a viewer.
        shown = [b.text for b in d.find_elements(By.CSS_SELECTOR, "#app form button[type=submit]")
                 if b.is_displayed()]
        assert shown == [], (path, shown)
    assert _status_of_write(d, viewer) == 403  # and the gateway refuses it anyway
    _open(d, gw, "/keys")
    assert "Only an admin key" in _css(d, "#app").text
    # A 403 is the role's answer, not a bad key: the viewer stays signed in.
    assert d.execute_script("return window.sessionStorage.getItem('attesta.apiKey')") == viewer
    _css(d, "#signout").click()
    _wait(d, lambda d: d.current_url == f"{gw}/signin", what="signed out")

    # -- an admin: the keys page, a new editor key shown once --------------------------------
    sign_in(admin, "admin")
    for path, forms in WRITES.items():  # an admin's write forms are all there
        _open(d, gw, path)
        for selector in forms:
            assert _css(d, selector).is_displayed(), (path, selector)
    # The alerts page (frontend/alerts.js) is in the menu for every signed-in key.
    _css(d, "header nav a[href='/alerts']").click()
    _wait(d, lambda d: d.current_url == f"{gw}/alerts", what="the alerts page")
    _settled(d)
    assert _css(d, "h1").text == "Alerts"
    link = _css(d, "header nav a[href='/keys']")
    assert link.is_displayed()
    link.click()
    _wait(d, lambda d: d.current_url == f"{gw}/keys", what="the keys page")
    _settled(d)
    assert "UI viewer" in _css(d, "#keys-table").text
    _fill(d, "key-name", "UI editor")
    Select(_css(d, "#key-role")).select_by_value("editor")
    _css(d, "#key-form button[type=submit]").click()
    _wait(d, lambda d: d.find_elements(By.ID, "new-key"), what="the new key")
    secret = _css(d, "#new-key").get_attribute("value")
    assert secret.startswith("atk_")
    assert "only time" in _css(d, "#new-key-warning").text
    assert _css(d, "#copy-key").is_displayed()
    _css(d, "#copy-key").click()
    _wait(d, lambda d: _css(d, "#copy-status").text, what="the copy button's answer")
    _wait(d, lambda d: "UI editor" in _css(d, "#keys-table").text, what="the new key listed")
    row = next(r for r in d.find_elements(By.CSS_SELECTOR, "#keys-table tbody tr")
               if "UI editor" in r.text)
    assert "editor" in row.text and "never" in row.text  # its role; not used yet
    _accessible(d, "keys")
    # Shown once: nowhere in the tab's storage, and gone when the page is left.
    assert d.execute_script("return window.localStorage.length") == 0
    assert d.execute_script("return window.sessionStorage.getItem('attesta.apiKey')") == admin
    _css(d, "header nav a[href='/brands']").click()
    _settled(d)
    _css(d, "header nav a[href='/keys']").click()
    _wait(d, lambda d: d.current_url == f"{gw}/keys", what="the keys page again")
    _settled(d)
    assert not d.find_elements(By.ID, "new-key") and secret not in d.page_source
    me = httpx.get(f"{gw}/v1/keys/me", headers={"Authorization": f"Bearer {secret}"}, timeout=15)
    assert me.status_code == 200 and me.json()["role"] == "editor"

    # -- revoke it, after a confirmation: refused at once ------------------------------------
    key_id = me.json()["key_id"]
    _css(d, f"[data-revoke-key='{key_id}']").click()
    _wait(d, lambda d: _alert(d), what="the confirmation")
    d.switch_to.alert.accept()
    _wait(d, lambda d: not d.find_elements(By.CSS_SELECTOR, f"[data-revoke-key='{key_id}']"),
          what="the revoked key to leave the list")
    gone = httpx.get(f"{gw}/v1/keys/me", headers={"Authorization": f"Bearer {secret}"},
                     timeout=15)
    assert gone.status_code == 401


def _alert(d) -> bool:
    try:
        d.switch_to.alert  # noqa: B018 - raises until the confirm() dialog is open
        return True
    except Exception:  # noqa: BLE001 - NoAlertPresentException: not yet
        return False
