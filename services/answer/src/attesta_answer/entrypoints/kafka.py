"""Kafka subscription of the answer service."""

from __future__ import annotations

from typing import Any

from attesta_answer.service_layer.answering import Generator
from attesta_answer.service_layer.handlers import AnswerTopics, make_answer_handler
from attesta_platform.messaging import Messaging

CONSUMER_GROUP = "answer"


def subscribe(messaging: Messaging, generator: Generator, *, default_workspace: str,
              topics: AnswerTopics = AnswerTopics(), group_id: str = CONSUMER_GROUP) -> Any:
    """Answer every retrieval result (manual commits and dead letters: the messaging core)."""
    handler = make_answer_handler(messaging, generator, default_workspace=default_workspace,
                                  topics=topics)
    return messaging.consume(topics.retrieval_completed, group_id=group_id, handler=handler)
