"""Position of a brand in an answer (issue #25 item 3): the order in which the brand and its
competitors are first named, by the classifier's own matcher (names, aliases, domains)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from attesta_classifier.domain.heuristic import brand_matcher
from attesta_classifier.domain.position import (
    Ranking, _folded, comparison_set, first_mention, rank, weight)
from attesta_classifier.domain.model import Brand

pytestmark = pytest.mark.unit

LUMORA = Brand("lumora", "ws", "Lumora Therapeutics", aliases=("Lumora",),
               domains=("lumora.example",), competitors=("novaris", "cefalix"))
NOVARIS = Brand("novaris", "ws", "Novaris", aliases=("Novaris Pharma",), domains=("novaris.example",))
CEFALIX = Brand("cefalix", "ws", "Cefalix", domains=("cefalix.com.br",))
SET = [LUMORA, NOVARIS, CEFALIX]


def position(answer: str, prompt: str = "") -> tuple[int | None, tuple[str, ...]]:
    r = rank(answer, SET, prompt)
    return r.position("lumora"), r.order


def test_english_answer_brand_first():
    assert position("Lumora Therapeutics leads; Novaris and Cefalix follow.") == (
        1, ("lumora", "novaris", "cefalix"))


def test_portuguese_answer_with_a_competitor_named_before():
    # Accents and case folded as the matcher folds them; the alias "Lumora" counts.
    answer = ("Para enxaqueca, a NOVARIS é a mais citada; a lumorá também oferece tratamentos, "
              "e a Cefalix vem depois.")
    assert position(answer) == (2, ("novaris", "lumora", "cefalix"))


def test_first_mention_counts_not_later_ones():
    answer = "Cefalix first. Then Lumora. Cefalix again, Novaris last, Lumora again."
    assert position(answer) == (2, ("cefalix", "lumora", "novaris"))


def test_a_brand_named_only_in_a_url():
    answer = "Novaris is popular. More at https://www.lumora.example/migraine and cefalix.com.br."
    assert position(answer) == (2, ("novaris", "lumora", "cefalix"))


def test_a_markdown_link_target_counts_where_it_stands():
    answer = "See [this page](https://lumora.example/x) before reading about Novaris."
    assert position(answer) == (1, ("lumora", "novaris"))


def test_not_named():
    assert position("Novaris and Cefalix are the options.") == (None, ("novaris", "cefalix"))
    assert position("No brand at all.") == (None, ())
    # A lookalike host is not the brand's domain (a brand whose name is not in it).
    acme = Brand("acme", "ws", "Zentro", domains=("acme.example",))
    assert rank("Visit acme.example.evil.io", [acme]).order == ()
    assert rank("Visit shop.acme.example", [acme]).order == ("acme",)


def test_an_alias_and_a_longer_name_overlapping():
    # "Novaris Pharma" (alias) and "Novaris" both start at the same place: one mention.
    assert position("Novaris Pharma, then Lumora Therapeutics S.A.") == (2, ("novaris", "lumora"))


def test_a_common_word_name_counts_only_as_a_name():
    beacon = Brand("beacon", "ws", "Beacon", competitors=("novaris",))
    r = rank("Use a beacon light. Novaris is good; Beacon too.", comparison_set(
        beacon, {"novaris": NOVARIS}))
    assert r.order == ("novaris", "beacon")
    assert rank("a beacon in the dark", [beacon]).position("beacon") is None


def test_weights_and_comparison_set():
    assert [weight(k) for k in (1, 2, 3)] == pytest.approx([1.0, 0.9, 0.81])
    assert weight(None) == 0.0
    assert Ranking(("a", "b")).position("b") == 2
    # Competitors that are not brands of the workspace are left out; the brand comes first.
    assert [b.brand_id for b in comparison_set(LUMORA, {"novaris": NOVARIS})] == [
        "lumora", "novaris"]


def test_characters_that_fold_to_several_keep_the_order():
    # "ß" folds to "ss" and "ﬁ" to "fi": offsets are mapped back to the answer's own, and a
    # full-width name is the name.
    assert position("Straße, ﬁrst: Ｃｅｆａｌｉｘ; então Lumora e Novaris.") == (
        2, ("cefalix", "lumora", "novaris"))
    assert position("e\u0301 Novaris ﬁ Lumora") == (2, ("novaris", "lumora"))


def test_the_matchers_literal_prefilter_changes_no_mention_and_no_position():
    """``BrandMatcher``'s needles (issue #27) only skip regex searches that cannot match: on
    texts that name, half-name, fold to or only resemble a brand (an IDN domain, a common-word
    name, a name in a URL), each brand is mentioned and first named where the same matcher
    without needles finds it."""
    brands = [*SET, Brand("beacon", "ws", "Café Beacon", aliases=("Beacon", "Ｌｕｍｏｒａ"),
                          domains=("xn--caf-dma.example", "*.beacon.io")),
              Brand("kestrel", "ws", "Kestrel", aliases=("kestrel bio",))]
    words = [w for b in brands for n in (*b.names, *b.domains) for w in (n, n.lower(), n.upper())]
    words += ["café.example", "https://www.lumora.example/x", "Beacon Hill", "a beacon", "the",
              "Lumorá", "Cafe\u0301", "sub.novaris.example", "novaris-pharma", "ﬁ", ".", "-"]
    rnd = random.Random(27)
    for _ in range(3000):
        text = rnd.choice([" ", ". ", "\n"]).join(rnd.choice(words) + rnd.choice(["", " ", ", ", "/"])
                                                  for _ in range(rnd.randint(0, 6)))
        prompt = rnd.choice(["", "About Kestrel?", "What about Beacon Hill?"])
        for b in brands:
            m = brand_matcher(b)
            bare = dataclasses.replace(m, domain_needles=None, plain_needles=None)
            assert m.mentions(text, prompt) == bare.mentions(text, prompt), (b.brand_id, text)
            assert first_mention(text, m, prompt, _folded(text)) == first_mention(
                text, bare, prompt, _folded(text)), (b.brand_id, text)
