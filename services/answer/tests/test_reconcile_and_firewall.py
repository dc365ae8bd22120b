"""Reconciliation rules (normalisation, drops and their reasons) and the LLM–URL firewall."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attesta_answer.domain.citations import MAX_CITATIONS, DropReason, reconcile
from attesta_answer.domain.firewall import LINK_REMOVED, strip_links
from attesta_answer.domain.model import Card, visible_cards
from attesta_answer.domain.text import normalise, normalise_span, sentences
from attesta_contracts.chat import ContextChunk

pytestmark = pytest.mark.unit

CARD = Card("med-velnorex", "Velnorex monograph",
            "Dosing: The recommended adult dose is one 40 mg tablet once daily. "
            "It isn’t approved for patients younger than 18 years — see the label.", 0)
OTHER = Card("med-velnorax", "Velnorax monograph", "Velnorax is a monthly injection.", 1)


def reasons(dropped):
    return [d.reason for d in dropped]


# -- normalisation --------------------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b"), [
    ("ＶＥＬＮＯＲＥＸ　ｄｏｓｅ", "velnorex dose"),  # NFKC: full-width letters and space
    ("Stra\u00dfe", "strasse"),  # case folding
    ("it isn\u2019t", 'it isn"t'), ("\u201cquoted\u201d", '"quoted"'), ("it isn't", 'it isn"t'),
    ("18 years \u2014 see", "18 years - see"), ("a\u2013b", "a-b"), ("\u2212 5", "- 5"),
    ("one\u00a0 40\n\tmg", "one 40 mg"), ("zero\u200bwidth", "zerowidth"), ("soft\u00adhyphen", "softhyphen"),
])
def test_normalisation_rules(a, b):
    assert normalise(a) == b


def test_span_edges_are_trimmed_of_quotes_and_sentence_punctuation():
    assert normalise_span('  "The recommended adult dose."  ') == "the recommended adult dose"


# -- reconciliation -----------------------------------------------------------------------------
def test_span_matches_after_normalisation_and_keeps_the_models_text():
    kept, dropped = reconcile([
        {"card_id": "med-velnorex", "span": "the RECOMMENDED adult   dose is one 40 mg tablet"},
        {"card_id": "med-velnorex", "span": "It isn't approved for patients younger than 18 years - see"},
    ], [CARD, OTHER])
    assert dropped == []
    assert [c.model_dump() for c in kept] == [
        {"card_id": "med-velnorex", "span": "the RECOMMENDED adult   dose is one 40 mg tablet"},
        {"card_id": "med-velnorex", "span": "It isn't approved for patients younger than 18 years - see"},
    ]


def test_each_drop_reason():
    proposed = [
        {"card_id": "med-velnorex", "span": "recommended adult dose"},  # kept
        {"card_id": "med-nope", "span": "recommended adult dose"},  # card not retrieved
        {"card_id": "med-velnorex", "span": "a 70 mg monthly injection"},  # not in this card
        {"card_id": "med-velnorex", "span": "Velnorax is a monthly injection"},  # in the OTHER card
        {"card_id": "med-velnorex", "span": "dose"},  # one word verifies nothing
        {"card_id": "med-velnorex", "span": "   "},
        {"card_id": "med-velnorex", "span": "Recommended adult dose."},  # duplicate once normalised
        {"card_id": 7, "span": "x y"}, {"card_id": "med-velnorex"}, "med-velnorex", None,
        ["med-velnorex", "span"], {"card_id": "med-velnorex", "span": ["a", "b"]},
    ]
    kept, dropped = reconcile(proposed, [CARD, OTHER])
    assert [c.span for c in kept] == ["recommended adult dose"]
    assert reasons(dropped) == [
        DropReason.CARD_NOT_RETRIEVED, DropReason.SPAN_NOT_IN_CARD, DropReason.SPAN_NOT_IN_CARD,
        DropReason.SPAN_TOO_SHORT, DropReason.SPAN_TOO_SHORT, DropReason.DUPLICATE,
        *[DropReason.MALFORMED] * 6,
    ]
    assert dropped[0].card_id == "med-nope"


def test_overlong_spans_and_proposal_floods_are_dropped_unexamined():
    flood = [{"card_id": CARD.card_id, "span": "x" * 1001}] + [
        {"card_id": "nope", "span": "a b"}] * 63 + [{"card_id": CARD.card_id, "span": "adult dose"}] * 5
    kept, dropped = reconcile(flood, [CARD])
    assert kept == []
    assert reasons(dropped) == ([DropReason.SPAN_TOO_LONG] + [DropReason.CARD_NOT_RETRIEVED] * 63
                                + [DropReason.OVER_LIMIT] * 5)


def test_span_may_quote_the_title_and_card_id_may_carry_spaces():
    kept, dropped = reconcile([{"card_id": " med-velnorax ", "span": "Velnorax monograph"}], [CARD, OTHER])
    assert [c.model_dump() for c in kept] == [{"card_id": "med-velnorax", "span": "Velnorax monograph"}]
    assert dropped == []


def test_over_limit():
    spans = ["Dosing: The", "The recommended", "recommended adult", "adult dose", "dose is",
             "is one", "one 40", "40 mg", "mg tablet", "tablet once"]
    kept, dropped = reconcile([{"card_id": CARD.card_id, "span": s} for s in spans], [CARD])
    assert len(kept) == MAX_CITATIONS
    assert reasons(dropped) == [DropReason.OVER_LIMIT] * (len(spans) - MAX_CITATIONS)


def test_spans_are_checked_against_the_link_free_card_text_and_shown_without_links():
    chunk = ContextChunk(id="c", card_id="c", title="T",
                         text="Read more at https://evil.example/x today. The dose is 5 mg.")
    [card] = visible_cards([chunk])
    assert "evil" not in card.text
    kept, dropped = reconcile([{"card_id": "c", "span": "Read more at https://evil.example/x today"},
                               {"card_id": "c", "span": "Read more at https://other.example/ today"},
                               {"card_id": "c", "span": "The dose is 5 mg"}], [card])
    assert [c.span for c in kept] == [f"Read more at {LINK_REMOVED} today", "The dose is 5 mg"]
    assert reasons(dropped) == [DropReason.DUPLICATE]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"card_id": st.sampled_from(["med-velnorex", "med-velnorax", "x"]),
                           "span": st.text(max_size=40)}),
    st.none(), st.integers(), st.text(), st.dictionaries(st.text(max_size=5), st.text(max_size=5)),
), max_size=12))
def test_reconcile_is_total_and_every_kept_span_occurs_in_its_card(proposed):
    kept, dropped = reconcile(proposed, [CARD, OTHER])
    assert len(kept) + len(dropped) == len(proposed)
    by_id = {CARD.card_id: CARD, OTHER.card_id: OTHER}
    for citation in kept:
        card = by_id[citation.card_id]
        key = normalise_span(citation.span)
        assert key in normalise(card.text) or key in normalise(card.title)
        assert LINK_REMOVED not in citation.span


# -- sentences -------------------------------------------------------------------------------
def test_sentences_keep_decimals_abbreviations_and_exact_text():
    text = "The dose is 2.5 mg twice daily. Described by Dr. Greta Sallow in 1989. Done!"
    assert sentences(text) == ["The dose is 2.5 mg twice daily.",
                               "Described by Dr. Greta Sallow in 1989.", "Done!"]


# -- the firewall ------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("See https://evil.example/x.", f"See {LINK_REMOVED}."),
    ("HTTPS://EVIL.COM now", f"{LINK_REMOVED} now"),
    ("hxxps://evil[.]com", LINK_REMOVED),
    ("Visit [the site](http://evil.com) now", "Visit the site now"),
    ("![logo](https://evil.com/a.png) text", "logo text"),
    ("[text][1]\n[1]: https://evil.com", "text"),
    ("<https://evil.com/x>", LINK_REMOVED),
    ("<evil.com>", LINK_REMOVED),
    ('<a href="https://evil.com">click</a> here', "click here"),
    ("<A HREF='javascript:alert(1)'>x</a>", "x"),
    ("&lt;a href=&quot;https://evil.com&quot;&gt;x&lt;/a&gt;", "x"),
    ("&#104;ttps://evil.com", LINK_REMOVED),
    ("javascript:alert(1)", LINK_REMOVED),
    ("data:text/html;base64,PHNjcmlwdD4=", LINK_REMOVED),
    ("mailto:a@b.example", LINK_REMOVED),
    ("write to info@lumora.example", f"write to {LINK_REMOVED}"),
    ("go to example.com/path!", f"go to {LINK_REMOVED}!"),
    ("lumora.example", LINK_REMOVED),
    ("(see www.evil.org)", f"(see {LINK_REMOVED})"),
    ("//evil.com/x", LINK_REMOVED),
    ("https:\\\\evil.com", LINK_REMOVED),
    ("https:evil.com", LINK_REMOVED),
    ("192.168.0.1:8080/admin", LINK_REMOVED),
    ("ｈｔｔｐｓ：／／ｅｖｉｌ．ｃｏｍ", LINK_REMOVED),  # full-width
    ("evil\u3002com", LINK_REMOVED),  # ideographic full stop
    ("ex\u200bample.com", LINK_REMOVED),  # zero-width space inside
    ("evil\u2024com", LINK_REMOVED),  # one-dot leader
    ("https%3A%2F%2Fevil.com", LINK_REMOVED),
    ("xn--80ak6aa92e.com", LINK_REMOVED),
    ("visit:evil.com", LINK_REMOVED),
    ("click (https://a.com/b_(c)).", f"click ({LINK_REMOVED})."),
])
def test_firewall_removes_every_link_form(text, expected):
    assert strip_links(text) == expected


@pytest.mark.parametrize("text", [
    "The recommended adult dose is 2.5 mg twice daily, e.g. with food.",
    "Halve the dose when eGFR is below 30 mL/min (Child-Pugh C); 1.73 m² body surface.",
    "Success at one year is 77%; complications 5.2% vs 1.7%.",
    "Velnorex (velnorexant) 40 mg — not Velnorax.",
    "eGFR <30 and >15 mL/min",
])
def test_firewall_leaves_ordinary_medical_prose_alone(text):
    assert strip_links(text) == text


@pytest.mark.timeout(30)  # a hang guard (catastrophic backtracking), not a speed measurement
@pytest.mark.parametrize("hostile", [
    "a." * 30000, "a-" * 30000 + ".com", "<a>" * 20000, "[x](" * 20000, "1." * 30000,
    "<a:" * 20000, ("a." * 99 + "a ") * 200, "&#104;" * 20000, "[a](" + "(b)" * 20000,
])
def test_firewall_stays_linear_on_adversarial_input(hostile):
    out = strip_links(hostile)
    assert "://" not in out and strip_links(out) == out


def test_a_long_token_with_link_characters_is_removed_unexamined():
    long_url = "https://evil.example/" + "a" * 300
    assert strip_links(f"see {long_url} now") == f"see {LINK_REMOVED} now"
    assert strip_links("x" * 300) == "x" * 300  # no link characters: kept


def test_firewall_never_changes_a_shipped_kb_card():
    from attesta_kb.dataset import load_cards

    for card in load_cards():
        assert strip_links(card["text"]) == card["text"], card["card_id"]
        assert strip_links(card["title"]) == card["title"], card["card_id"]


link_pieces = st.sampled_from(list("abc.:/ \\@<>[]()hwtps") + [
    "www.", "http", "://", ".com", ".example", "javascript:", "](", "<a href=", "</a>", "%2F", "\u3002"])


@settings(max_examples=300, deadline=None)
@given(st.lists(link_pieces, max_size=30).map("".join))
def test_firewall_output_has_nothing_link_like_left(text):
    out = strip_links(text)
    assert "://" not in out and not re.search(r"(?<![\w.-])www\.", out, re.I)
    assert strip_links(out) == out  # nothing left that the firewall would still remove
