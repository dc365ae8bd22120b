"""The sparse side reads a name spelled letter by letter and a number written in words in the
forms the cards use (``domain.written_forms``): the whole name, the digits."""

from __future__ import annotations

import pytest

from attesta_retrieval.domain.written_forms import number_digits, query_additions, spelled_words

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, expected", [
    ("V-E-L-N-O-R-E-X, what is it for?", ["velnorex"]),
    ("z e n n e q u i l", ["zennequil"]),
    ("It's V as in victor, E, L, N, O, R, E, X.", ["velnorex"]),
    ("Q.U.O.R.V.A.N.T or V/E/L/N/O", ["quorvant", "velno"]),
    ("Take it at 8 a.m. in the U.S.A.", []),  # separators change: no spelled word
    ("vitamin B and I", []),  # two lone letters
    ("T-A-M-Nexol", []),  # three letters, then a word: not a spelling
])
def test_words_spelled_letter_by_letter(text, expected):
    assert spelled_words(text) == expected


def test_numbers_in_words_as_digits_only_when_new():
    assert number_digits("forty milligrams, twenty-five kilos") == ["40", "25"]
    assert number_digits("40 mg, that is forty") == []  # already in digits
    assert number_digits("one of them, once a day") == []  # below two: not a quantity
    assert query_additions("V-E-L-N-O-R-E-X forty mg") == ["velnorex", "40"]


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
