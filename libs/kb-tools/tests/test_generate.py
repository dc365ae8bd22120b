from __future__ import annotations

import itertools
import time
from urllib.parse import urlsplit

import pytest

from attesta_kb import load_brands
from attesta_kb_tools.generate import scale, scale_base_size

pytestmark = pytest.mark.unit


def test_deterministic_and_prefix_stable():
    a = list(scale(1200, seed=0))
    b = list(scale(1200, seed=0))
    assert a == b
    assert list(scale(300, seed=0)) == a[:300]
    c = list(scale(300, seed=1))
    assert [x["text"] for x in c] != [x["text"] for x in a[:300]]


def test_shape_ids_and_sources():
    cards = list(scale(2 * scale_base_size() + 7, seed=3))
    ids = [c["card_id"] for c in cards]
    assert len(ids) == len(set(ids))
    for c in cards:
        assert set(c) == {"card_id", "title", "text", "source", "metadata"}
        u = urlsplit(c["source"])
        assert u.scheme == "https" and u.hostname.endswith(".example")
        md = c["metadata"]
        assert isinstance(md["license"], str)
        assert md["kind"] in ("medicine", "condition", "procedure")
        assert "brand_id" not in md
        assert md["derived_from"] and md["scale_seed"] == 3
        assert 40 <= len(c["text"].split()) <= 300


def test_never_mentions_tracked_brands_or_products():
    forbidden = set()
    for b in load_brands():
        forbidden.add(b["name"])
        forbidden.update(p["name"] for p in b["products"])
    for c in itertools.islice(scale(5000, seed=0), None):
        for f in forbidden:
            assert f not in c["text"], (c["card_id"], f)


def test_renames_consistently_within_a_generation():
    n = scale_base_size()
    gen0 = list(scale(n, seed=0))
    gen1 = list(scale(2 * n, seed=0))[n:]
    assert {c["metadata"]["derived_from"] for c in gen0} == {c["metadata"]["derived_from"] for c in gen1}
    s0 = {c["metadata"]["subject"] for c in gen0}
    s1 = {c["metadata"]["subject"] for c in gen1}
    assert len(s0 & s1) < 0.02 * n  # fresh names in each generation
    # A medicine's new name is used by the condition card that references the same base.
    subj = {c["metadata"]["derived_from"]: c["metadata"]["subject"] for c in gen0}
    conds = [c for c in gen0 if c["metadata"]["kind"] == "condition"]
    hits = sum(1 for c in conds if any(v in c["text"] for k, v in subj.items() if k.startswith("med-")))
    assert hits >= 0.8 * len(conds)


def test_streaming_and_fast():
    gen = scale(10**9)
    first = next(gen)  # does not materialize a billion cards
    assert first["card_id"]
    gen.close()
    t = time.perf_counter()
    count = sum(1 for _ in scale(50_000, seed=0))
    elapsed = time.perf_counter() - t
    assert count == 50_000
    assert elapsed < 15, f"50k cards took {elapsed:.1f}s"


def test_negative_n_rejected():
    with pytest.raises(ValueError):
        list(scale(-1))
