"""The answer service's seam (issue #27): every command and query has a handler, and the real
bootstrap binds each one's dependencies (it refuses a handler whose dependency is missing)."""

from __future__ import annotations

import uuid

import pytest

from attesta_answer.bootstrap import build_bus
from attesta_answer.domain import commands
from attesta_answer.domain.extractive import OfflineGenerator
from attesta_answer.service_layer.handlers import HANDLERS, run_id_for
from attesta_contracts import utc_now
from attesta_contracts.chat import AnswerStatus, RetrievalCompleted
from attesta_contracts.topics import CHAT_ANSWERED, RUNS_RECORDED
from attesta_platform.bus import Message, bootstrap

pytestmark = pytest.mark.unit


class RecordingPublisher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object, str]] = []

    async def publish(self, topic_name, payload, *, key, correlation_id, causation_id=None,
                      event_id=None):
        self.sent.append((topic_name, payload, key))

        class Published:  # the envelope's one field the handler reads
            pass

        published = Published()
        published.event_id = event_id
        return published


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for v in vars(commands).values()
                if isinstance(v, type) and issubclass(v, Message) and v is not Message}
    assert messages == {commands.AnswerQuestion, commands.BuildAnswer}
    assert set(HANDLERS) == messages
    assert build_bus(OfflineGenerator(), publisher=RecordingPublisher()).messages == messages


class Unknown(Message[None]):
    """A message nobody handles."""


async def test_a_missing_handler_or_dependency_is_refused():
    with pytest.raises(LookupError, match="Unknown"):
        await build_bus(OfflineGenerator()).handle(Unknown())
    with pytest.raises(TypeError, match="publisher"):  # the bare binder: what build_bus adds
        bootstrap(HANDLERS, generator=OfflineGenerator())


async def test_answer_question_publishes_the_answer_then_the_run_through_the_bus():
    publisher = RecordingPublisher()
    bus = build_bus(OfflineGenerator(), publisher=publisher, default_workspace="ws")
    event_id = uuid.uuid4()
    await bus.handle(commands.AnswerQuestion(
        RetrievalCompleted(request_id="r-1", question="what?", chunks=[]), event_id, "corr",
        utc_now()))
    # no cards: a no_context answer, which still records a run
    assert [(t, k) for t, _, k in publisher.sent] == [(CHAT_ANSWERED, "r-1"),
                                                      (RUNS_RECORDED, run_id_for(event_id))]
    assert publisher.sent[0][1].status == AnswerStatus.NO_CONTEXT
    built = await bus.handle(commands.BuildAnswer(
        RetrievalCompleted(request_id="r-2", question="what?", chunks=[])))
    assert built.reply.status == AnswerStatus.NO_CONTEXT and len(publisher.sent) == 2
