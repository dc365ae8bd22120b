"""Does the retrieved context answer the question? A small learned decision (pure).

The reader (``domain.extractive``) picks the sentence that answers best; this module decides
whether that answer is grounded enough to give, from evidence that carries over to wording
nobody listed:

- **the reranker** (full path only): its calibrated probability for the best card and for the
  runner-up (the displayed score / 100, ADR-0024), and its probability for the lead sentence
  (retrieval scores (question, "title: sentence") pairs with the same cross-encoder);
- **meaning**: the embedder's similarity of the question to the lead sentence and to the best
  sentence of the context (MiniLM for English questions; the multilingual encoder for others),
  and how far the lead sentence stands out from the rest of its card (a question that only
  names the card is about equally close to all of its sentences);
- **rare words**: the share of what the question asks (its content words other than the lead
  card's own name, a misspelt name included) that the lead card and the lead sentence state
  (a misspelt word counts as the card's word it is one or two edits from), each word weighted
  by how rare it is in the KB (IDF over the KB's cards), and the IDF of the rarest asked word
  the card lacks ("ibuprofen", "cost": words no card states weigh most);
- **agreement**: whether the dense and the sparse side both put the lead card first among the
  returned cards, and how far down the returned cards the lead card is;
- **a pair reader** (spec 3, English questions on the paths the artefact gives a reader model,
  the full path): a cross-encoder fine-tuned on (question, the card sentence that answers it)
  pairs scores the context's closest sentences (``reader_candidates``); its best probability and the margin to the second say
  whether a sentence *states* what is asked, not only whether it is alike. A ``PairReader`` port:
  the model lives in ``adapters/pair_reader.py``; the artefact pins its recipe (``ReaderSpec``).

A logistic regression over these features (one per language group and path: see
``GateModel.model_for``) gives the probability that the answer is right; the context answers
when it reaches the model's threshold. Coefficients, standardisation, thresholds and the KB's
word statistics come from a versioned artefact (``adapters/gate_artefact.py`` loads it,
``benchmarks/train_grounding_gate.py`` builds it; thresholds chosen on DEV questions for at most
10% answers to questions the KB cannot answer; docs/answer-quality.md has the curve).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Protocol

from attesta_answer.domain.model import Card
from attesta_answer.domain.text import content_terms, stem
from attesta_kb.written_forms import as_asked

# The features this code computes, in the artefact's order. Bump FEATURE_SPEC whenever a
# feature's meaning changes: an artefact built for another spec is refused at start-up.
FEATURE_SPEC = 3
FEATURES: tuple[str, ...] = (
    "lead_similarity",  # embedder cosine of the question and the lead sentence
    "best_similarity",  # the highest sentence similarity in the context
    "lead_sentence_prob",  # sigmoid(cross-encoder logit) of the lead sentence (full), else 0
    "best_sentence_prob",  # the highest of those over the scored sentences (full), else 0
    "top_card_prob",  # the reranker's probability for the best card (full), else 0
    "runner_up_prob",  # ... for the second card (full), else 0
    "lead_card_prob",  # ... for the card the lead sentence is from (full), else 0
    "lead_margin",  # how far the lead sentence stands out: its similarity - the card's median
    "card_coverage",  # IDF-weighted share of the asked words the lead card states
    "sentence_coverage",  # ... that the lead sentence (with its card's title) states
    "missing_idf",  # normalised IDF of the rarest asked word the lead card lacks (0: none)
    "unknown_share",  # share of the asked words no KB card contains
    "agreement",  # lead card first among the returned cards by dense (0.5) and by BM25 (0.5)
    "lead_rank",  # the lead card's place among the returned cards, 0 (best) to 1 (5th or below)
    "short_question",  # 1 when the question asks at most two words beyond the name
    # spec 2 (H3, #24): does the lead card stand out from the others, does the question name it,
    # and does any sentence of it state the rarest things asked?
    "card_gap",  # the lead card's best sentence similarity - the best of every other card's
    "sentence_gap",  # the lead sentence's similarity - the next best sentence of its own card
    "dense_margin",  # the lead card's dense cosine - the best other card's (0 when unknown)
    "bm25_share",  # the lead card's BM25 score / the sum over the returned cards
    "named",  # 1 when the question contains a rare word of the lead card's title (misspelt or not)
    "best_sentence_coverage",  # IDF-weighted coverage of the asked words by the card's best sentence
    "missing_idf_sum",  # summed IDF of the asked words the card lacks / the KB's max IDF (capped at 3)
    "asked_count",  # how many words are asked beyond the name, log(1 + n) / log(30)
    "focus_coverage",  # card_coverage of the question's last sentence only (its focus)
    "focus_missing_idf",  # missing_idf of the question's last sentence only
    # spec 3 (#24, session 6): does a sentence state what is asked? (0 without a pair reader)
    "reader_best",  # the pair reader's best probability over ``reader_candidates``
    "reader_margin",  # ... minus the second best
)
READER_FEATURES = ("reader_best", "reader_margin")
LANGUAGE_GROUPS = ("en", "other")
PATH_GROUPS = ("full", "fused")


def content_sha256(data: Mapping[str, Any]) -> str:
    """The SHA-256 of an artefact's content (every key but ``sha256``, canonical JSON): written
    into the artefact by the trainer, checked at load, quoted in docs/answer-quality.md."""
    body = {k: v for k, v in data.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class GateArtefactInvalid(ValueError):
    """The grounding artefact is missing a part, or was built for other features."""


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@dataclass(frozen=True)
class TermStatistics:
    """How many of the KB's cards contain each (stemmed) content word: the IDF of ``features``."""

    n_docs: int
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        return math.log((self.n_docs + 1) / (self.df.get(term, 0) + 1))

    @property
    def max_idf(self) -> float:
        return math.log(self.n_docs + 1)


@dataclass(frozen=True)
class Lead:
    """The reader's choice: a sentence of a card."""

    card: Card
    index: int  # the sentence's position in ``card.sentences``

    @property
    def text(self) -> str:
        return (self.card.sentences or ())[self.index][0]


def _near(term: str, name_terms: frozenset[str]) -> bool:
    """``term`` is one of the name's words, or a slip of one (optimal string alignment: one
    edit up to 7 letters, two from 8), e.g. "ephdurx" for "ephdurax"."""
    if term in name_terms:
        return True
    if len(term) < 4:
        return False
    from rapidfuzz.distance import OSA  # imported on first use, not at import time

    return any(OSA.distance(term, name) <= (1 if len(name) <= 7 else 2)
               for name in name_terms if len(name) >= 5)


@lru_cache(maxsize=4096)
def _terms_of(text: str) -> frozenset[str]:
    return frozenset(content_terms(text))


def asked_terms(question: str, title: str) -> list[str]:
    """The question's content words other than the card's name (its title's words, misspelt
    or not): what the card must state besides being about the right thing."""
    name_terms = _terms_of(title)
    return [t for t in dict.fromkeys(content_terms(question)) if not _near(t, name_terms)]


def weighted_coverage(asked: Sequence[str], present: frozenset[str], stats: TermStatistics) -> float:
    """The IDF-weighted share of ``asked`` in ``present``; 1.0 when nothing is asked."""
    total = sum(stats.idf(t) for t in asked)
    if total <= 0:
        return 1.0
    return sum(stats.idf(t) for t in asked if t in present) / total


def _spelled_as(asked: Sequence[str], present: frozenset[str], stats: TermStatistics) -> list[str]:
    """``asked`` with each word no KB card has replaced by the word of ``present`` it is a slip
    of ("contraindicatons" -> "contraind"), when there is one: a typo is not a new fact."""
    return [t if t in present or stats.df.get(t, 0) > 0 or not _near(t, present) else
            next(p for p in present if _near(t, frozenset((p,)))) for t in asked]


def _prob(logit: float | None) -> float:
    return 0.0 if logit is None or not math.isfinite(logit) else sigmoid(logit)


def features(question: str, cards: Sequence[Card], lead: Lead, stats: TermStatistics,
             reader_probs: Sequence[float] | None = None, language: str | None = None) -> dict[str, float]:
    """The gate's features (``FEATURES``) for ``lead``, the reader's choice among ``cards``;
    ``reader_probs``: the pair reader's probabilities for ``reader_candidates`` (None: no reader).
    The question is read as the cards write (``written_forms.as_asked``): a spelled-out name
    counts as named, a number in words meets the card's digits."""
    question = as_asked(question, language)
    card = lead.card
    sentences = [s for c in cards for s in (c.sentences or ())]
    lead_sentence = (card.sentences or ())[lead.index]
    card_terms = _terms_of(f"{card.title} {card.text}")
    asked = _spelled_as(asked_terms(question, card.title), card_terms, stats)
    sentence_terms = _terms_of(f"{card.title} {lead_sentence[0]}")
    missing = [stats.idf(t) for t in asked if t not in card_terms]
    unknown = sum(1 for t in asked if stats.df.get(t, 0) == 0)
    dense = [c.dense if c.dense is not None else -math.inf for c in cards]
    bm25 = [c.bm25 if c.bm25 is not None else -math.inf for c in cards]
    position = next((i for i, c in enumerate(cards) if c is card), len(cards))
    agreement = 0.0
    if card.dense is not None and card.dense >= max(dense):
        agreement += 0.5
    if card.bm25 is not None and card.bm25 >= max(bm25):
        agreement += 0.5
    return {
        "lead_similarity": lead_sentence[1],
        "best_similarity": max(s[1] for s in sentences),
        "lead_sentence_prob": _prob(lead_sentence[2]),
        "best_sentence_prob": max(_prob(s[2]) for s in sentences),
        "top_card_prob": cards[0].relevance or 0.0,
        "runner_up_prob": (cards[1].relevance or 0.0) if len(cards) > 1 else 0.0,
        "lead_card_prob": card.relevance or 0.0,
        "lead_margin": lead_sentence[1] - statistics.median(s[1] for s in card.sentences or (lead_sentence,)),
        "card_coverage": weighted_coverage(asked, card_terms, stats),
        "sentence_coverage": weighted_coverage(asked, sentence_terms, stats),
        "missing_idf": max(missing) / stats.max_idf if missing else 0.0,
        "unknown_share": unknown / len(asked) if asked else 0.0,
        "agreement": agreement,
        "lead_rank": min(position, 4) / 4,
        "short_question": 1.0 if len(asked) <= 2 else 0.0,
        **_spec2(question, cards, card, lead_sentence, asked, card_terms, stats),
        **reader_features(reader_probs),
    }


def reader_candidates(cards: Sequence[Card], lead: Lead, top_n: int) -> list[str]:
    """What the pair reader reads: the ``top_n`` sentences closest in meaning to the question
    among the first two cards and the lead's card, each as "title: sentence" (how it was
    trained). Bounded so that its cost per chat is bounded."""
    pool = [*cards[:2], *([lead.card] if lead.card not in cards[:2] else [])]
    scored = sorted(((s[1], f"{c.title}: {s[0]}") for c in pool for s in c.sentences or () if len(s[0]) >= 12),
                    key=lambda x: -x[0])
    return [text for _, text in scored[:top_n]]


def reader_features(probs: Sequence[float] | None) -> dict[str, float]:
    ranked = sorted(probs or (), reverse=True)
    if not ranked:
        return dict.fromkeys(READER_FEATURES, 0.0)
    return {"reader_best": ranked[0], "reader_margin": ranked[0] - (ranked[1] if len(ranked) > 1 else 0.0)}


class PairReader(Protocol):
    """Scores (question, passage) pairs: one logit per passage (``adapters/pair_reader.py``);
    None while no model is loaded (not trained on this machine yet, or still loading)."""

    def logits(self, question: str, passages: Sequence[str]) -> Sequence[float] | None: ...


def recipe_sha256(recipe: Mapping[str, Any]) -> str:
    """The SHA-256 of a pair reader's recipe (canonical JSON): what the artefact pins."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class ReaderSpec:
    """The pair model an artefact's ``+reader`` models were fitted with, pinned by its RECIPE
    (training config, base model identity, training data's SHA-256), not by its weights: every
    machine trains its own (``attesta answer train-reader``), and two trainings of one recipe
    need not give the same bytes. The weights' SHA-256 is recorded in the reader's folder."""

    version: str
    recipe_sha256: str
    top_n: int
    max_length: int


def _best_of(card: Card) -> float:
    return max((s[1] for s in card.sentences or ()), default=-1.0)


def _spec2(question: str, cards: Sequence[Card], card: Card, lead_sentence: tuple[str, float, float | None],
           asked: Sequence[str], card_terms: frozenset[str], stats: TermStatistics) -> dict[str, float]:
    """The features added in spec 2 (see ``FEATURES``)."""
    others = [c for c in cards if c is not card]
    own = sorted((s[1] for s in card.sentences or () if s is not lead_sentence), reverse=True)
    dense_others = [c.dense for c in others if c.dense is not None]
    bm25_total = sum(c.bm25 for c in cards if c.bm25 is not None and c.bm25 > 0)
    question_terms = _terms_of(question)
    name_terms = [t for t in _terms_of(card.title) if stats.df.get(t, 0) < stats.n_docs // 4]
    # A title often names a product twice ("Velnorex (velnorexant)"): one of its words is enough.
    named = 1.0 if any(_near(t, question_terms) for t in name_terms) else 0.0
    best_cov = max((weighted_coverage(asked, _terms_of(f"{card.title} {s[0]}"), stats)
                    for s in card.sentences or ()), default=0.0)
    missing_sum = sum(stats.idf(t) for t in asked if t not in card_terms) / stats.max_idf
    # A long question (a story, context around it) asks its question last: what the last
    # sentence asks is what the card must state; the rest is scene-setting.
    focus = _spelled_as(asked_terms(focus_of(question), card.title), card_terms, stats)
    focus_missing = [stats.idf(t) for t in focus if t not in card_terms]
    return {
        "card_gap": _best_of(card) - max((_best_of(c) for c in others), default=0.0),
        "sentence_gap": lead_sentence[1] - (own[0] if own else 0.0),
        "dense_margin": (card.dense - max(dense_others)) if card.dense is not None and dense_others else 0.0,
        "bm25_share": (card.bm25 or 0.0) / bm25_total if bm25_total > 0 and (card.bm25 or 0) > 0 else 0.0,
        "named": named,
        "best_sentence_coverage": best_cov,
        "missing_idf_sum": min(missing_sum, 3.0),
        "asked_count": math.log1p(len(asked)) / math.log(30),
        "focus_coverage": weighted_coverage(focus, card_terms, stats),
        "focus_missing_idf": max(focus_missing) / stats.max_idf if focus_missing else 0.0,
    }


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def focus_of(question: str) -> str:
    """The question's last sentence that asks something (ends with "?"), else its last
    sentence, else the whole question; a clause after a colon counts as a sentence."""
    parts = [p.strip() for p in _SENTENCE_END.split(question.replace(":", ". ")) if p.strip()]
    if not parts:
        return question
    asking = [p for p in parts if p.endswith("?")]
    return (asking or parts)[-1]


def language_group(language: str | None) -> str:
    """English, or unknown (retrieval detected none: English is what the KB is written in),
    against every other language."""
    return "en" if language in (None, "", "en") else "other"


def path_group(cards: Sequence[Card]) -> str:
    """``full`` when the reranker scored the cards and the lead candidates (English questions
    on the full path), else ``fused``."""
    scored = cards and cards[0].relevance is not None and any(
        s[2] is not None for c in cards for s in (c.sentences or ()))
    return "full" if scored else "fused"


@dataclass(frozen=True)
class Logistic:
    """``sigmoid(intercept + coef . (x - mean) / scale)`` over ``FEATURES``, and the threshold
    the probability must reach."""

    intercept: float
    coef: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(
            w * (values[name] - m) / s
            for name, w, m, s in zip(FEATURES, self.coef, self.mean, self.scale, strict=True))
        return sigmoid(z)


@dataclass(frozen=True)
class Decision:
    grounded: bool
    probability: float
    model: str  # "<language group>/<path group>"
    threshold: float = 0.5  # the threshold the model that judged applies


def _logistic(key: str, m: Mapping[str, Any]) -> Logistic:
    model = Logistic(float(m["intercept"]), tuple(map(float, m["coef"])),
                     tuple(map(float, m["mean"])), tuple(map(float, m["scale"])),
                     float(m["threshold"]))
    sizes = {len(model.coef), len(model.mean), len(model.scale)}
    numbers = (model.intercept, model.threshold, *model.coef, *model.mean, *model.scale)
    if sizes != {len(FEATURES)} or not all(math.isfinite(x) for x in numbers) \
            or not all(s > 0 for s in model.scale):
        raise GateArtefactInvalid(f"model {key}: wrong sizes or non-finite numbers")
    return model


@dataclass(frozen=True)
class GateModel:
    """The artefact's models. With a pair reader (``reader``, of the recipe ``reader_spec``
    pins), English questions on a path with a reader model (``reader_models``, the artefact's
    ``pair_reader.models``: the full path) are judged by that model, which reads the reader's
    scores (reported as ``en/<path>+reader``); without one (not trained on this machine yet,
    still loading, another recipe, no torch) by the ``en/*`` models, fitted without it."""

    version: str
    stats: TermStatistics
    models: Mapping[str, Logistic]
    reader_spec: ReaderSpec | None = None
    reader_models: Mapping[str, Logistic] = field(default_factory=dict)
    reader: PairReader | None = None

    def model_for(self, language: str | None, cards: Sequence[Card]) -> str:
        return f"{language_group(language)}/{path_group(cards)}"

    def reads(self, key: str) -> bool:
        """Whether the reader is asked for this model's questions (English, on a path with a
        reader model)."""
        return self.reader is not None and self.reader_spec is not None and key in self.reader_models

    def decide(self, question: str, cards: Sequence[Card], lead: Lead,
               language: str | None = None) -> Decision:
        key = self.model_for(language, cards)
        model = self.models[key]
        probs = None
        if self.reads(key):
            assert self.reader is not None and self.reader_spec is not None  # reads() says so
            passages = reader_candidates(cards, lead, self.reader_spec.top_n)
            logits = self.reader.logits(as_asked(question, language), passages) if passages else None
            if logits:  # None: no reader loaded (yet): the reader-less model judges
                probs = [_prob(x) for x in logits]
                model = self.reader_models[key]
                key += "+reader"
        p = model.probability(features(question, cards, lead, self.stats, probs, language))
        return Decision(p >= model.threshold, p, key, model.threshold)

    def with_reader(self, reader: PairReader) -> GateModel:
        if self.reader_spec is None:
            raise GateArtefactInvalid("this artefact names no pair reader")
        return replace(self, reader=reader)

    @classmethod
    def from_dict(cls, data: Any) -> GateModel:
        """Validates an artefact's JSON (see ``benchmarks/train_grounding_gate.py``)."""
        try:
            if data.get("kind") != "attesta-grounding-gate":
                raise GateArtefactInvalid("not a grounding-gate artefact (kind)")
            if data.get("feature_spec") != FEATURE_SPEC or tuple(data.get("features", ())) != FEATURES:
                raise GateArtefactInvalid(
                    f"built for feature spec {data.get('feature_spec')!r} "
                    f"({len(data.get('features', ()))} features); this code computes spec "
                    f"{FEATURE_SPEC} ({len(FEATURES)}): rebuild it with "
                    "benchmarks/train_grounding_gate.py")
            version = str(data["version"])
            if "sha256" in data and data["sha256"] != content_sha256(data):
                raise GateArtefactInvalid("its sha256 does not match its content (edited by hand?)")
            idf = data["idf"]
            # Document frequencies are stored by a KB word that has the stem, not by the stem:
            # a stem need not be a word of the KB, the word always is.
            df: dict[str, int] = {}
            for word, count in idf["words"].items():
                key = stem(str(word))
                df[key] = max(df.get(key, 0), int(count))
            stats = TermStatistics(int(idf["n_docs"]), df)
            if stats.n_docs < 1:
                raise GateArtefactInvalid("idf.n_docs must be at least 1")
            models = {key: _logistic(key, data["models"][key])
                      for key in (f"{lg}/{pg}" for lg in LANGUAGE_GROUPS for pg in PATH_GROUPS)}
            spec = data.get("pair_reader")
            if spec is None:
                return cls(version, stats, models)
            reader_spec = ReaderSpec(str(spec["version"]), recipe_sha256(spec["recipe"]),
                                     int(spec["top_n"]), int(spec["max_length"]))
            if spec.get("recipe_sha256") != reader_spec.recipe_sha256:
                raise GateArtefactInvalid("pair_reader.recipe_sha256 does not match its recipe")
            # English models only, for the paths where the reader earned its cost (the full
            # path in 2026.12 gates): on the others it is not called.
            reader_models = {str(key): _logistic(f"{key}+reader", m) for key, m in spec["models"].items()}
            if not reader_models or not set(reader_models) <= {f"en/{pg}" for pg in PATH_GROUPS}:
                raise GateArtefactInvalid(f"pair_reader.models: {sorted(reader_models)} (en/<path> models expected)")
        except GateArtefactInvalid:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise GateArtefactInvalid(f"malformed grounding artefact: {exc!r}") from exc
        return cls(version, stats, models, reader_spec, reader_models)
