"""Fact extraction rules on the KB's local brand pages and on hostile HTML."""

from __future__ import annotations

import pytest

from attesta_classifier.domain.extraction import decode_body, extract_facts, fact_id
from attesta_kb_tools.sites import route

pytestmark = pytest.mark.unit


def test_about_page_yields_structured_definition_heading_and_paragraph_facts():
    facts = extract_facts(route(None, "/lumora.example/about").body.decode())
    by_type: dict[str, list[str]] = {}
    for f in facts:
        by_type.setdefault(f.type, []).append(f.text)
    assert "Lumora Therapeutics — founding date: 2009" in by_type["structured"]
    assert "Lumora Therapeutics — Chief Executive Officer: Marta Kessling-Soares" in by_type["structured"]
    assert any(t.endswith("Headquarters: Lisbon, Portugal") for t in by_type["definition"])
    assert by_type["heading"] == ["About Lumora Therapeutics"]  # "Who we are"/"Key facts" are generic
    assert any("biopharmaceutical company headquartered in Lisbon" in t for t in by_type["paragraph"])
    text = " ".join(f.text for f in facts)
    for boilerplate in ("cookies", "Subscribe", "All rights reserved", "Privacy policy", "dataLayer"):
        assert boilerplate not in text


def test_hostile_html_is_contained():
    html = """<html><body><nav><p>Home About Products Careers Investors Contact Search us</p></nav>
    <div role="dialog"><p>We use cookies to improve your experience on this website today.</p></div>
    <script type="application/ld+json">{ not json</script>
    <script type="application/ld+json">{"@graph": [{"@type": "Organization", "name": "Acme",
      "foundingDate": 1999}]}</script>
    <main><h1>Acme &amp; Sons</h1><p>Acme &amp; Sons builds <b>very</b> reliable anvils for
    road runners everywhere.</p><p>Too short.</p><dl><dt>Founded<dd>1999</dl>
    <script>alert("not a fact, not even one bit of it here")</script></main>"""
    facts = [(f.type, f.text) for f in extract_facts(html)]
    assert ("structured", "Acme — founding date: 1999") in facts
    assert ("heading", "Acme & Sons") in facts
    assert ("paragraph", "Acme & Sons builds very reliable anvils for road runners everywhere.") in facts
    assert ("definition", "Acme & Sons — Founded: 1999") in facts
    assert not any("cookies" in t or "alert" in t or "Careers" in t or "Too short" in t for _, t in facts)


def test_fact_ids_are_stable_and_scoped():
    a = fact_id("ws", "b", "paragraph", "https://b.example/", "Some  text")
    assert a == fact_id("ws", "b", "paragraph", "https://b.example/", "Some text")
    assert a != fact_id("ws2", "b", "paragraph", "https://b.example/", "Some text")


def test_decode_body_charsets():
    assert decode_body("café".encode("latin-1"), "text/html; charset=ISO-8859-1") == "café"
    assert decode_body(b"\xff ok", "text/html; charset=bogus") == "\ufffd ok"
