"""Ground-truth extraction: turn one fetched brand page into candidate facts (pure, no I/O).

Rules (published in docs/classifier.md):
1. JSON-LD structured data (``<script type="application/ld+json">``): for each object (also inside
   ``@graph`` and lists) of a known type we emit one ``structured`` fact per meaningful property,
   phrased as a sentence ("Lumora Therapeutics — founding date: 2009"). Organization: name and
   alternate names, description, foundingDate, address, numberOfEmployees, employees with job
   titles, products offered. Product/Drug: description, non-proprietary name, dose, release
   date, brand/manufacturer. NewsArticle: headline and date. Unknown types: name+description.
2. Headings: ``<h1>`` and ``<h2>`` inside the page's main content, except generic section titles
   (``heading`` facts).
3. Definition lists: each ``<dt>``/``<dd>`` pair becomes "<dt>: <dd>" (``definition`` facts),
   prefixed with the page's ``<h1>`` so the fact says what it is about.
4. Paragraphs: ``<p>`` inside the main content with at least 8 words (``paragraph`` facts).
Boilerplate is skipped: ``<nav>``, ``<header>``, ``<footer>``, ``<aside>``, ``<form>``,
``<script>``/``<style>`` and cookie/dialog banners (``role=dialog``). When a page has a
``<main>`` element only its content counts; otherwise the whole body (minus boilerplate) does.
Text is HTML-unescaped and whitespace-collapsed; duplicate texts on a page are emitted once.

A fact's id is derived from (workspace, brand, type, source URL, text), so fetching the same
page again yields the same ids and a refresh that changes nothing writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser

_SKIP_TAGS = {"nav", "header", "footer", "aside", "form", "script", "style", "noscript",
              "template", "svg", "button", "select", "textarea"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
         "source", "track", "wbr"}
GENERIC_HEADINGS = {"overview", "key facts", "who we are", "our products", "latest news",
                    "stay informed", "page not found", "contents", "menu", "search", "share",
                    "related", "more", "read more", "contact", "contact us"}
_IMPLICIT_END = {"p", "dt", "dd", "li"}
MIN_PARAGRAPH_WORDS = 8
MAX_FACT_CHARS = 2000


@dataclass(frozen=True)
class ExtractedFact:
    type: str  # structured | heading | definition | paragraph
    text: str


def normalize(text: str) -> str:
    return " ".join(text.split())


def fact_id(workspace_id: str, brand_id: str, type_: str, source_url: str, text: str) -> str:
    digest = hashlib.sha256("\x1f".join(
        (workspace_id, brand_id, type_, source_url, normalize(text))).encode("utf-8")).hexdigest()
    return f"f_{digest[:32]}"


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.skip_depth = 0  # >0 while inside boilerplate
        self.main_depth = 0
        self.saw_main = False
        self.jsonld: list[str] = []
        self._jsonld_buf: list[str] | None = None
        self._text: list[str] | None = None
        self._text_tag: str | None = None
        self._text_in_main = False
        self.blocks: list[tuple[str, str, bool]] = []  # (tag, text, inside <main>)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if tag == "script" and a.get("type", "").lower() == "application/ld+json":
            self._jsonld_buf = []
        if tag in _VOID:
            return
        if tag in _IMPLICIT_END and self._text_tag in _IMPLICIT_END and self._text_tag in self.stack:
            self.handle_endtag(self._text_tag)  # <dt>a<dd>b, <p>a<p>b: HTML's implied end tags
        self.stack.append(tag)
        boiler = tag in _SKIP_TAGS or a.get("role", "").lower() in ("dialog", "navigation",
                                                                     "banner", "contentinfo")
        if boiler or self.skip_depth:
            self.skip_depth += 1
        if tag == "main":
            self.main_depth += 1
            self.saw_main = True
        if tag in ("h1", "h2", "p", "dt", "dd", "li") and not self.skip_depth and self._text is None:
            self._text, self._text_tag, self._text_in_main = [], tag, self.main_depth > 0

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if tag == "script" and self._jsonld_buf is not None:
            self.jsonld.append("".join(self._jsonld_buf))
            self._jsonld_buf = None
        if tag not in self.stack:
            return  # stray end tag
        while self.stack:  # close implicitly-closed elements too
            top = self.stack.pop()
            if self.skip_depth:
                self.skip_depth -= 1
            if top == "main":
                self.main_depth -= 1
            if self._text is not None and top == self._text_tag:
                text = normalize("".join(self._text))
                if text:
                    self.blocks.append((top, text, self._text_in_main))
                self._text, self._text_tag = None, None
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._jsonld_buf is not None:
            self._jsonld_buf.append(data)
            return
        if self._text is not None and not self.skip_depth:
            self._text.append(data)


def _as_list(value: object) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _name_of(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return None


def _scalar(value: object) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        for key in ("value", "name", "doseValue"):
            if key in value and isinstance(value[key], (str, int, float)):
                return str(value[key])
    return None


def _structured(obj: dict) -> list[str]:
    types = {t.lower() for t in _as_list(obj.get("@type")) if isinstance(t, str)}
    name = _name_of(obj.get("name")) or _name_of(obj.get("headline"))
    if not name:
        return []
    out: list[str] = []

    def add(label: str, value: object) -> None:
        v = _scalar(value)
        if v and normalize(v):
            out.append(f"{name} — {label}: {normalize(v)}")

    if types & {"organization", "corporation", "localbusiness"}:
        alt = [a for a in _as_list(obj.get("alternateName")) if isinstance(a, str)]
        if alt:
            out.append(f"{name} — also known as: {', '.join(alt)}")
        add("description", obj.get("description"))
        add("founding date", obj.get("foundingDate"))
        add("website", obj.get("url"))
        addr = obj.get("address")
        if isinstance(addr, dict):
            place = ", ".join(str(addr[k]) for k in ("addressLocality", "addressRegion",
                                                    "addressCountry") if addr.get(k))
            if place:
                out.append(f"{name} — headquarters: {place}")
        add("number of employees", obj.get("numberOfEmployees"))
        for person in _as_list(obj.get("employee")) + _as_list(obj.get("founder")):
            pname = _name_of(person)
            if pname and isinstance(person, dict) and person.get("jobTitle"):
                out.append(f"{name} — {normalize(str(person['jobTitle']))}: {pname}")
        offered = [_name_of(o.get("itemOffered")) for o in _as_list(obj.get("makesOffer"))
                   if isinstance(o, dict)]
        offered = [o for o in offered if o]
        if offered:
            out.append(f"{name} — products: {', '.join(offered)}")
    elif types & {"product", "drug", "service", "softwareapplication"}:
        add("description", obj.get("description"))
        add("category", obj.get("category"))
        add("non-proprietary name", obj.get("nonProprietaryName"))
        add("dose", obj.get("doseSchedule"))
        add("release date", obj.get("releaseDate"))
        for key, label in (("brand", "brand"), ("manufacturer", "manufacturer")):
            n = _name_of(obj.get(key))
            if n:
                out.append(f"{name} — {label}: {n}")
    elif types & {"newsarticle", "article", "blogposting"}:
        date = _scalar(obj.get("datePublished"))
        out.append(f"{name}" + (f" (published {date})" if date else ""))
    else:
        add("description", obj.get("description"))
    return out


def _walk_jsonld(value: object) -> list[dict]:
    if isinstance(value, list):
        return [o for v in value for o in _walk_jsonld(v)]
    if isinstance(value, dict):
        return [value] + _walk_jsonld(value.get("@graph"))
    return []


def extract_facts(html: str) -> list[ExtractedFact]:
    """Candidate facts of one HTML page, in document order, without duplicates."""
    parser = _PageParser()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 - html.parser is lenient; a broken page yields what parsed
        pass
    facts: list[ExtractedFact] = []
    for raw in parser.jsonld:
        try:
            data = json.loads(raw)
        except ValueError:
            continue  # a broken JSON-LD block is skipped, the rest of the page still counts
        for obj in _walk_jsonld(data):
            facts += [ExtractedFact("structured", t) for t in _structured(obj)]
    blocks = [b for b in parser.blocks if b[2] or not parser.saw_main]
    title = next((text for tag, text, _ in blocks if tag == "h1"), None)
    pending_dt: str | None = None
    for tag, text, _ in blocks:
        if tag in ("h1", "h2"):
            if text.lower().strip(" :") not in GENERIC_HEADINGS:
                facts.append(ExtractedFact("heading", text))
        elif tag == "dt":
            pending_dt = text
        elif tag == "dd" and pending_dt:
            prefix = f"{title} — " if title else ""
            facts.append(ExtractedFact("definition", f"{prefix}{pending_dt}: {text}"))
            pending_dt = None
        elif tag == "p" and len(text.split()) >= MIN_PARAGRAPH_WORDS:
            facts.append(ExtractedFact("paragraph", text))
    seen: set[tuple[str, str]] = set()
    out = []
    for f in facts:
        text = normalize(f.text)[:MAX_FACT_CHARS]
        if (f.type, text) in seen or not text:
            continue
        seen.add((f.type, text))
        out.append(ExtractedFact(f.type, text))
    return out


_CHARSET = re.compile(r"charset=([\w.-]+)", re.I)


def decode_body(body: bytes, content_type: str | None) -> str:
    """Bytes to text by the declared charset (UTF-8 when absent or unknown; bad bytes replaced)."""
    charset = "utf-8"
    if content_type:
        m = _CHARSET.search(content_type)
        if m:
            charset = m.group(1)
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")
