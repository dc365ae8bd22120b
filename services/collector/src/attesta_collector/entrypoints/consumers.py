"""Kafka intake of the collector: our assistant's replies (``chat.answered.v1``).

Only replies whose request id is a collection id (``col-...``) are ours; the rest belong to the
gateway's callers and are skipped. Linking a reply is idempotent (a status guard), so a
redelivery changes nothing. The subscriber is an adapter: the reply in, ``LinkAssistantAnswer``
to the bus; what a failure means (retry or dead letter) is the platform's consume path's.
"""

from __future__ import annotations

from attesta_collector.domain.commands import LinkAssistantAnswer
from attesta_collector.service_layer.collecting import CollectorTopics
from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import GroupConsumer
from attesta_platform.messaging import Delivery, Messaging


def register_consumers(messaging: Messaging, bus: MessageBus, topics: CollectorTopics, *,
                       group_id: str = "collector",
                       auto_offset_reset: str = "latest") -> GroupConsumer:
    async def link_assistant_answer(env: Envelope[ChatAnswered], delivery: Delivery) -> None:
        await bus.handle(LinkAssistantAnswer(env.payload))

    # latest: a new collector group has no business with replies older than itself.
    return messaging.consume(topics.chat_answered, group_id=group_id, handler=link_assistant_answer,
                             auto_offset_reset=auto_offset_reset)
