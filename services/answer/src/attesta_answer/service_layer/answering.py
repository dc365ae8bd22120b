"""Building one chat answer from one retrieval result (no Kafka here).

Order of work, each step's rule in its own module:
1. the retrieved chunks become link-free cards (``domain.model.visible_cards``);
2. the generator drafts an answer (offline extractive, or an LLM);
3. the URL firewall runs over the answer text (``domain.firewall``), and what no store can
   keep (NUL, surrogates: ``domain.text.storable``) is removed from it;
4. citations are reconciled against the cards, then enriched immediately after
   (``domain.citations.reconcile_and_enrich``);
5. the status follows: ``answered`` with at least one surviving citation, else ``no_context``
   (the answer says so and cites nothing); ``failed`` when the generator could not answer
   after its bounded retries: the user still gets a reply with the reason.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from attesta_answer.domain.citations import DroppedCitation, reconcile_and_enrich
from attesta_answer.domain.firewall import strip_links
from attesta_answer.domain.language import no_context_answer, with_sources_note
from attesta_answer.domain.model import (
    Card,
    Draft,
    GeneratorOutputInvalid,
    visible_cards,
)
from attesta_answer.domain.text import storable
from attesta_contracts.chat import AnswerStatus, ChatAnswered, Citation, RetrievalCompleted
from attesta_platform.llm import LLMBadOutput, LLMUnavailable
from attesta_platform.logs import get_logger

log = get_logger("attesta.answer")

FAILED_ANSWER = "Sorry, I could not build an answer right now. Please try again in a moment."
MAX_ERROR_CHARS = 500
_HTTP_BODY = re.compile(r"(HTTP \d{3}):.*", re.S)
MAX_ANSWER_CHARS = 4000  # a generator asked for 1-3 sentences that writes more is cut here


def truncate(text: str, limit: int = MAX_ANSWER_CHARS) -> str:
    """``text`` cut at the last space before ``limit`` characters, with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut.rsplit(None, 1)[0] if " " in cut else cut) + " …"


class Generator(Protocol):
    name: str

    # ``language``: the question's, as retrieval detected it (None: unknown, read as English).
    async def draft(self, question: str, cards: Sequence[Card], language: str | None = None) -> Draft: ...

    def warm_up(self) -> None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class BuiltAnswer:
    reply: ChatAnswered
    dropped: list[DroppedCitation] = field(default_factory=list)


def answer_sha256(text: str) -> str:
    """SHA-256 of the answer's exact UTF-8 bytes (the run's evidence)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def failure_reason(exc: BaseException) -> str:
    """The reason a user sees: what failed, never the upstream's response body."""
    message = _HTTP_BODY.sub(r"\1", str(exc))
    if isinstance(exc, LLMUnavailable):
        reason = f"generator unavailable after bounded retries: {message}"
    elif isinstance(exc, LLMBadOutput):
        reason = f"generator output unusable after bounded retries: {message}"
    elif isinstance(exc, GeneratorOutputInvalid):
        reason = f"generator output unusable: {exc}"
    else:
        reason = f"generator error: {type(exc).__name__}"  # no internals in a user-facing reply
    return reason[:MAX_ERROR_CHARS]


async def build_answer(retrieval: RetrievalCompleted, generator: Generator) -> BuiltAnswer:
    started = time.perf_counter()
    timings = {f"retrieval.{k}": v for k, v in retrieval.timings_ms.items()}
    cards = visible_cards(retrieval.chunks, retrieval.hybrid_path)
    prepared = time.perf_counter()
    timings["answer.cards"] = (prepared - started) * 1000

    def reply(status: AnswerStatus, text: str, citations: Sequence[Citation] = (),
              error: str | None = None) -> ChatAnswered:
        timings["answer.total"] = (time.perf_counter() - started) * 1000
        return ChatAnswered(
            request_id=retrieval.request_id, question=retrieval.question, answer=text,
            citations=list(citations), status=status, error=error,
            hybrid_path=retrieval.hybrid_path, generator=generator.name,
            answer_sha256=answer_sha256(text), timings_ms=timings, reply_to=retrieval.reply_to)

    # A question in another language is told, in it, that nothing was found (issue #24).
    not_found = no_context_answer(retrieval.language)
    if not cards:
        return BuiltAnswer(reply(AnswerStatus.NO_CONTEXT, not_found))
    try:
        draft = await generator.draft(retrieval.question, cards, retrieval.language)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a reply with its reason
        reason = failure_reason(exc)
        log.warning("answer generation failed", request_id=retrieval.request_id,
                    generator=generator.name, error=repr(exc)[:MAX_ERROR_CHARS])
        timings["answer.generate"] = (time.perf_counter() - prepared) * 1000
        return BuiltAnswer(reply(AnswerStatus.FAILED, FAILED_ANSWER, error=reason))
    generated = time.perf_counter()
    timings["answer.generate"] = (generated - prepared) * 1000

    text = storable(strip_links(truncate(draft.answer)))
    timings["answer.firewall"] = (time.perf_counter() - generated) * 1000
    result = reconcile_and_enrich(draft.citations, cards, retrieval.chunks, retrieval.hybrid_path)
    timings["answer.reconcile"] = result.reconcile_ms
    timings["answer.enrich"] = result.enrich_ms

    if not draft.grounded or not result.citations or not text:
        # Nothing grounds this text (no relevant sentence, or every citation failed
        # reconciliation): the honest answer is that the KB does not say.
        return BuiltAnswer(reply(AnswerStatus.NO_CONTEXT, not_found), result.dropped)
    # The cards are in English: a question in another language is told so, in it (issue #24).
    text = with_sources_note(text, retrieval.language)
    return BuiltAnswer(reply(AnswerStatus.ANSWERED, text, result.citations), result.dropped)
