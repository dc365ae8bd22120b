"""Everything the answer service can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``generator``,
``publisher``, ``default_workspace``, ``metrics``); ``bootstrap.build_bus`` binds them once.
``answer_question`` is the work of ``retrieval.completed.v1``: build the answer, publish it,
then record a run. Answers and runs go to the contract's topics: a test or benchmark that
needs private copies wraps the publisher (``attesta_testing.infra.AliasedPublisher``).

Idempotency: every output id is derived from the input event id, so a redelivered retrieval
result re-publishes the same chat-answer event id, the same run id and the same run event id;
downstream inboxes drop the duplicates. The service keeps no state of its own.

Order: the chat answer first (a person is waiting for it), then the run. A crash between
the two leaves the offset uncommitted; the redelivery publishes both again under the same ids.

Skipped (issue #23): a result read after its request's deadline (the caller gave up: nothing is
published, counted in ``attesta_answer_expired_total``). No run: a failed generation, a
question with nothing storable left, and an anonymous chat when ``default_workspace`` is empty.
What goes into a run is ``storable``: a NUL or a surrogate, which no store downstream can keep,
is removed from the question and the answer, whoever produced the request.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from attesta_answer.domain import commands as c
from attesta_answer.domain.text import storable
from attesta_answer.service_layer.answering import BuiltAnswer, Generator, build_answer
from attesta_contracts import Envelope, derived_id, utc_now
from attesta_contracts.chat import AnswerStatus, RetrievalCompleted
from attesta_contracts.runs import ASSISTANT_ENGINE, RunRecorded
from attesta_contracts.topics import CHAT_ANSWERED, RUNS_RECORDED
from attesta_platform.bus import Handler, Message
from attesta_platform.logs import get_logger

# The metrics' type, for the type checker only: the adapter is injected by the bootstrap.
if TYPE_CHECKING:
    from attesta_answer.adapters.metrics import AnswerMetrics
log = get_logger("attesta.answer")
RUN_SOURCE = "assistant"


class Publisher(Protocol):
    """Where the answers go (``attesta_platform.messaging.Messaging`` in the service)."""

    async def publish(self, topic_name: str, payload: BaseModel, *, key: str,
                      correlation_id: str, causation_id: str | None = None,
                      event_id: uuid.UUID | None = None) -> Envelope[Any]: ...


def run_id_for(retrieval_event_id: object) -> str:
    return f"run-{derived_id('assistant-run', retrieval_event_id)}"


def run_for(built: BuiltAnswer, retrieval: RetrievalCompleted, *, run_id: str, workspace_id: str,
            requested_at: datetime) -> RunRecorded:
    reply = built.reply
    return RunRecorded(
        run_id=run_id, workspace_id=workspace_id, engine=ASSISTANT_ENGINE, model=reply.generator,
        prompt=retrieval.question, answer=reply.answer, answer_sha256=reply.answer_sha256,
        brand_ids=[],  # empty: audit against every brand of the workspace
        requested_at=requested_at, answered_at=max(utc_now(), requested_at), source=RUN_SOURCE,
        collection_method="assistant",  # our own assistant (issue #25: metrics split by method)
        # The collector's prompt and tags when it asked (absent on a person's chat).
        prompt_context=retrieval.prompt_context)


def record_outcome(built: BuiltAnswer, request_id: str, metrics: AnswerMetrics) -> None:
    reply = built.reply
    for drop in built.dropped:
        metrics.citations_dropped.labels(reason=drop.reason.value).inc()
    if built.dropped:
        log.info("citations dropped by reconciliation", request_id=request_id,
                 dropped=[{"reason": d.reason.value, "card_id": d.card_id, "span": d.span}
                          for d in built.dropped])
    for citation in reply.citations:
        for name in ("source_url", "source_license", "retrieved_score"):
            outcome = "set" if getattr(citation, name) is not None else "absent"
            metrics.enrichment_fields.labels(field=name, outcome=outcome).inc()
    metrics.replies.labels(status=reply.status.value, generator=reply.generator).inc()
    metrics.build_seconds.observe(reply.timings_ms.get("answer.total", 0.0) / 1000)


async def answer_question(cmd: c.AnswerQuestion, generator: Generator, publisher: Publisher,
                          default_workspace: str, metrics: AnswerMetrics) -> None:
    retrieval = cmd.retrieval
    now = utc_now()
    if retrieval.deadline is not None and now >= retrieval.deadline:
        metrics.expired.inc()
        log.info("retrieval result past its deadline: nobody is waiting for it",
                 request_id=retrieval.request_id, offset=cmd.offset,
                 late_s=round((now - retrieval.deadline).total_seconds(), 3))
        return
    retrieval = retrieval.model_copy(update={"question": storable(retrieval.question)})
    built = await build_answer(retrieval, generator)
    workspace_id = retrieval.workspace_id or default_workspace
    # A run records what the engine answered; a failed generation answered nothing.
    records_run = (built.reply.status != AnswerStatus.FAILED and bool(workspace_id)
                   and bool(retrieval.question))
    run_id = run_id_for(cmd.event_id) if records_run else None
    built = BuiltAnswer(built.reply.model_copy(update={"run_id": run_id}), built.dropped)

    answered = await publisher.publish(
        CHAT_ANSWERED, built.reply, key=retrieval.request_id,
        correlation_id=cmd.correlation_id, causation_id=str(cmd.event_id),
        event_id=derived_id("answer", cmd.event_id))
    record_outcome(built, retrieval.request_id, metrics)  # once published: retries don't count
    if run_id is None:
        return
    run = run_for(built, retrieval, run_id=run_id, workspace_id=workspace_id,
                  requested_at=cmd.requested_at)
    await publisher.publish(
        RUNS_RECORDED, run, key=run_id, correlation_id=cmd.correlation_id,
        causation_id=str(answered.event_id), event_id=derived_id("run-recorded", run_id))


async def build_answer_only(query: c.BuildAnswer, generator: Generator) -> BuiltAnswer:
    return await build_answer(query.retrieval, generator)


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.AnswerQuestion: answer_question,
    c.BuildAnswer: build_answer_only,
}
