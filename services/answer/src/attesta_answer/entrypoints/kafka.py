"""Kafka subscription of the answer service: ``retrieval.completed.v1`` -> ``AnswerQuestion``.

Retry and dead letters are the messaging core's (``attesta_platform``): the handler raises
nothing of its own (a failed generation is a reply with its reason).
"""

from __future__ import annotations

from typing import Any

from attesta_answer.domain.commands import AnswerQuestion
from attesta_contracts import Envelope
from attesta_contracts.chat import RetrievalCompleted
from attesta_contracts.topics import RETRIEVAL_COMPLETED
from attesta_platform.bus import MessageBus
from attesta_platform.messaging import Delivery, Messaging

CONSUMER_GROUP = "answer"


def subscribe(messaging: Messaging, bus: MessageBus, *, topic: str = RETRIEVAL_COMPLETED,
              group_id: str = CONSUMER_GROUP) -> Any:
    """Answer every retrieval result read from ``topic`` (tests read their own copy)."""

    async def answer(env: Envelope[RetrievalCompleted], delivery: Delivery) -> None:
        await bus.handle(AnswerQuestion(env.payload, env.event_id, env.correlation_id,
                                        env.occurred_at, delivery.offset))

    return messaging.consume(topic, group_id=group_id, handler=answer)
