"""The classifier's held-out and dev case files (``eval/classifier/*.json``): loader only.

CONTAMINATED (issue #28): ``heldout_never_tune.json``, ``heldout2_never_tune.json`` and
``heldout3_never_tune.json`` (rules and docstrings of the offline judge quoted the first and the
third; all three were measured, and their errors published, while the rules kept changing) are
kept for the record and reported separately, marked so. ``CURRENT`` is the newest held-out set
and the one ``benchmarks/classifier_accuracy.py --fresh`` measures: since session 2026-12-06 #15 the
2026-12-06j set (``FRESH_J``: written during that session by a helper who does not tune the judge,
outside the repository with a validator that checks ``names_brand`` for every label but ABSENT, then
committed before anything of the product ran on it; looked at zero times). ``FRESH_I``, the
2026-12-06i set (written in session 2026-12-06 #14 the same way), counted in session #14 and was
looked at in session #15: spent. ``FRESH_H``, the
2026-12-06h set (written in session 2026-12-06 #13 by a helper who does not tune the judge; 65 labels
that broke its own rule relabelled ABSENT in session #14, then looked at once, side by side, totals
only), is spent for the next choice. ``FRESH_G``, the 2026-12-06g set
(written in session 2026-12-06 #12 by a helper who does not tune the judge), counted from session #12
and was looked at once, in session #13, side by side, totals only: spent for the next choice. ``FRESH_F``, the 2026-12-06f set
(written in session 2026-12-06 #9 by a helper who does not tune the judge), counted from session #9 and
was looked at once, in session #12, side by side: that look kept ``claims-judge-2026.12.15`` over
``2026.12.14``, so it is spent for the next choice. ``FRESH_E``, the 2026-12-05e set
(written in session 2026-12-05 #7 by someone who does not tune the judge), counted from session #7 and
is spent since its second look, session 2026-12-06 #9. ``FRESH_D``, the 2026-12-05d set,
counted in sessions #5 and #6 and is spent (looked at twice: the second look, side by side, kept
``claims-judge-2026.12.12``); ``CURRENT_2026_12_05`` (written 2026-12-05, before ``claims-judge-2026.12.9``) was
the set that counted before it, measured once under each of three versions; ``FRESH_C`` chose between
two versions, so it is spent for the next choice; ``FRESH`` (written 2026-12-04, before the
claim-checking judge) is spent: looked at twice, with the totals of a look steering a change, though
no rule was written from it. Whoever changes a rule, a threshold or a model never opens any of them
(eval/README.md).

The first file's description (issue #18):

Six invented brands that are in neither ``attesta_kb`` nor the labelled set (two Brazilian with
Portuguese facts and ``.com.br`` domains, one whose name is a common English word), their facts
written the way a refresh stores them, and 157 hand-written cases (68 in Portuguese), labelled by
ADR-031's rules by reading those facts. **Never tune on it**: it is only ever measured
(``benchmarks/classifier_accuracy.py --heldout``); a rule changed because of one of its rows makes
it a dev set, and then a new held-out file is needed.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from attesta_classifier.domain.extraction import fact_id
from attesta_classifier.domain.model import Brand, Fact, Run

from . import DATA_DIR

FILE_NAME = "heldout_never_tune.json"
# Written after the offline rules 2026.12.5 had been revised once on FILE_NAME's errors, and
# measured only after the last rule change: the untouched estimate.
FILE_NAME_2 = "heldout2_never_tune.json"
# Written on 2026-12-04 before that day's changes to the rules, in styles the generators of the
# labelled set never produce (typos, lower-case names, lists, other number formats, answers in the
# other language than the facts); measured before and after those changes, never tuned on.
FILE_NAME_3 = "heldout3_never_tune.json"
# The three files above no longer count (issue #28): reported apart, marked contaminated.
CONTAMINATED_FILES = (FILE_NAME, FILE_NAME_2, FILE_NAME_3)
# Written on 2026-12-04 before the claim-checking judge (issue #28), by someone who does not tune it.
# SPENT (LOOKED AT TWICE): measured under claims-judge-2026.12.7 and 2026.12.8, and the totals of a
# look steered a change; not contaminated by rules. Still measurable, reported apart, marked so.
FRESH = "heldout_2026-12-04_fresh_never_tune.json"
# The held-out set that counted until session 2026-12-05 #5 (issue #28): written on 2026-12-05 before
# claims-judge-2026.12.9 by someone who does not tune the judge; measured once under each of
# claims-judge-2026.12.8, .9 and .10, totals only. Still measurable (--cases), totals only.
CURRENT_2026_12_05 = "heldout_2026-12-05_never_tune.json"
# A second fresh set (issue #28), written on 2026-12-05 during session #4 by a helper who does not tune
# the judge, while the tuner worked towards that session's [judge-final]; never measured before it.
# Measured once on 2026.12.11 and 2026.12.10 and chose between them: spent for the next choice.
FRESH_C = "heldout_2026-12-05c_never_tune.json"
# The held-out set of sessions 2026-12-05 #5 and #6 (issue #28): 152 cases over seven new fictional
# brands, written on 2026-12-05 during session #5 by a helper who does not tune the judge, committed
# before that session's [judge-final] and before anyone measured anything on it. Measured once on
# 2026.12.10 (session #5), then once more side by side on 2026.12.10 and 2026.12.12 (session #6),
# which kept 2026.12.12: spent for the next choice.
FRESH_D = "heldout_2026-12-05d_never_tune.json"
# The newest held-out set (issue #28), what --fresh measures since session 2026-12-05 #7: 220 cases
# (83 answers in Portuguese, 54 in Spanish) over nine new fictional brands, written on 2026-12-05
# during session #7 by a helper who does not tune the judge, kept outside the repository until that
# session's [judge-final] and committed before anyone measured anything on it. Looked at once, side
# by side (2026.12.12 and 2026.12.13: identical in every cell, so it chose nothing), then a second and
# last time in session 2026-12-06 #9 (2026.12.13 against 2026.12.14, which stayed): spent. Its figures
# are no longer an estimate for a new version.
FRESH_E = "heldout_2026-12-05e_never_tune.json"
# The held-out set that --fresh measured from session 2026-12-06 #9: 243 cases (92 answers in
# Portuguese, 59 in Spanish, 92 in English) over ten new fictional brands, written 2026-12-06 in
# session #9 by a helper who does not tune the judge (outside the repository, then committed before
# anything of the product ran on it). Looked at once, in session 2026-12-06 #12, side by side
# (claims-judge-2026.12.14 against 2026.12.15, which was kept): that look chose, so it is spent for
# the next choice. Still measurable, totals only.
FRESH_F = "heldout_2026-12-06f_never_tune.json"
# The held-out set that --fresh measured from session 2026-12-06 #12: 250 cases (87 answers in
# Portuguese, 61 in Spanish, 102 in English) over ten new fictional brands, written 2026-12-06 in
# session #12 by a helper who does not tune the judge (outside the repository, with a validator, then
# committed before anything of the product ran on it). Looked at once, in session 2026-12-06 #13, side
# by side, totals only: spent for the next choice. Still measurable, totals only.
FRESH_G = "heldout_2026-12-06g_never_tune.json"
# The held-out set that --fresh measured from session 2026-12-06 #13: 230 cases
# (87 answers in Portuguese, 62 in Spanish, 81 in English) over nine new fictional brands, written
# 2026-12-06 in session #13 by a helper who does not tune the judge (outside the repository, with a
# validator, then committed before anything of the product ran on it); looked at once in session #14: spent.
# Relabelled in session #14 before its first full measurement: 65 answers that never name the brand were
# labelled DESCRIPTIVE/CONFABULATED against the set's own rule (now ABSENT; see its `about`, names_brand).
FRESH_H = "heldout_2026-12-06h_never_tune.json"
# The held-out set that --fresh measured from session 2026-12-06 #14: 255 cases
# (86 answers in Portuguese, 76 in Spanish, 93 in English; 42 STRONG, 80 DESCRIPTIVE, 37 ECHO,
# 73 CONFABULATED, 23 ABSENT) over nine new fictional brands, written 2026-12-06 in session #14 by a
# helper who does not tune the judge (outside the repository, with a validator that also calls
# names_brand on every case not labelled ABSENT, the lesson of FRESH_H), committed before anything of
# the product ran on it. Looked at in session #15 (by the lead): spent.
FRESH_I = "heldout_2026-12-06i_never_tune.json"
# The newest held-out set (issue #28), what --fresh measures since session 2026-12-06 #15: 238 cases
# (80 answers in Portuguese, 67 in Spanish, 91 in English; 45 STRONG, 72 DESCRIPTIVE, 36 ECHO,
# 63 CONFABULATED, 22 ABSENT) over nine new fictional brands, written 2026-12-06 in session #15 by a
# helper who does not tune the judge (outside the repository, with a validator that calls names_brand
# on every case not labelled ABSENT), committed before anything of the product ran on it. Looked at
# zero times.
FRESH_J = "heldout_2026-12-06j_never_tune.json"
CURRENT = FRESH_J
# Files whose errors are never printed (benchmarks refuse --show-errors on them): not contaminated.
TOTALS_ONLY = (CURRENT, FRESH_I, FRESH_H, FRESH_G, FRESH_F, FRESH_E, FRESH_D, CURRENT_2026_12_05, FRESH, FRESH_C)
# Dev files: tune on these freely.
DEV_FILES = ("judge_dev.json", "judge_dev2.json")
WORKSPACE = "ws-heldout"
FETCHED_AT = datetime(2026, 12, 3, tzinfo=UTC)


def path_of(file_name: str) -> Path:
    """A case file by its name in ``eval/classifier`` (or by its path)."""
    given = Path(file_name)
    return given if given.is_absolute() or len(given.parts) > 1 else DATA_DIR / file_name


def load(file_name: str = FILE_NAME) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path_of(file_name).read_text(encoding="utf-8"))
    return doc


def brands(doc: dict[str, Any]) -> dict[str, Brand]:
    return {k: Brand(brand_id=k, workspace_id=WORKSPACE, name=b["name"], aliases=tuple(b["aliases"]),
                     domains=tuple(b["domains"]), sources=(b["source"],))
            for k, b in doc["brands"].items()}


def facts(doc: dict[str, Any]) -> dict[str, list[Fact]]:
    out: dict[str, list[Fact]] = {}
    for k, b in doc["brands"].items():
        url = b["source"]
        sha = hashlib.sha256("\n".join(f["text"] for f in b["facts"]).encode("utf-8")).hexdigest()
        out[k] = sorted((Fact(fact_id(WORKSPACE, k, f["type"], url, f["text"]), k, f["type"], f["text"],
                              url, FETCHED_AT, urlsplit(url).hostname or "", sha)
                         for f in b["facts"]), key=lambda f: f.fact_id)
    return out


def names_brand(case: dict[str, Any], doc: dict[str, Any]) -> bool:
    """Whether the answer itself names the case's brand (name, alias or domain, any case or accents).

    The labelling rules of every set say the prompt never counts as a mention: an answer that never
    names the brand is ABSENT whatever it describes. Loose on purpose (a substring after folding), so
    it only catches labels that cannot be right, never argues a borderline mention.
    """
    brand = doc["brands"][case["brand"]]
    answer = _folded(case["answer"])
    return any(_folded(n) in answer for n in (brand["name"], *brand["aliases"], *brand["domains"]))


def _folded(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


def run_of(case: dict[str, Any]) -> Run:
    return Run(run_id=case["id"], workspace_id=WORKSPACE, engine="heldout", model="heldout",
               prompt=case["prompt"], answer=case["answer"],
               answer_sha256=hashlib.sha256(case["answer"].encode("utf-8")).hexdigest(),
               brand_ids=(case["brand"],))
