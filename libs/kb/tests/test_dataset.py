from __future__ import annotations

import collections
import re
from urllib.parse import urlsplit

import pytest

from attesta_kb import (
    SPLITS,
    cards_by_id,
    get_brand,
    load_brands,
    load_cards,
    load_lookalikes,
    load_queries,
)

pytestmark = pytest.mark.unit

KINDS = {"medicine", "condition", "procedure", "brand", "product"}
BRAND_IDS = {
    "lumora": ("Lumora Therapeutics", "lumora.example"),
    "kestrel": ("Kestrel Biosciences", "kestrelbio.example"),
    "halvane": ("Halvane Diagnostics", "halvane.example"),
    "orbisan": ("Orbisan Pharma", "orbisan.example"),
    "thessaly": ("Thessaly Medical Devices", "thessalymed.example"),
    "corvina": ("Corvina Health", "corvinahealth.example"),
}


@pytest.fixture(scope="module")
def cards() -> list[dict]:
    return load_cards()


@pytest.fixture(scope="module")
def brands() -> list[dict]:
    return load_brands()


# ----------------------------------------------------------------------------- cards
def test_at_least_500_cards_with_unique_ids(cards):
    assert len(cards) >= 520
    ids = [c["card_id"] for c in cards]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids)


def test_card_shape(cards):
    for c in cards:
        assert set(c) == {"card_id", "title", "text", "source", "metadata"}, c["card_id"]
        assert isinstance(c["title"], str) and c["title"]
        n = len(c["text"].split())
        assert 60 <= n <= 250, (c["card_id"], n)


def test_every_source_is_https_on_example_tld(cards):
    for c in cards:
        u = urlsplit(c["source"])
        assert u.scheme == "https", c["card_id"]
        assert u.hostname and u.hostname.endswith(".example"), c["card_id"]
        assert u.path and u.path != "/"


def test_metadata_license_and_kind(cards):
    licenses = collections.Counter()
    for c in cards:
        md = c["metadata"]
        assert isinstance(md, dict)
        assert isinstance(md["license"], str) and md["license"], c["card_id"]
        assert md["kind"] in KINDS
        assert md["lang"] == "en"
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", md["updated"])
        for k, v in md.items():
            assert isinstance(v, (str, int, float, bool)), (c["card_id"], k)
        licenses[md["license"]] += 1
    assert len(licenses) >= 4  # a realistic mix


def test_every_kind_is_represented(cards):
    kinds = collections.Counter(c["metadata"]["kind"] for c in cards)
    assert set(kinds) == KINDS
    assert kinds["medicine"] >= 150 and kinds["condition"] >= 100 and kinds["procedure"] >= 100


def test_card_ids_match_kinds(cards):
    prefix = {"medicine": "med-", "condition": "cond-", "procedure": "proc-", "product": "product-"}
    for c in cards:
        k = c["metadata"]["kind"]
        if k == "brand":
            assert c["card_id"].startswith(("brand-", "company-"))
        else:
            assert c["card_id"].startswith(prefix[k])


def test_near_miss_pairs_exist(cards):
    idx = {c["card_id"]: c for c in cards}
    assert "40 mg once daily" in idx["med-velnorex"]["text"].replace("one 40 mg tablet once daily", "40 mg once daily")
    assert "70 mg" in idx["med-velnorax"]["text"]
    assert idx["med-velnorex"]["metadata"]["brand_id"] == "lumora"
    assert idx["med-velnorax"]["metadata"]["brand_id"] == "kestrel"
    assert "cond-varnholt-cardiomyopathy" in idx and "cond-varnholt-valvulopathy" in idx
    assert "proc-varnholt-valve-plication" in idx
    xr = [c for c in cards if c["metadata"]["kind"] == "medicine" and c["card_id"].endswith("-xr")]
    assert len(xr) >= 5


def test_loaders_return_copies(cards):
    first = load_cards()
    first[0]["metadata"]["license"] = "mutated"
    assert load_cards()[0]["metadata"]["license"] != "mutated"


# ----------------------------------------------------------------------------- brands
def test_tracked_brands_exact(brands):
    assert {b["id"] for b in brands} == set(BRAND_IDS)
    for b in brands:
        name, domain = BRAND_IDS[b["id"]]
        assert b["name"] == name
        assert b["domains"] == [domain]
        assert len(b["aliases"]) >= 2 and name not in b["aliases"]
        assert 2 <= len(b["products"]) <= 4
        assert all(isinstance(b[k], str) and b[k] for k in ("headquarters", "ceo", "description"))
        assert isinstance(b["founded"], int)
        for s in b["sources"]:
            assert urlsplit(s).scheme == "https" and urlsplit(s).hostname == domain
        assert f"https://{domain}/about" in b["sources"]
        for f in b["facts"]:
            assert set(f) >= {"type", "value", "statement", "source"}
            assert f["source"] in b["sources"]


def test_competitors(brands):
    comp = {b["id"]: set(b["competitors"]) for b in brands}
    for a, others in comp.items():
        assert a not in others
        assert others <= set(BRAND_IDS)
        for o in others:
            assert a in comp[o], f"competition {a}-{o} must be symmetric"
    assert {"orbisan", "kestrel"} <= comp["lumora"] and "kestrel" in comp["orbisan"]
    assert comp["halvane"] == {"thessaly"} and "corvina" in comp["lumora"]


def test_brand_and_product_cards_agree_with_brands_json(cards, brands):
    idx = {c["card_id"]: c for c in cards}
    by_id = {b["id"]: b for b in brands}
    for c in cards:
        md = c["metadata"]
        if md["kind"] in ("brand", "product") and "brand_id" in md:
            b = by_id[md["brand_id"]]
            assert urlsplit(c["source"]).hostname in b["domains"]
            assert c["source"] in b["sources"]
        if md["kind"] == "product":
            assert "brand_id" in md
            assert md["product_id"] in {p["id"] for p in by_id[md["brand_id"]]["products"]}
    for b in brands:
        about = idx[f"brand-{b['id']}-about"]["text"]
        for needle in (str(b["founded"]), b["headquarters"], b["ceo"], b["description"], f"{b['employees']:,}"):
            assert needle in about, (b["id"], needle)
        for p in b["products"]:
            assert p["name"] in about
            page = idx[f"product-{p['id']}"]
            assert page["metadata"]["brand_id"] == b["id"]
            assert p["name"] in page["text"] and str(p["approved"]) in page["text"]
            assert b["name"] in page["text"]
            if p.get("generic_name"):
                mono = idx[f"med-{p['id']}"]
                assert mono["metadata"]["brand_id"] == b["id"]
                assert b["name"] in mono["text"] and str(p["approved"]) in mono["text"]
                assert p["generic_name"] in mono["text"]
        results = idx[f"brand-{b['id']}-results-fy2025"]["text"]
        assert b["revenue_fy2025"] in results
        for other in b["competitors"]:
            assert by_id[other]["name"] in results
        for cid in b["card_ids"]:
            assert idx[cid]["metadata"]["brand_id"] == b["id"]


def test_every_brand_card_is_tracked_or_flagged(cards, brands):
    tracked_names = {b["name"] for b in brands}
    for c in cards:
        md = c["metadata"]
        if md["kind"] == "brand" and "brand_id" not in md:
            assert md.get("tracked") is False
            assert md["subject"] not in tracked_names


def test_lookalikes_and_get_brand(brands):
    looks = load_lookalikes()
    assert {x["not"] for x in looks} == set(BRAND_IDS)
    ids = set(cards_by_id())
    assert all(x["card_id"] in ids for x in looks)
    assert get_brand("lumora")["name"] == "Lumora Therapeutics"
    with pytest.raises(KeyError):
        get_brand("nope")


# ----------------------------------------------------------------------------- queries
def test_queries_count_and_relevance():
    qs = load_queries()
    assert len(qs) >= 320
    ids = set(cards_by_id())
    qids = [q["query_id"] for q in qs]
    assert len(qids) == len(set(qids))
    for q in qs:
        assert set(q) >= {"query_id", "question", "relevant", "split"}
        assert q["relevant"] and all(g in (1, 2) for g in q["relevant"].values())
        assert any(g == 2 for g in q["relevant"].values()), q["query_id"]
        for cid in q["relevant"]:
            assert cid in ids, (q["query_id"], cid)


def test_questions_are_not_card_titles(cards):
    titles = {c["title"].strip().lower().rstrip("?") for c in cards}
    for q in load_queries():
        assert q["question"].strip().lower().rstrip("?") not in titles


def test_query_kinds_and_near_misses():
    qs = load_queries()
    kinds = collections.Counter(q["kind"] for q in qs)
    assert set(kinds) == KINDS
    assert sum("near_miss" in q["tags"] for q in qs) >= 50
    lumora = [q for q in qs if "Lumora migraine pill" in q["question"]]
    assert lumora and lumora[0]["relevant"]["med-velnorex"] == 2
    assert all("med-velnorax" not in q["relevant"] for q in lumora)


def test_splits_disjoint_stratified_and_deterministic():
    qs = load_queries()
    per = {s: load_queries(s) for s in SPLITS}
    sets = {s: {q["query_id"] for q in v} for s, v in per.items()}
    assert not sets["train"] & sets["dev"] and not sets["train"] & sets["test"] and not sets["dev"] & sets["test"]
    assert sum(len(v) for v in sets.values()) == len(qs)
    for kind in KINDS:
        group = [q for q in qs if q["kind"] == kind]
        n_train = sum(q["split"] == "train" for q in group)
        assert abs(n_train / len(group) - 0.6) < 0.05, kind
        assert any(q["split"] == "test" for q in group), kind
    with pytest.raises(ValueError):
        load_queries("validation")
