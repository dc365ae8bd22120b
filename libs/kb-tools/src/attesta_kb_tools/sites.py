"""Local, fictional brand websites for ground-truth refresh tests.

The six tracked brands live on the reserved `.example` TLD, which does not resolve.
This module renders their pages as HTML (JSON-LD structured data, h1/h2 headings, a
<dl> of key facts, paragraphs, plus nav/cookie/footer boilerplate) from the same data
as `brands.json` and the KB cards, and serves them from a small stdlib HTTP server:

    port = serve_sites()                       # binds 127.0.0.1 on a free port
    base = f"http://127.0.0.1:{port}"
    local_url("https://lumora.example/about", base)
    # -> "http://127.0.0.1:<port>/lumora.example/about"
    stop_sites(port)

Routing: `/<domain>/<path>` (path-prefix mode), or `/<path>` when the request's Host
header is a brand domain (host mode). Special routes on every brand site:

* `/company`          302 -> `/about` of the same brand (an ordinary redirect);
* `/partners/portal`  302 -> `http://169.254.169.254/latest/meta-data` (SSRF bait);
* `/redirect-loop`    302 -> itself (redirect-limit tests);
* `/robots.txt`       plain text.

Run standalone: `python -m attesta_kb_tools.sites --port 8088`.
"""

from __future__ import annotations

import argparse
import html
import ipaddress
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from attesta_kb.dataset import Record, load_brands, load_cards

SSRF_TARGET = "http://169.254.169.254/latest/meta-data"
REDIRECT_PATH = "/company"
REDIRECT_TARGET = "/about"
SSRF_PATH = "/partners/portal"
LOOP_PATH = "/redirect-loop"


@dataclass(frozen=True)
class Response:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class HomePage(TypedDict):
    kind: Literal["home"]
    card: None
    title: str
    product: None


class ProductsPage(TypedDict):
    kind: Literal["products"]
    card: None
    title: str
    product: None


class BrandPage(TypedDict):
    kind: Literal["brand"]
    card: Record
    title: str
    product: None


class ProductPage(TypedDict):
    kind: Literal["product"]
    card: Record
    title: str
    product: Record


# A page of a brand site: what it shows is decided by its kind.
Page = HomePage | ProductsPage | BrandPage | ProductPage


@dataclass
class Site:
    brand: Record
    domain: str
    pages: dict[str, Page] = field(default_factory=dict)  # by path


# ----------------------------------------------------------------------------- model
@lru_cache(maxsize=1)
def _sites() -> dict[str, Site]:
    cards = {c["card_id"]: c for c in load_cards()}
    sites: dict[str, Site] = {}
    for b in load_brands():
        for domain in b["domains"]:
            site = Site(brand=b, domain=domain)
            for cid in b["card_ids"]:
                card = cards[cid]
                path = urlsplit(card["source"]).path
                site.pages[path] = {"kind": "brand", "card": card, "title": card["title"], "product": None}
            for p in b["products"]:
                for cid in p["card_ids"]:
                    card = cards[cid]
                    if card["metadata"]["kind"] != "product":
                        continue
                    path = urlsplit(card["source"]).path
                    site.pages[path] = {"kind": "product", "card": card, "title": card["title"], "product": p}
            site.pages["/"] = {"kind": "home", "card": None, "title": b["name"], "product": None}
            site.pages["/products"] = {"kind": "products", "card": None, "title": f"{b['name']} products",
                                       "product": None}
            sites[domain] = site
    return sites


def domains() -> list[str]:
    """All brand domains served."""
    return sorted(_sites())


def page_paths(domain: str) -> list[str]:
    """HTML page paths of one brand site (redirect routes excluded)."""
    return sorted(_sites()[domain].pages)


def brand_for_domain(domain: str) -> Record | None:
    s = _sites().get(domain.lower())
    return s.brand if s else None


# ----------------------------------------------------------------------------- rendering
def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _jsonld(obj: dict[str, Any]) -> str:
    raw = json.dumps(obj, ensure_ascii=False, indent=1)
    raw = raw.replace("</", "<\\/")
    return f'<script type="application/ld+json">\n{raw}\n</script>'


def _org_ld(b: Record, domain: str) -> dict[str, Any]:
    city = b["headquarters"].split(",")[0]
    country = b["headquarters"].split(",")[-1].strip()
    return {
        "@context": "https://schema.org",
        "@type": "Organization",
        "@id": f"https://{domain}/#organization",
        "name": b["name"],
        "alternateName": b["aliases"],
        "url": f"https://{domain}/",
        "foundingDate": str(b["founded"]),
        "description": b["description"],
        "numberOfEmployees": {"@type": "QuantitativeValue", "value": b["employees"]},
        "address": {"@type": "PostalAddress", "addressLocality": city, "addressCountry": country},
        "employee": [{"@type": "Person", "name": b["ceo"], "jobTitle": "Chief Executive Officer"}],
        "makesOffer": [{"@type": "Offer", "itemOffered": {"@type": "Product", "name": p["name"],
                                                           "url": p["source"]}} for p in b["products"]],
    }


def _product_ld(b: Record, p: Record, domain: str) -> dict[str, Any]:
    d = {
        "@context": "https://schema.org",
        "@type": "Drug" if p["type"] == "medicine" else "Product",
        "name": p["name"],
        "url": p["source"],
        "description": p["indication"],
        "category": p["type"],
        "brand": {"@type": "Brand", "name": b["name"]},
        "manufacturer": {"@type": "Organization", "name": b["name"], "url": f"https://{domain}/"},
        "releaseDate": str(p["approved"]),
    }
    if p.get("generic_name"):
        d["nonProprietaryName"] = p["generic_name"]
        d["doseSchedule"] = {"@type": "DoseSchedule", "doseValue": p["dose"]}
    return d


def _dl(items: list[tuple[str, str]]) -> str:
    rows = "\n".join(f"    <dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    return f'<dl class="key-facts">\n{rows}\n  </dl>'


_SENT = re.compile(r"(?<!Dr\.)(?<=[.?!])\s+(?=[A-Z])")


def _paragraphs(text: str, per: int = 3) -> str:
    sents = [x for x in _SENT.split(text) if x.strip()]
    paras = [" ".join(sents[i:i + per]) for i in range(0, len(sents), per)]
    return "\n".join(f"  <p>{_e(p)}</p>" for p in paras)


def _layout(site: Site, prefix: str, title: str, body: str, ld: list[dict[str, Any]]) -> bytes:
    b = site.brand
    nav_items = [("/", "Home"), ("/about", "About us"), ("/products", "Products"), ("/pipeline", "Pipeline"),
                 ("/leadership", "Leadership"), ("/newsroom/fy2025-results", "Newsroom"),
                 ("/company/history", "History")]
    nav = " ".join(f'<a href="{_e(prefix + p)}">{_e(t)}</a>' for p, t in nav_items)
    lds = "\n".join(_jsonld(x) for x in ld)
    doc = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{_e(title)} | {_e(b['name'])}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="{_e(b['description'])}">
<link rel="canonical" href="https://{_e(site.domain)}/">
<style>body{{font-family:sans-serif;margin:0}} .cookie{{position:fixed;bottom:0}} dl.key-facts dt{{font-weight:bold}}</style>
{lds}
<script>window.dataLayer=window.dataLayer||[];function track(e){{dataLayer.push({{event:e,site:"{_e(site.domain)}"}});}}track("pageview");</script>
</head>
<body>
<div class="cookie" role="dialog">We use cookies to improve your experience. <button>Accept all</button> <button>Manage preferences</button></div>
<header><a class="logo" href="{_e(prefix)}/">{_e(b['name'])}</a>
<nav aria-label="Main">{nav} <a href="#">Careers</a> <a href="#">Investors</a> <a href="#">Contact</a></nav>
<form class="search" role="search"><input type="search" placeholder="Search {_e(b['aliases'][0])}"></form>
</header>
<main>
{body}
</main>
<aside class="newsletter"><h3>Stay informed</h3><p>Sign up for news and updates from {_e(b['aliases'][0])}.</p><form><input type="email" placeholder="Email address"><button>Subscribe</button></form></aside>
<footer>
<p>&copy; 2026 {_e(b['name'])}. All rights reserved. All content on this site is fictional test data.</p>
<p><a href="#">Privacy policy</a> | <a href="#">Terms of use</a> | <a href="#">Cookie settings</a> | <a href="#">Accessibility</a> | <a href="#">Sitemap</a></p>
<p>This website is intended for residents of selected markets only. Product information may differ by country.</p>
</footer>
</body>
</html>
"""
    return doc.encode("utf-8")


def _about_facts(b: Record) -> list[tuple[str, str]]:
    return [
        ("Founded", str(b["founded"])),
        ("Headquarters", b["headquarters"]),
        ("Chief executive officer", b["ceo"]),
        ("Employees", f"{b['employees']:,}"),
        ("Industry", b["industry"]),
        ("Ownership", b["listing"]),
        ("Also known as", ", ".join(b["aliases"])),
    ]


def _product_facts(p: Record) -> list[tuple[str, str]]:
    items = [("Product", p["name"])]
    if p.get("generic_name"):
        items.append(("Generic name", p["generic_name"]))
    items += [("Type", p["type"]), ("Form", p["form"])]
    if p.get("condition"):
        items.append(("Condition", p["condition"]))
    items += [("Dose" if p["type"] == "medicine" else "Use", p["dose"]),
              ("First approved" if p["type"] == "medicine" else "Launched", str(p["approved"]))]
    return items


def render_page(domain: str, path: str, prefix: str = "") -> Response:
    """Render one request for a brand site. `prefix` is prepended to in-site links and
    redirect targets (e.g. "/lumora.example" in path-prefix mode)."""
    site = _sites().get(domain.lower())
    if site is None:
        return _not_found(f"unknown site {domain}")
    path = path or "/"
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/")
    if path == REDIRECT_PATH:
        return _redirect(prefix + REDIRECT_TARGET)
    if path == SSRF_PATH:
        return _redirect(SSRF_TARGET)
    if path == LOOP_PATH:
        return _redirect(prefix + LOOP_PATH)
    if path == "/robots.txt":
        robots = f"User-agent: *\nAllow: /\nSitemap: https://{site.domain}/sitemap.xml\n".encode()
        return Response(200, (("Content-Type", "text/plain; charset=utf-8"),), robots)
    page = site.pages.get(path)
    if page is None:
        return _not_found(f"no page {path} on {domain}", site, prefix)
    b = site.brand
    ld: list[dict[str, Any]] = []
    if page["kind"] == "home":
        ld.append(_org_ld(b, site.domain))
        items = "\n".join(f'    <li><a href="{_e(prefix)}/products/{_e(p["id"])}">{_e(p["name"])}</a>: '
                          f'{_e(p["indication"])}</li>' for p in b["products"])
        body = (f"<h1>{_e(b['name'])}</h1>\n  <p class=\"tagline\">{_e(b['description'])}</p>\n"
                f"  <h2>Our products</h2>\n  <ul>\n{items}\n  </ul>\n"
                f"  <h2>Latest news</h2>\n  <p><a href=\"{_e(prefix)}/newsroom/fy2025-results\">"
                f"{_e(b['name'])} reports fiscal 2025 results</a></p>")
    elif page["kind"] == "products":
        items = "\n".join(f'    <li><h2><a href="{_e(prefix)}/products/{_e(p["id"])}">{_e(p["name"])}</a></h2>'
                          f'<p>{_e(p["indication"])}</p></li>' for p in b["products"])
        body = f"<h1>{_e(page['title'])}</h1>\n  <ul class=\"products\">\n{items}\n  </ul>"
    elif page["kind"] == "product":
        p = page["product"]
        card = page["card"]
        ld.append(_product_ld(b, p, site.domain))
        is_safety = path.endswith("/safety")
        body = (f"<h1>{_e(card['title'])}</h1>\n"
                f"  <h2>{'Important safety information' if is_safety else 'Overview'}</h2>\n"
                f"{_paragraphs(card['text'])}\n"
                f"  <h2>Key facts</h2>\n  {_dl(_product_facts(p))}\n"
                f"  <p><a href=\"{_e(prefix)}/products/{_e(p['id'])}{'' if is_safety else '/safety'}\">"
                f"{'Back to product overview' if is_safety else 'Read the safety information'}</a></p>")
    else:
        card = page["card"]
        is_about = path == "/about"
        if is_about:
            ld.append(_org_ld(b, site.domain))
        elif path.startswith("/newsroom/"):
            ld.append({"@context": "https://schema.org", "@type": "NewsArticle", "headline": card["title"],
                       "datePublished": card["metadata"].get("updated", ""),
                       "publisher": {"@type": "Organization", "name": b["name"]}})
        body = f"<h1>{_e(card['title'])}</h1>\n"
        if is_about:
            body += f"  <h2>Who we are</h2>\n{_paragraphs(card['text'])}\n  <h2>Key facts</h2>\n  {_dl(_about_facts(b))}"
        else:
            body += f"  <h2>{_e(card['title'].split(': ')[-1].capitalize())}</h2>\n{_paragraphs(card['text'])}"
    return Response(200, (("Content-Type", "text/html; charset=utf-8"),),
                    _layout(site, prefix, page["title"], body, ld))


def _redirect(location: str) -> Response:
    body = f'<html><body>Moved: <a href="{_e(location)}">{_e(location)}</a></body></html>'.encode()
    return Response(302, (("Location", location), ("Content-Type", "text/html; charset=utf-8")), body)


def _not_found(reason: str, site: Site | None = None, prefix: str = "") -> Response:
    if site is not None:
        body = _layout(site, prefix, "Page not found",
                       f"<h1>Page not found</h1>\n  <p>{_e(reason)}</p>", [])
    else:
        body = f"<html><body><h1>Not found</h1><p>{_e(reason)}</p></body></html>".encode()
    return Response(404, (("Content-Type", "text/html; charset=utf-8"),), body)


def route(host_header: str | None, raw_path: str) -> Response:
    """Route a request by Host header (host mode) or first path segment (prefix mode)."""
    path = urlsplit(raw_path).path or "/"
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        host = host.split("]")[0] + "]"
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if host in _sites():
        return render_page(host, path, prefix="")
    parts = path.lstrip("/").split("/", 1)
    domain = parts[0].lower()
    if domain in _sites():
        rest = "/" + (parts[1] if len(parts) > 1 else "")
        return render_page(domain, rest, prefix=f"/{domain}")
    if path == "/":
        links = "".join(f'<li><a href="/{_e(d)}/">{_e(d)}</a></li>' for d in domains())
        body = f"<html><body><h1>Fictional brand sites</h1><ul>{links}</ul></body></html>".encode()
        return Response(200, (("Content-Type", "text/html; charset=utf-8"),), body)
    return _not_found(f"unknown site for {path}")


# ----------------------------------------------------------------------------- URLs
def local_url(source_url: str, base: str) -> str:
    """Rewrite a brand source URL (https://lumora.example/about) to the local server
    (`base` like "http://127.0.0.1:PORT"): "http://127.0.0.1:PORT/lumora.example/about".
    Query strings are kept, fragments dropped. ValueError for non-http(s) URLs or
    hosts that are not brand domains."""
    parts = urlsplit(source_url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {source_url!r}")
    host = (parts.hostname or "").lower()
    if host not in _sites():
        raise ValueError(f"not a brand domain served locally: {host!r}")
    b = urlsplit(base)
    if b.scheme not in ("http", "https") or not b.netloc:
        raise ValueError(f"base must be an http(s) origin, got {base!r}")
    out = f"{b.scheme}://{b.netloc}{b.path.rstrip('/')}/{host}{parts.path or '/'}"
    if parts.query:
        out += "?" + parts.query
    return out


# ----------------------------------------------------------------------------- server
class _Handler(BaseHTTPRequestHandler):
    server_version = "AttestaFictionalSites/1.0"
    sys_version = ""

    def _send(self, head_only: bool) -> None:
        resp = route(self.headers.get("Host"), self.path)
        self.send_response(resp.status)
        for k, v in resp.headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head_only:
            self.wfile.write(resp.body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._send(head_only=False)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._send(head_only=True)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's signature
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Server6(_Server):
    address_family = socket.AF_INET6


_SERVERS: dict[int, tuple[ThreadingHTTPServer, threading.Thread]] = {}
_LOCK = threading.Lock()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_sites(host: str = "127.0.0.1", port: int = 0, *, allow_non_loopback: bool = False) -> int:
    """Start the fictional brand-site server in a daemon thread; returns the bound port.
    Binds loopback only unless `allow_non_loopback=True`. Stop it with `stop_sites(port)`."""
    if not allow_non_loopback and not _is_loopback(host):
        raise ValueError(f"refusing to bind non-loopback address {host!r}")
    _sites()  # load data before accepting connections
    cls = _Server6 if ":" in host else _Server
    server = cls((host, port), _Handler)
    bound = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                         name=f"attesta-sites-{bound}", daemon=True)
    t.start()
    with _LOCK:
        _SERVERS[bound] = (server, t)
    return bound


def stop_sites(port: int) -> None:
    """Stop a server started by `serve_sites` (no-op if unknown)."""
    with _LOCK:
        entry = _SERVERS.pop(port, None)
    if entry:
        server, t = entry
        server.shutdown()
        server.server_close()
        t.join(timeout=5)


class SiteServer:
    """Context manager: `with SiteServer() as s: s.url("https://lumora.example/about")`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.requested_port = host, port
        self.port = 0

    @property
    def base_url(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{h}:{self.port}"

    def url(self, source_url: str) -> str:
        return local_url(source_url, self.base_url)

    def __enter__(self) -> "SiteServer":
        self.port = serve_sites(self.host, self.requested_port)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_sites(self.port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Serve the fictional brand websites locally.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8088)
    args = ap.parse_args(argv)
    port = serve_sites(args.host, args.port)
    print(f"serving {', '.join(domains())} at http://{args.host}:{port}/<domain>/<path>", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_sites(port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
