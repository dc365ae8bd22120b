"""People in the loop (issue #28), pure: which judge labels are drawn for a blind review, what
the judge left on a pair it did not decide, the answer cut at the brand's mentions, and judge-
human agreement (per-class precision with its Wilson interval, Cohen's kappa).

The published method is docs/review.md.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from attesta_classifier.domain.metrics import Proportion, wilson
from attesta_contracts.classification import CitationClass
from attesta_platform.brandmatch import mention_spans

CLASSES: tuple[str, ...] = tuple(c.value for c in CitationClass)
KIND_RANK = {"pending": 0, "sample": 1}  # the queue's order: what nobody decided first
SAMPLE_SPACE = 1 << 32
WAITING_REASON = "waiting for the judge"  # the status reason of a pair parked, not judged yet


# -- the blind sample -------------------------------------------------------------------------
def sample_key(run_id: str, brand_id: str) -> int:
    """A pair's place in [0, 2**32): the first 4 bytes of SHA-256(run id, U+001F, brand id).
    The database computes the same (``adapters/postgres.py``): the queue is filtered there."""
    digest = hashlib.sha256(f"{run_id}\x1f{brand_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def sample_bound(share: float) -> int:
    """Pairs whose key is below this are in a sample of ``share`` (0..1) of the pairs. The same
    pair stays in the sample as long as the share does not shrink: a larger share only adds."""
    if not 0.0 <= share <= 1.0 or math.isnan(share):
        raise ValueError(f"a sample share is between 0 and 1, not {share!r}")
    return round(share * SAMPLE_SPACE)


def in_sample(run_id: str, brand_id: str, share: float) -> bool:
    return sample_key(run_id, brand_id) < sample_bound(share)


# -- what the judge left ------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeClaim:
    claim: str
    verdict: str | None
    reason: str | None
    fact_ids: tuple[str, ...]


@dataclass(frozen=True)
class JudgeNote:
    state: str  # waiting | abstained | unavailable (attesta_contracts...JudgeState)
    reason: str | None
    attempts: int
    judge_model: str | None
    claims: tuple[JudgeClaim, ...]


def judge_note(status_reason: str | None, attempts: int, last_error: str | None,
               judgment: dict[str, Any] | None) -> JudgeNote:
    """The judge's side of a pending pair. An abstention leaves its reason as the pair's status
    reason (and, when the worker stores it, ``judgment``: its reason and per-claim verdicts); an
    outage leaves an error and the reason untouched."""
    stored = judgment if isinstance(judgment, dict) else {}
    abstained = bool(stored) or (status_reason not in (None, WAITING_REASON))
    if abstained:
        state = "abstained"
    elif attempts > 0 and last_error:
        state = "unavailable"
    else:
        state = "waiting"
    reason = _text(stored.get("reason")) or status_reason
    claims = tuple(c for c in (_claim(x) for x in _list(stored.get("claims"))) if c is not None)
    return JudgeNote(state, reason, attempts, _text(stored.get("judge_model")), claims)


def _text(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return value.strip()[:2000] or None


def _list(value: object) -> list[Any]:
    return value[:100] if isinstance(value, list) else []


def _claim(raw: object) -> JudgeClaim | None:
    """One stored claim; anything malformed is left out (what is shown is never made up)."""
    if not isinstance(raw, dict) or _text(raw.get("claim")) is None:
        return None
    ids = tuple(x for x in _list(raw.get("fact_ids")) if isinstance(x, str))
    return JudgeClaim(str(_text(raw.get("claim"))), _text(raw.get("verdict")),
                      _text(raw.get("reason")), ids)


# -- the answer, cut at the brand's mentions ------------------------------------------------------
def answer_segments(answer: str, names: tuple[str, ...],
                    domains: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """``(text, kind)`` pieces that join back into ``answer``; kind "name" or "domain" where
    the answer names the brand (the classifier's own matcher), None elsewhere."""
    out: list[tuple[str, str | None]] = []
    at = 0
    for start, end, kind in mention_spans(answer, names, domains):
        if start > at:
            out.append((answer[at:start], None))
        out.append((answer[start:end], kind))
        at = end
    if at < len(answer) or not out:
        out.append((answer[at:], None))
    return out


# -- judge-human agreement -----------------------------------------------------------------------
@dataclass(frozen=True)
class ClassAgreement:
    citation_class: str
    judge_n: int
    human_n: int
    agreed: int
    precision: Proportion  # agreed / judge_n


@dataclass(frozen=True)
class Agreement:
    n: int
    observed: Proportion
    kappa: float | None
    per_class: tuple[ClassAgreement, ...]
    confusion: dict[str, dict[str, int]]  # judge class -> human class -> n


def cohen_kappa(judge: Sequence[str], human: Sequence[str]) -> float | None:
    """Cohen's kappa (scikit-learn's), or None when it is undefined: no pairs, or both raters
    used one and the same class only (chance agreement 1)."""
    if not judge:
        return None
    # scikit-learn is imported here, not at start-up: a second of import time, and only the
    # agreement figures need it (it is installed with sentence-transformers; pinned anyway).
    import numpy as np
    from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "undefined" is answered with None below
        kappa = float(cohen_kappa_score(list(judge), list(human), labels=list(CLASSES),
                                        replace_undefined_by=np.nan))
    return None if math.isnan(kappa) else kappa


def agreement(pairs: Iterable[tuple[str, str]]) -> Agreement:
    """Agreement over ``(judge class, human class)`` pairs: the share of pairs where both chose
    the same class, Cohen's kappa, and per class the judge used or the person did, the judge's
    precision against the person (of the pairs the judge put in the class, how many the person
    put there too) with its 95% Wilson interval."""
    judge, human = [], []
    for j, h in pairs:
        if j not in CLASSES or h not in CLASSES:
            raise ValueError(f"not a citation class: {j!r} / {h!r}")
        judge.append(j)
        human.append(h)
    confusion = {j: {h: 0 for h in CLASSES} for j in CLASSES}
    for j, h in zip(judge, human, strict=True):
        confusion[j][h] += 1
    per_class = []
    for c in CLASSES:
        judge_n, human_n = sum(confusion[c].values()), sum(confusion[j][c] for j in CLASSES)
        if judge_n or human_n:
            per_class.append(ClassAgreement(c, judge_n, human_n, confusion[c][c],
                                            wilson(confusion[c][c], judge_n)))
    agreed = sum(confusion[c][c] for c in CLASSES)
    used = {j: {h: n for h, n in row.items() if n} for j, row in confusion.items()}
    return Agreement(len(judge), wilson(agreed, len(judge)), cohen_kappa(judge, human),
                     tuple(per_class), {j: row for j, row in used.items() if row})
