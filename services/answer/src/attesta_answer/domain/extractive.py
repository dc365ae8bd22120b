"""The offline generator: an extractive answer from the retrieved cards (no network, no model
of its own).

It answers with the 1–3 sentences of the context that best answer the question, leading with
the one that answers it, and cites each sentence's card with the sentence as the span.

**By meaning** (``draft_by_meaning``, used whenever the retrieval sent sentence evidence, as
the retrieval service always does). The reader scores every sentence of the returned cards with
models, never with stems: the embedder's similarity of the question to "card title: sentence",
plus, on the full path, ``CROSS_ENCODER_WEIGHT`` times the cross-encoder's probability for
(question, "card title: sentence"), which retrieval computes for the best card's sentences and
the closest ones of the next cards. The lead is the best-scored sentence (a small prior for the retriever's order breaks
near-ties); at most two more sentences of the same card follow, in card order, when they score
nearly as well. Whether that answer is given at all is ``domain.grounding``'s learned decision
(a versioned artefact); no intent word lists.

**Lexical fallback** (``draft_answer`` on cards without evidence: an older retrieval, tests).
How a sentence is scored (all lexical, Snowball-stemmed, stop words dropped):
- coverage: the IDF-weighted share of the question's terms the sentence contains (IDF over
  the context's sentences, so a drug name present everywhere weighs less than "dose"); the
  card title's terms count as present in every sentence of the card ("it" is the subject), and
  a question word asking for a kind of fact is matched by a word carrying it ("makes" by
  "manufactured");
- card coverage: the same share over the whole card, so the card about the entity asked for
  wins (keeps look-alike names apart: Velnorex vs Velnorax);
- intent: the question asks for a kind of fact (dose, maker, mechanism, adverse effects,
  contraindications, pregnancy, approval, half-life, prevalence, diagnosis, treatment, outcome,
  duration, equipment, leadership, founding, age, prognosis, supply form, children, kidneys;
  "what is X" prefers a card's opening sentence); a sentence carrying it gets a bonus, more for
  two cue words than one;
- rank: a small prior for the retriever's order.

Ungrounded (the reply then says the KB does not have it and cites nothing): the lead's card
carries no more than ``MIN_CARD_COVERAGE`` of the question, or the lead sentence less than
``MIN_COVERAGE``.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from attesta_answer.domain.grounding import GateModel, Lead, sigmoid
from attesta_answer.domain.model import Card, Draft
from attesta_answer.domain.text import content_terms, sentences, stem

GENERATOR_NAME = "offline-extractive-v2"
MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 700
MIN_CARD_COVERAGE = 0.5  # the lead's card must carry more than this share of the question's
# (IDF-weighted) terms
MIN_COVERAGE = 0.2  # ... and the lead sentence itself
FOLLOW_RATIO = 0.6  # a further sentence must score at least this share of the lead's score

# (question words that ask for a kind of fact, words of a sentence that carries it): stems.
_INTENTS_RAW: tuple[tuple[str, str], ...] = (
    ("dose doses dosed dosing much mg often frequency schedule regimen maximum max",
     "dose doses dosing mg maximum exceed"),
    ("make makes made manufacture manufactures manufacturer company maker produces produce sells "
     "behind owns",
     "manufactured made makes marketed company maker"),
    ("work works mechanism act acts action",
     "mechanism blocks inhibitor inhibits binds activates agonist antagonist works"),
    ("side effects adverse reactions reaction",
     "adverse effects reactions common"),
    ("contraindicated contraindication contraindications avoid safe shouldn't warnings warning "
     "candidate candidates eligible",
     "contraindications contraindicated avoid warning"),
    ("approved approval year",
     "approved approval"),
    ("half-life half life long last lasts eliminated elimination stay body",
     "half-life elimination hours"),
    ("common prevalence prevalent many affect affects frequent",
     "prevalence affects adults per estimated"),
    ("diagnosed diagnosis diagnose cut-off cutoff threshold test level levels confirmed",
     "diagnosis diagnosed threshold cut-off above below confirmed"),
    ("treat treats treated treatment therapy manage managed indicated used first-line prescribed "
     "prescribe condition",
     "indicated treatment treated first-line therapy used"),
    ("success outcome outcomes recovery risk risks complication complications",
     "success recovery complication complications"),
    ("duration minutes hours anesthesia anaesthesia sedation performed",
     "minutes hours anesthesia sedation performed"),
    ("pregnant pregnancy breastfeeding breast-feeding nursing",
     "pregnancy breastfeeding lactation contraindicated"),
    ("children child pediatric kids paediatric teenagers teens adolescents",
     "children pediatric adolescents"),
    ("age ages old onset begin begins start starts",
     "ages begins onset"),
    ("outlook prognosis long-term remission survival",
     "remission prognosis outlook survival years"),
    ("supplied supply form formulation strengths available come",
     "supplied tablet capsule injection infusion cream strengths available"),
    ("equipment device devices instrument instruments tool tools",
     "operator device instrument catheter lamp laser implant stent system"),
    ("ceo leads leadership chief executive head runs",
     "ceo chief executive leads"),
    ("founder founded founders started",
     "founded founder started"),
    ("kidney kidneys renal egfr adjust adjusted adjustment",
     "renal egfr kidney halve adjustment"),
)
_WHAT_IS = ("what is", "what's", "what are", "describe", "tell me about", "who is", "what does")


@lru_cache(maxsize=1)
def _intents() -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    return tuple((frozenset(stem(w) for w in ask.split()), frozenset(stem(w) for w in cue.split()))
                 for ask, cue in _INTENTS_RAW)


@dataclass(frozen=True)
class _Sentence:
    card: Card
    index: int  # position in the card
    text: str
    terms: frozenset[str]


RANK_PRIOR = 0.01  # score given up per place in the retriever's order
# The cross-encoder's probability for (question, sentence) is added with this weight where
# retrieval sent it (full path). Chosen on dev (benchmarks/results/grounding_gate.json, reader):
# alone it picks the answering sentence far less often than the embedder (it learned whether a
# *card* answers, so every sentence of the right card scores alike); added to the similarity
# it breaks the embedder's near-ties.
CROSS_ENCODER_WEIGHT = 0.2
FOLLOW_MARGIN = 0.08  # a further sentence of the lead's card must score this close to the lead
MIN_SENTENCE_CHARS = 12


@dataclass(frozen=True)
class _Scored:
    score: float  # the reader's score, rank prior included
    card: Card
    index: int  # position in card.sentences
    text: str
    model_score: float  # the models' score alone (similarity + weighted cross-encoder probability)


def _reader_scores(cards: Sequence[Card]) -> list[_Scored]:
    """Every sentence of the evidence scored by the reader's models, the lead first: the
    embedder's similarity, plus the cross-encoder's probability where retrieval sent it."""
    pool = []
    for card in cards:
        for i, (text, sim, logit) in enumerate(card.sentences or ()):
            if len(text) < MIN_SENTENCE_CHARS:
                continue
            value = sim + (CROSS_ENCODER_WEIGHT * sigmoid(logit) if logit is not None else 0.0)
            pool.append(_Scored(value - RANK_PRIOR * card.rank, card, i, text, value))
    pool.sort(key=lambda p: (-p.score, p.card.rank, p.index))
    return pool


def choose_lead(cards: Sequence[Card]) -> Lead | None:
    """The sentence the reader leads with (``domain.grounding.Lead``); None without evidence."""
    pool = _reader_scores(cards)
    return Lead(pool[0].card, pool[0].index) if pool else None


def draft_by_meaning(question: str, cards: Sequence[Card], gate: GateModel,
                     language: str | None = None) -> Draft:
    """The extractive draft from retrieval's sentence evidence (see the module docstring)."""
    pool = _reader_scores(cards)
    if not pool:
        return Draft("", (), grounded=False)
    lead = pool[0]
    if not gate.decide(question, cards, Lead(lead.card, lead.index), language).grounded:
        return Draft("", (), grounded=False)
    follow = [(p.index, p.text) for p in pool[1:]
              if p.card is lead.card and p.model_score >= lead.model_score - FOLLOW_MARGIN][:MAX_SENTENCES - 1]
    length, chosen = len(lead.text), []
    for i, text in follow:
        if length + len(text) + 1 > MAX_ANSWER_CHARS:
            continue
        chosen.append((i, text))
        length += len(text) + 1
    ordered = [(lead.index, lead.text), *sorted(chosen)]
    first = (lead.card.sentences or ())[0][0] if lead.card.sentences else ""
    answer = " ".join([_lead_with_subject(lead.text, first if lead.index else ""),
                       *(t for _, t in ordered[1:])])
    citations = tuple({"card_id": lead.card.card_id, "span": t} for _, t in ordered)
    return Draft(answer, citations, grounded=True)


def draft_answer(question: str, cards: Sequence[Card], gate: GateModel | None = None,
                 language: str | None = None) -> Draft:
    """The extractive draft for ``question`` over ``cards`` (already link-free): by meaning
    when the retrieval sent sentence evidence (decided by ``gate``, the shipped artefact when
    None), else lexically."""
    if any(card.sentences for card in cards):
        return draft_by_meaning(question, cards, gate or shipped_gate(), language)
    q_terms = list(dict.fromkeys(content_terms(question)))
    # A sentence is about its card's subject even when it says "it": the title's terms count
    # as present in every sentence of the card.
    title_terms = {card.card_id: frozenset(content_terms(card.title)) for card in cards}
    pool = [_Sentence(card, i, s, frozenset(content_terms(s)) | title_terms[card.card_id])
            for card in cards for i, s in enumerate(sentences(card.text)) if len(s) >= 12]
    if not q_terms or not pool:
        return Draft("", (), grounded=False)

    n = len(pool)
    df = {t: sum(1 for s in pool if t in s.terms) for t in q_terms}
    # A term no sentence has (a typo, an unknown word) weighs as much as a term one sentence has.
    weight = {t: math.log(1.0 + n / (1.0 + max(1, df[t]))) for t in q_terms}
    total = sum(weight.values())
    q_set = set(q_terms)
    wanted_cues = [cues for asks, cues in _intents() if asks & q_set]
    lowered = question.casefold()
    wants_definition = any(lowered.startswith(p) or f" {p} " in lowered for p in _WHAT_IS)
    card_terms = {card.card_id: set(title_terms[card.card_id]) for card in cards}
    for s in pool:
        card_terms[s.card.card_id] |= s.terms
    memo: dict[frozenset[str], float] = {}

    def coverage(terms: frozenset[str]) -> float:
        if terms not in memo:
            # A question word that asks for a kind of fact counts as matched by a word carrying
            # it ("makes" by "manufactured").
            asked = {a for asks, cues in _intents() if cues & terms for a in asks}
            memo[terms] = sum(weight[t] for t in q_terms if t in terms or t in asked) / total
        return memo[terms]

    card_cov = {card_id: coverage(frozenset(terms)) for card_id, terms in card_terms.items()}

    def score(s: _Sentence) -> float:
        value = coverage(s.terms) + 0.5 * card_cov[s.card.card_id]
        # Two cue words ("Mechanism: it blocks") say it more surely than one ("antagonist").
        value += 0.35 * sum(min(2, len(cues & s.terms)) / 2 for cues in wanted_cues)
        value += 0.25 * coverage(title_terms[s.card.card_id])
        if wants_definition and s.index == 0 and not wanted_cues:
            value += 0.3
        return value - 0.03 * s.card.rank

    scored = sorted(((score(s), s) for s in pool), key=lambda p: (-p[0], p[1].card.rank, p[1].index))
    lead_score, lead = scored[0]
    # Grounded: the lead's card carries most of what was asked and the lead some of it.
    if card_cov[lead.card.card_id] <= MIN_CARD_COVERAGE or coverage(lead.terms) < MIN_COVERAGE:
        return Draft("", (), grounded=False)

    chosen = [lead]
    covered = q_set & lead.terms
    length = len(lead.text)
    for value, s in scored[1:]:
        if len(chosen) >= MAX_SENTENCES or value < FOLLOW_RATIO * lead_score:
            break
        if s.card.card_id != lead.card.card_id or length + len(s.text) > MAX_ANSWER_CHARS:
            continue  # one card's sentences read as one answer; others would wander off
        adds = (q_set & s.terms) - covered
        if coverage(s.terms) == 0 or not (adds or any(cues & s.terms for cues in wanted_cues)):
            continue  # says nothing the answer does not already say
        chosen.append(s)
        covered |= s.terms & q_set
        length += len(s.text) + 1

    # Lead with the most direct sentence; the rest read in card order.
    ordered = [lead, *sorted(chosen[1:], key=lambda s: s.index)]
    answer = " ".join([_with_subject(lead, pool), *(s.text for s in ordered[1:])])
    citations = tuple({"card_id": s.card.card_id, "span": s.text} for s in ordered)
    return Draft(answer, citations, grounded=True)


_PRONOUN_START = re.compile(r"^(It|Its|They|Their|This)\b")
_SUBJECT = re.compile(r"^(.{2,80}?)\s(?:\(|is\b|are\b|was\b)")


def _with_subject(lead: _Sentence, pool: Sequence[_Sentence]) -> str:
    first = next((s for s in pool if s.card is lead.card and s.index == 0), None)
    return _lead_with_subject(lead.text, first.text if first is not None and first is not lead else "")


def _lead_with_subject(lead: str, first: str) -> str:
    """A lead that opens with "It ..." names what "it" is, taken from the card's own first
    sentence ``first`` ("Velnorax (velnoraxitide) is ..." -> "Velnorax: it is marketed by ...")."""
    if not _PRONOUN_START.match(lead):
        return lead
    match = _SUBJECT.match(first) if first else None
    if match is None or len(match.group(1).split()) > 6:
        return lead
    return f"{match.group(1).strip()}: {lead[0].lower()}{lead[1:]}"


@lru_cache(maxsize=1)
def shipped_gate() -> GateModel:
    """The grounding artefact shipped with the package, loaded once (a missing or mismatched
    one raises ``GateArtefactInvalid``: the service does not start without its gate)."""
    from attesta_answer.adapters.gate_artefact import load_gate  # file I/O lives in adapters

    return load_gate()


class OfflineGenerator:
    """The default generator (``ATTESTA_ANSWER_GENERATOR=offline``): its name carries the
    grounding artefact's version (``offline-extractive-v2+gate-<version>``)."""

    def __init__(self, gate: GateModel | None = None) -> None:
        self.gate = gate or shipped_gate()
        self.name = f"{GENERATOR_NAME}+gate-{self.gate.version}"

    async def draft(self, question: str, cards: Sequence[Card], language: str | None = None) -> Draft:
        if self.gate.reader is not None:
            # The pair reader runs a cross-encoder (~80 ms on one core): off the event loop, so
            # other chats and the consumer's heartbeats go on meanwhile.
            return await asyncio.to_thread(draft_answer, question, cards, self.gate, language)
        return draft_answer(question, cards, self.gate, language)

    def warm_up(self) -> None:
        """Load the stemmer and build the intent table before the first request."""
        _intents()
        content_terms("warm up")

    async def aclose(self) -> None:
        return None
