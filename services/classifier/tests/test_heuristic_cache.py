"""The per-brand precomputation (``BrandMatcher``, cached by ``brand_matcher``) changes nothing:
over the whole labelled set, ``decide`` gives exactly the decisions (class, reason, version) of
the per-call computation it replaced, whether the matcher comes from the cache, is passed in,
or is built fresh."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attesta_classifier_eval.labeled import brand_of, load_labeled_runs, run_of
from attesta_classifier.domain.heuristic import (
    BrandMatcher,
    CitationClass,
    _decision,
    brand_domains,
    brand_matcher,
    cited_urls,
    decide,
    echo_reason,
    host_is_on_domains,
)
from attesta_classifier.domain.model import Brand, Decision, Run
from attesta_kb import load_brands

pytestmark = pytest.mark.unit

ROWS = load_labeled_runs()
BRANDS = {b["id"]: brand_of(b) for b in load_brands()}


def decide_uncached(run: Run, brand: Brand) -> Decision | None:
    """``decide`` as it was before the precomputation: every brand-derived value per call."""
    domains = brand_domains(brand)
    for url in cited_urls(run.answer):
        on = host_is_on_domains(url.host, domains)
        if on:
            return _decision(
                CitationClass.STRONG,
                f"the answer cites {url.text[:200]} (host {url.host}, on the brand's domain {on})",
            )
    # The name rule of 2026.12.3 (common-word names), computed from a fresh matcher each call.
    mentioned = BrandMatcher.build(brand).mentions(run.answer, run.prompt)
    if mentioned is None:
        return None
    if not mentioned:
        return _decision(
            CitationClass.ABSENT,
            "the answer names neither " + ", ".join(repr(n) for n in brand.names)
            + (" nor the domain " + ", ".join(domains) if domains else ""),
        )
    reason = echo_reason(run.prompt, run.answer, brand)
    if reason:
        return _decision(CitationClass.ECHO, reason)
    return None


def test_cached_decisions_equal_uncached_on_the_labelled_set() -> None:
    assert len(ROWS) > 100
    outcomes = set()
    for row in ROWS:
        run, brand = run_of(row), BRANDS[row["brand_id"]]
        expected = decide_uncached(run, brand)
        assert decide(run, brand) == expected, row["id"]
        assert decide(run, brand, brand_matcher(brand)) == expected, row["id"]
        assert decide(run, brand, BrandMatcher.build(brand)) == expected, row["id"]
        outcomes.add(expected.citation_class if expected else None)
    # the set exercises every machine outcome and the hand-off to the judge
    assert {CitationClass.STRONG, CitationClass.ABSENT, CitationClass.ECHO, None} <= outcomes


def test_every_labelled_answer_against_every_brand() -> None:
    """Cross pairs (an answer about one brand checked against another) hit the domain and
    lookalike paths with brands they were not written for."""
    for row in ROWS[::3]:
        run = run_of(row)
        for brand in BRANDS.values():
            assert decide(run, brand) == decide_uncached(run, brand), (row["id"], brand.brand_id)


def test_matcher_is_built_once_per_brand_and_follows_brand_changes() -> None:
    brand = BRANDS["lumora"]
    assert brand_matcher(brand) is brand_matcher(replace(brand))  # equal brand, same entry
    assert brand_matcher(brand).domains == brand_domains(brand)
    moved = replace(brand, domains=("lumora-health.example",), aliases=("Lumorix",))
    m = brand_matcher(moved)
    assert m is not brand_matcher(brand)
    assert m.domains == ("lumora-health.example",) and "Lumorix" in m.names
    run = Run("r", "ws", "e", "m", "p", "See https://lumora.example/ for Lumorix.", "x")
    assert decide(run, moved) == decide_uncached(run, moved)
    assert decide(run, moved) is None  # the old domain is no longer STRONG: names it, judge's call
    assert decide(run, brand).citation_class is CitationClass.STRONG


def test_misconfigured_brand_without_usable_domains() -> None:
    brand = replace(BRANDS["lumora"], domains=("com", "*.co.uk", ""))
    assert brand_matcher(brand).domains == () and brand_matcher(brand).domain_patterns == ()
    for row in ROWS[:40]:
        run = run_of(row)
        assert decide(run, brand) == decide_uncached(run, brand), row["id"]
