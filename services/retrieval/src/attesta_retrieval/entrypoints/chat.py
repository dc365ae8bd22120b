"""Kafka subscription of the retrieval service: ``chat.requested.v1`` -> ``RetrieveContext``.

Retry and dead letters are the messaging core's (``attesta_platform``).
"""

from __future__ import annotations

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import GroupConsumer
from attesta_platform.messaging import Delivery, Messaging
from attesta_retrieval.domain.commands import RetrieveContext


def subscribe_chat(messaging: Messaging, bus: MessageBus, *, group_id: str,
                   auto_offset_reset: str = "earliest") -> GroupConsumer:
    """Retrieve the context of every chat request."""

    async def retrieve(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        await bus.handle(RetrieveContext(env.payload, env.event_id, env.correlation_id,
                                         env.occurred_at, delivery.offset))

    return messaging.consume(CHAT_REQUESTED, group_id=group_id, handler=retrieve,
                             auto_offset_reset=auto_offset_reset)
