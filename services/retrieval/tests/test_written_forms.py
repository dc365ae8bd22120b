"""The sparse side reads a name spelled letter by letter and a number written in words in the
forms the cards use (``attesta_kb.written_forms``): the whole name, the digits."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


CARDS = [
    ("a", "Quorvant\nQuorvant tablets start at 40 mg once daily for adults."),
    ("b", "Quorvant XR\nQuorvant XR tablets start at 25 mg once daily for adults."),
    ("c", "Velnorex\nVelnorex is taken with food."),
    ("d", "Zennequil\nZennequil is an injection given weekly."),
]


def test_the_sparse_index_finds_a_spelled_out_name_and_a_dose_in_words():
    from attesta_retrieval.adapters.sparse import SparseIndex

    index = SparseIndex(None)
    index.rebuild(CARDS)
    assert [cid for cid, _ in index.search("V-E-L-N-O-R-E-X with food?", 2)][0] == "c"
    # one slip in the spelling is corrected like a typed slip
    assert [cid for cid, _ in index.search("Z, E, N, E, Q, U, I, L weekly?", 2)][0] == "d"
    assert [cid for cid, _ in index.search("quorvant twenty-five mg tablets", 2)][0] == "b"
    assert [cid for cid, _ in index.search("quorvant forty mg tablets", 2)][0] == "a"
