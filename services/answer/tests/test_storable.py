"""What a run can always be stored with (issue #23): no NUL, no UTF-16 surrogate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attesta_answer.domain.text import storable

pytestmark = pytest.mark.unit


def test_nul_and_lone_surrogates_are_removed_and_nothing_else():
    assert storable("dose\x00 of\ud800 Velnorex\udfff?") == "dose of Velnorex?"
    kept = "tabs\tnew\nlines, \x01 controls, \ufffe, \U0001f48a, Ä é"
    assert storable(kept) == kept


# Hypothesis leaves surrogates out of text by default: mix them (and NUL) in on purpose.
UNSTORABLE = st.sampled_from(["\x00", "\ud800", "\udbff", "\udc00", "\udfff"])


@given(st.text(alphabet=st.one_of(st.characters(), UNSTORABLE)))
def test_whatever_comes_in_what_goes_out_encodes_as_utf8_without_a_nul(text):
    out = storable(text)
    assert "\x00" not in out
    out.encode("utf-8")  # a surrogate left behind would raise here
