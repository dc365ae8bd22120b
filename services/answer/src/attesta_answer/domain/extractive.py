"""The offline generator: an extractive answer from the retrieved cards (no network, no model).

It answers with the 1–3 sentences of the context that best answer the question, leading with
the most direct one, and cites each sentence's card with the sentence as the span.

**By meaning** (``draft_by_meaning``, used whenever the retrieval sent sentence evidence, as
the retrieval service always does): each sentence of the context comes with its similarity in
meaning to the question (cosine of MiniLM embeddings of the question and of "card title:
sentence", computed by retrieval). The lead is the most similar sentence (a small prior for
the retriever's order breaks near-ties); at most two more sentences of the same card follow,
in card order, when they are nearly as similar. Whether the context answers the question at
all is ``domain.grounding``'s decision: the lead's similarity, the share of what the question
asks (beyond the card's name) that the lead card states, and, on the full path, the reranker's
calibrated relevance, with weights and thresholds chosen on the dev questions for at most 10%
answers to questions the KB cannot answer (docs/answer-quality.md has the curve). No intent
word lists: the evidence carries over to wording nobody anticipated.

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

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from attesta_answer.domain.grounding import Evidence, fact_coverage
from attesta_answer.domain.model import Card, Draft
from attesta_answer.domain.text import content_terms, sentences, stem

GENERATOR_NAME = "offline-extractive-v1"
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


RANK_PRIOR = 0.01  # similarity given up per place in the retriever's order
FOLLOW_MARGIN = 0.08  # a further sentence of the lead's card must be this close to the lead


def _ranked_sentences(cards: Sequence[Card]) -> list[tuple[float, float, int, str, Card]]:
    """Every sentence of the evidence as (similarity - rank prior, similarity, position, text,
    card), the lead first."""
    pool = [(sim - RANK_PRIOR * card.rank, sim, i, text, card)
            for card in cards for i, (text, sim) in enumerate(card.sentences or ())
            if len(text) >= 12]
    pool.sort(key=lambda p: (-p[0], p[4].rank, p[2]))
    return pool


def grounding_evidence(question: str, cards: Sequence[Card]) -> Evidence | None:
    """The evidence the grounding decision reads (``domain.grounding``) for the lead sentence
    of ``cards``' sentence evidence; None when there is none."""
    return _lead_evidence(question, _ranked_sentences(cards))


def _lead_evidence(question: str, pool: list[tuple[float, float, int, str, Card]]) -> Evidence | None:
    if not pool:
        return None
    _, sim, _, _, card = pool[0]
    return Evidence(sim, fact_coverage(question, card.title, card.text), card.relevance)


def draft_by_meaning(question: str, cards: Sequence[Card]) -> Draft:
    """The extractive draft from retrieval's sentence evidence (see the module docstring)."""
    pool = _ranked_sentences(cards)
    evidence = _lead_evidence(question, pool)
    if evidence is None or not evidence.grounded:
        return Draft("", (), grounded=False)
    _, lead_sim, lead_i, lead_text, lead_card = pool[0]
    follow = [(i, text) for _, sim, i, text, card in pool[1:]
              if card is lead_card and sim >= lead_sim - FOLLOW_MARGIN][:MAX_SENTENCES - 1]
    length, chosen = len(lead_text), []
    for i, text in follow:
        if length + len(text) + 1 > MAX_ANSWER_CHARS:
            continue
        chosen.append((i, text))
        length += len(text) + 1
    ordered = [(lead_i, lead_text), *sorted(chosen)]
    first = (lead_card.sentences or ())[0][0] if lead_card.sentences else ""
    answer = " ".join([_lead_with_subject(lead_text, first if lead_i else ""), *(t for _, t in ordered[1:])])
    citations = tuple({"card_id": lead_card.card_id, "span": t} for _, t in ordered)
    return Draft(answer, citations, grounded=True)


def draft_answer(question: str, cards: Sequence[Card]) -> Draft:
    """The extractive draft for ``question`` over ``cards`` (already link-free): by meaning
    when the retrieval sent sentence evidence, else lexically."""
    if any(card.sentences for card in cards):
        return draft_by_meaning(question, cards)
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


class OfflineGenerator:
    """The default generator (``ATTESTA_ANSWER_GENERATOR=offline``)."""

    name = GENERATOR_NAME

    async def draft(self, question: str, cards: Sequence[Card]) -> Draft:
        return draft_answer(question, cards)

    def warm_up(self) -> None:
        """Load the stemmer and build the intent table before the first request."""
        _intents()

    async def aclose(self) -> None:
        return None
