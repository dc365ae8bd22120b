from __future__ import annotations

import html
import http.client
import json
import re
from urllib.parse import urlsplit

import pytest

from attesta_kb import load_brands, load_cards
from attesta_kb_tools import sites
from attesta_kb_tools.sites import SiteServer, local_url, render_page, serve_sites, stop_sites

pytestmark = pytest.mark.unit

LD_RE = re.compile(r'<script type="application/ld\+json">\s*(.*?)\s*</script>', re.S)


def _text(body: bytes) -> str:
    s = body.decode("utf-8")
    s = re.sub(r"<script.*?</script>|<style.*?</style>", " ", s, flags=re.S)
    s = re.sub(r"<[^>]+>", " ", s)
    return re.sub(r"\s+", " ", html.unescape(s))


def _get(port: int, path: str, host: str | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Host": host} if host else {}
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server():
    with SiteServer("127.0.0.1") as s:
        yield s


def test_serves_brand_about_page_with_jsonld(server):
    url = server.url("https://lumora.example/about")
    assert url == f"http://127.0.0.1:{server.port}/lumora.example/about"
    status, headers, body = _get(server.port, urlsplit(url).path)
    assert status == 200 and headers["content-type"].startswith("text/html")
    page = body.decode()
    lds = [json.loads(x) for x in LD_RE.findall(page)]
    org = next(x for x in lds if x["@type"] == "Organization")
    assert org["name"] == "Lumora Therapeutics"
    assert "Lumora Tx" in org["alternateName"]
    assert org["foundingDate"] == str(load_brands()[0]["founded"])
    assert "<h1>" in page and "<h2>" in page and '<dl class="key-facts">' in page
    assert "<nav" in page and "<footer>" in page and "cookies" in page  # boilerplate noise


def test_product_page_has_product_jsonld(server):
    status, _, body = _get(server.port, "/kestrelbio.example/products/velnorax")
    assert status == 200
    lds = [json.loads(x) for x in LD_RE.findall(body.decode())]
    drug = next(x for x in lds if x["@type"] in ("Drug", "Product"))
    assert drug["name"] == "Velnorax" and drug["manufacturer"]["name"] == "Kestrel Biosciences"
    assert "70 mg once monthly" in _text(body)


def test_redirect_to_same_brand(server):
    status, headers, _ = _get(server.port, "/lumora.example/company")
    assert status == 302
    assert headers["location"] == "/lumora.example/about"
    status2, _, body = _get(server.port, headers["location"])
    assert status2 == 200 and "About Lumora Therapeutics" in _text(body)


def test_ssrf_redirect_points_at_metadata_service(server):
    status, headers, _ = _get(server.port, "/halvane.example/partners/portal")
    assert status == 302
    assert headers["location"] == "http://169.254.169.254/latest/meta-data"  # never followed here


def test_redirect_loop_and_404(server):
    status, headers, _ = _get(server.port, "/orbisan.example/redirect-loop")
    assert status == 302 and headers["location"] == "/orbisan.example/redirect-loop"
    assert _get(server.port, "/orbisan.example/no-such-page")[0] == 404
    assert _get(server.port, "/unknown.example/about")[0] == 404


def test_host_header_mode(server):
    status, _, body = _get(server.port, "/leadership", host="thessalymed.example")
    assert status == 200 and "Nikolai Haraldsen" in _text(body)
    status, headers, _ = _get(server.port, "/company", host=f"corvinahealth.example:{server.port}")
    assert status == 302 and headers["location"] == "/about"


def test_every_brand_source_renders_and_states_its_facts():
    cards = {c["source"]: c for c in load_cards()}
    for b in load_brands():
        for src in b["sources"]:
            u = urlsplit(src)
            r = render_page(u.hostname, u.path)
            assert r.status == 200, src
            if src in cards:
                first = cards[src]["text"].split(". ")[0]
                assert first in _text(r.body), src
        for f in b["facts"]:
            u = urlsplit(f["source"])
            assert f["value"] in _text(render_page(u.hostname, u.path).body), (b["id"], f["type"])


def test_local_url_rewrites_and_rejects():
    base = "http://127.0.0.1:8123/"
    assert local_url("https://orbisan.example/products/migrastat?x=1#top", base) == \
        "http://127.0.0.1:8123/orbisan.example/products/migrastat?x=1"
    assert local_url("https://halvane.example", base) == "http://127.0.0.1:8123/halvane.example/"
    for bad in ("javascript:alert(1)", "ftp://lumora.example/about", "https://evil.example/about",
                "https://ref.medvault.example/monographs/velnorex"):
        with pytest.raises(ValueError):
            local_url(bad, base)
    with pytest.raises(ValueError):
        local_url("https://lumora.example/about", "not a url")


def test_serve_sites_binds_loopback_only():
    with pytest.raises(ValueError):
        serve_sites("0.0.0.0")
    port = serve_sites("127.0.0.1", 0)
    try:
        assert port > 0
        assert _get(port, "/")[0] == 200
        assert set(sites.domains()) == {d for b in load_brands() for d in b["domains"]}
    finally:
        stop_sites(port)
