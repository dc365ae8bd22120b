"""ADR-0024 enrichment: every pinned rule with its exact value, the KB's degraded-card fixture,
and property tests that the helper never raises."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attesta_answer.domain.citations import (
    _enrich,
    license_from,
    score_from,
    source_url_from,
)
from attesta_contracts.chat import ChunkScores, Citation, ContextChunk, HybridPath
from attesta_kb.dataset import load_cards
from attesta_kb_tools.fixtures import load_degraded_cards

pytestmark = pytest.mark.unit

FULL = HybridPath.FULL


def chunk(card_id: str = "card-a", *, source=None, metadata=None, logit=None) -> ContextChunk:
    return ContextChunk(id=card_id, card_id=card_id, title="t", text="some text here",
                        source=source, metadata=metadata, scores=ChunkScores(rerank_logit=logit))


def enrich_one(ch: ContextChunk, path=FULL) -> dict:
    [cited] = _enrich([Citation(card_id=ch.card_id, span="some text")], [ch], path)
    return cited.model_dump(mode="json")


# -- the pinned values -------------------------------------------------------------------------
@pytest.mark.parametrize(("logit", "expected"), [
    (0.0, 50.0), (30.0, 100.0), (-30.0, 0.0), (1.0, 73.0), (-1.0, 27.0), (4.0, 98.0),
    (1e308, 100.0), (-1e308, 0.0), (-745.2, 0.0), (-800, 0.0), (710, 100.0), (0, 50.0),
])
def test_score_is_round_100_sigmoid_clamped(logit, expected):
    score = score_from(logit, FULL)
    assert score == expected
    assert isinstance(score, float)


@pytest.mark.parametrize("logit", [math.nan, math.inf, -math.inf, None, "3.0", True, False,
                                   10**400, [1.0], {"x": 1}])
def test_score_absent_for_non_finite_or_non_numbers(logit):
    assert score_from(logit, FULL) is None


@pytest.mark.parametrize("path", [HybridPath.RRF_ONLY, HybridPath.DENSE_ONLY, None, "", "FULL",
                                  "rrf", 1, object()])
def test_score_only_on_the_full_path(path):
    assert score_from(5.0, path) is None


def test_plain_string_full_label_counts_as_full():
    assert score_from(0.0, "full") == 50.0


@pytest.mark.parametrize(("source", "expected"), [
    ("https://ref.medvault.example/monographs/velnorex", "https://ref.medvault.example/monographs/velnorex"),
    ("http://a.example", "http://a.example"),
    ("HTTPS://Ref.Example/Path?q=1#Frag", "https://ref.example/Path?q=1#Frag"),
    ("  https://a.example/x \n", "https://a.example/x"),  # WHATWG trims C0 + space at the ends
    ("https://a.example:8443/x", "https://a.example:8443/x"),
    ("https://127.0.0.1/x", "https://127.0.0.1/x"),
    ("https://[::1]:8080/x", "https://[::1]:8080/x"),
])
def test_source_url_kept_for_absolute_http_urls(source, expected):
    assert source_url_from(source) == expected


@pytest.mark.parametrize("source", [
    "javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
    "jav\nascript:alert(1)", "data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)",
    "ftp://files.medvault.example/x.pdf", "file:///etc/passwd", "//evil.example/x", "/relative/path",
    "relative.html", "", "   ", None, 42, 3.5, ["https://a.example"], {"url": "https://a.example"},
    "https:", "https://", "https:///path", "https:evil.example", "https:/evil.example",
    "ht\ttps://evil.example", "https://evil\t.example", "https://ev il.example",
    "https://a.example/\u202egnp.exe", "https://trusted.example@evil.example/",
    "https://user:pw@a.example/", "https://a.example\\@evil.example", "https:\\\\evil.example",
    "https://%65vil.example/", "https://a.example:99999/", "https://a.example:port/",
    "https://[::1/", "https://exa_mple.com/", "https://-a.example/", "https://пример.рф/",
    "https://a.example/" + "x" * 3000, "https://a..example/",
])
def test_source_url_absent_for_everything_else(source):
    assert source_url_from(source) is None


@pytest.mark.parametrize(("metadata", "expected"), [
    ({"license": "CC-BY-4.0"}, "CC-BY-4.0"),
    ({"license": "  CC0-1.0 "}, "CC0-1.0"),
    ({"license": 42}, None),
    ({"license": ""}, None),
    ({"license": "   "}, None),
    ({"license": None}, None),
    ({"license": ["CC-BY-4.0"]}, None),
    ({"license": "CC\x00BY"}, None),
    ({"license": "x" * 201}, None),
    ({}, None),
    ({"licence": "CC-BY-4.0"}, None),
    ("license=CC-BY-4.0; kind=medicine", None),
    (None, None),
    ([("license", "CC-BY-4.0")], None),
])
def test_license_only_from_a_dict_with_a_non_empty_string(metadata, expected):
    assert license_from(metadata) == expected


# -- the helper as a whole -----------------------------------------------------------------------
def test_pinned_examples_through_the_helper():
    good = {"license": "CC-BY-4.0"}
    assert enrich_one(chunk(source="https://a.example/x", metadata=good, logit=0.0)) == {
        "card_id": "card-a", "span": "some text", "source_url": "https://a.example/x",
        "source_license": "CC-BY-4.0", "retrieved_score": 50.0}
    assert enrich_one(chunk(logit=30.0))["retrieved_score"] == 100.0
    assert enrich_one(chunk(logit=-30.0))["retrieved_score"] == 0.0
    assert "retrieved_score" not in enrich_one(chunk(logit=math.nan))
    assert "retrieved_score" not in enrich_one(chunk(logit=math.inf))
    assert "source_url" not in enrich_one(chunk(source="javascript:alert(1)"))
    assert "source_license" not in enrich_one(chunk(metadata={"license": 42}))


def test_rrf_only_dense_only_and_absent_label_give_url_and_licence_but_no_score():
    ch = chunk(source="https://a.example/x", metadata={"license": "CC0-1.0"}, logit=2.0)
    for path in (HybridPath.RRF_ONLY, HybridPath.DENSE_ONLY, None):
        assert enrich_one(ch, path) == {"card_id": "card-a", "span": "some text",
                                        "source_url": "https://a.example/x",
                                        "source_license": "CC0-1.0"}


def test_lookup_is_by_card_id_first_chunk_wins_and_missing_chunk_gives_nothing():
    first = chunk("c1", source="https://first.example/", logit=1.0)
    second = chunk("c1", source="https://second.example/", logit=-1.0)
    other = chunk("c2", source="https://other.example/")
    cited = _enrich([Citation(card_id="c1", span="ab cd"), Citation(card_id="zz", span="ab cd")],
                    [first, second, other], FULL)
    assert cited[0].source_url == "https://first.example/" and cited[0].retrieved_score == 73.0
    assert cited[1].model_dump() == {"card_id": "zz", "span": "ab cd"}


def test_fields_set_upstream_never_survive_enrichment():
    forged = Citation(card_id="c1", span="x y", source_url="https://evil.example/",
                      source_license="forged", retrieved_score=99.0)
    [cited] = _enrich([forged], [chunk("c1")], FULL)
    assert cited.model_dump() == {"card_id": "c1", "span": "x y"}


def test_degraded_kb_cards_each_degrade_one_field_only():
    """The KB's own broken-card fixture: every card still cites, only its bad field is absent."""
    degraded = load_degraded_cards()
    chunks = [ContextChunk(id=c["card_id"], card_id=c["card_id"], title=c["title"], text=c["text"],
                           source=c.get("source"), metadata=c.get("metadata"),
                           scores=ChunkScores(rerank_logit=1.0)) for c in degraded]
    cited = {c.card_id: c.model_dump(mode="json") for c in _enrich(
        [Citation(card_id=c["card_id"], span="x y") for c in degraded], chunks, FULL)}
    for card_id in ("degraded-missing-source", "degraded-empty-source", "degraded-null-source",
                    "degraded-javascript-source", "degraded-ftp-source"):
        assert "source_url" not in cited[card_id]
        assert cited[card_id]["source_license"] == "CC-BY-4.0"
        assert cited[card_id]["retrieved_score"] == 73.0
    for card_id in ("degraded-license-int", "degraded-license-missing", "degraded-metadata-not-dict"):
        assert "source_license" not in cited[card_id]
        assert cited[card_id]["source_url"].startswith("https://ref.medvault.example/")


def test_every_shipped_kb_card_enriches_fully():
    cards = load_cards()
    chunks = [ContextChunk(id=c["card_id"], card_id=c["card_id"], text=c["text"], source=c["source"],
                           metadata=c["metadata"]) for c in cards]
    cited = _enrich([Citation(card_id=c["card_id"]) for c in cards], chunks, HybridPath.RRF_ONLY)
    assert all(c.source_url == card["source"] and c.source_license == card["metadata"]["license"]
               and c.retrieved_score is None for c, card in zip(cited, cards, strict=True))


# -- never raises: property tests over arbitrary contexts, metadata and citations ----------------
class Hostile:
    """An object whose every attribute access and comparison raises."""

    def __getattr__(self, name):
        raise RuntimeError(f"hostile attribute {name}")

    def __eq__(self, other):
        raise RuntimeError("hostile eq")

    def __hash__(self):
        raise RuntimeError("hostile hash")

    def __str__(self):
        raise RuntimeError("hostile str")


class HostileDict(dict):
    def get(self, *args, **kwargs):
        raise RuntimeError("hostile get")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
urlish = st.one_of(
    st.text(), st.from_regex(r"(?i)(https?|javascript|data|ftp)?:?/{0,3}[\w.\-\t\n@:\[\]%\\]{0,30}(/\S{0,20})?"),
    st.sampled_from(["https://a.example/x", "javascript:alert(1)", "", " http://b.example "]),
)
sources = st.one_of(urlish, json_values, st.builds(Hostile))
metadatas = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(["license", "kind", "x"]), json_values | st.text(), max_size=3),
    st.builds(lambda v: HostileDict(license=v), st.text()),
    st.builds(Hostile),
)
logits = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                   st.integers(min_value=-(10**500), max_value=10**500), st.text(max_size=3),
                   st.builds(Hostile))
card_ids = st.sampled_from(["a", "b", "c", "", " a"]) | st.text(max_size=5)
paths = st.one_of(st.none(), st.sampled_from(list(HybridPath)), st.text(max_size=8), st.integers(),
                  st.builds(Hostile))


@st.composite
def raw_chunks(draw):
    """Chunks built without validation: the helper must survive whatever a bug upstream sends."""
    scores = draw(st.one_of(st.builds(ChunkScores.model_construct, rerank_logit=logits),
                            st.none(), st.builds(Hostile)))
    return ContextChunk.model_construct(
        id=draw(card_ids), card_id=draw(card_ids | st.builds(Hostile) | st.integers()),
        title="t", text=draw(st.text(max_size=20)), source=draw(sources),
        metadata=draw(metadatas), scores=scores)


citations = st.one_of(
    st.builds(Citation, card_id=st.sampled_from(["a", "b", "c"]), span=st.text(max_size=10)),
    st.builds(Citation.model_construct, card_id=card_ids | st.builds(Hostile), span=st.text()),
    st.builds(Hostile),
)
contexts = st.one_of(st.lists(raw_chunks(), max_size=5), st.none(), st.builds(Hostile),
                     st.integers())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cites=st.lists(citations, max_size=5), context=contexts, path=paths)
def test_enrich_never_raises_and_returns_one_citation_per_input(cites, context, path):
    out = _enrich(cites, context, path)
    assert len(out) == len(cites)
    for before, after in zip(cites, out, strict=True):
        if (isinstance(after, Citation) and isinstance(before, Citation)
                and isinstance(before.card_id, str)):
            assert after.card_id == before.card_id and after.span == before.span
            dumped = after.model_dump(mode="json")
            if after.retrieved_score is not None:
                assert 0.0 <= after.retrieved_score <= 100.0
                assert after.retrieved_score == int(after.retrieved_score)
                assert path == HybridPath.FULL
            if after.source_url is not None:
                assert after.source_url.startswith(("http://", "https://"))
            json.dumps(dumped)  # always serializable


@settings(max_examples=300, deadline=None)
@given(source=sources, metadata=metadatas, logit=logits, path=paths)
def test_each_field_guard_is_total(source, metadata, logit, path):
    url = _guarded_call(source_url_from, source)
    lic = _guarded_call(license_from, metadata)
    score = _guarded_call(score_from, logit, path)
    assert url is None or (isinstance(url, str) and url.split(":", 1)[0] in ("http", "https"))
    assert lic is None or (isinstance(lic, str) and lic.strip() == lic and lic)
    assert score is None or (isinstance(score, float) and 0.0 <= score <= 100.0)


def _guarded_call(fn, *args):
    """The field functions may raise on hostile objects (the helper guards each call); on
    ordinary values they must not."""
    if any(isinstance(a, Hostile | HostileDict) for a in args):
        try:
            return fn(*args)
        except RuntimeError:
            return None
    return fn(*args)


@settings(max_examples=200, deadline=None)
@given(logit=st.floats(allow_nan=False, allow_infinity=False))
def test_score_is_monotonic_integer_valued_and_bounded(logit):
    score = score_from(logit, FULL)
    assert score == float(round(score)) and 0.0 <= score <= 100.0
    assert score_from(logit + 1.0, FULL) >= score if math.isfinite(logit + 1.0) else True
