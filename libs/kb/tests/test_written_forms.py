"""Words a question writes in a form the cards never use, read as the cards write them
(``attesta_kb.written_forms``): a name spelled letter by letter is the name, a number in words
is its digits."""

from __future__ import annotations

import pytest

from attesta_kb.written_forms import as_asked, number_digits, query_additions, spelled_words

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("question, expected", [
    ("V-E-L-N-O-R-E-X: how is it taken?", "Velnorex: how is it taken?"),
    ("is it v.e.l.n.o.r.e.x or something else", "is it Velnorex or something else"),
    ("Z as in zebra, E, N, N, E, Q, U, I, L. Who makes it?", "Zennequil. Who makes it?"),
    ("Z for zulu, E, N, N, E, Q, U, I, L", "Zennequil"),
])
def test_a_name_spelled_letter_by_letter_is_joined(question, expected):
    assert as_asked(question) == expected


@pytest.mark.parametrize("question", [
    "Is Velnorex taken at 8 a.m. in the U.S.A.?",  # separators change: no spelled word
    "Vitamin B and I: a question",  # two lone letters are not a spelling
    "T-A-M-Nexol",  # three letters then a word
])
def test_ordinary_text_is_left_alone(question):
    assert as_asked(question) == question


@pytest.mark.parametrize("question, language, expected", [
    ("is forty milligrams the usual dose", "en", "is 40 milligrams the usual dose"),
    ("posso tomar dois comprimidos de quinhentos mg", "pt", "posso tomar 2 comprimidos de 500 mg"),
    ("¿puedo tomar veinticinco miligramos?", "es", "¿puedo tomar 25 miligramos?"),
    ("one of them, once a day", "en", "one of them, once a day"),  # below two: words stay
    ("forty milligrams", None, "40 milligrams"),  # language unknown: read as English
    ("forty milligrams", "de", "40 milligrams"),  # no grammar for it here: English
])
def test_numbers_in_words_become_digits_in_the_questions_language(question, language, expected):
    assert as_asked(question, language) == expected


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


@pytest.mark.parametrize("question, language, expected", [
    ("segundo o médico, posso tomar dois comprimidos?", "pt", "segundo o médico, posso tomar 2 comprimidos?"),
    ("o terceiro dia de vinte dias", "pt", "o terceiro dia de 20 dias"),
    ("la tercera dosis de veinte", "es", "la tercera dosis de 20"),
    ("the second dose after twenty minutes", "en", "the second dose after 20 minutes"),
])
def test_ordinals_stay_words(question, language, expected):
    # "segundo" is also Portuguese for "according to"; the cards write ordinals in words
    assert as_asked(question, language) == expected
