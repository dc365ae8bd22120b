"""Kafka intake of the collector: our assistant's replies (``chat.answered.v1``).

Only replies whose request id is a collection id (``col-...``) are ours; the rest belong to the
gateway's callers and are skipped. Linking a reply is idempotent (a status guard), so a
redelivery changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from attesta_collector.service_layer.collecting import CollectorTopics, on_assistant_answer
from attesta_collector.service_layer.unit_of_work import UnitOfWork
from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered
from attesta_platform.consuming import GroupConsumer
from attesta_platform.messaging import Delivery, Messaging


def register_consumers(messaging: Messaging, new_uow: Callable[[], UnitOfWork],
                       topics: CollectorTopics, *, group_id: str = "collector",
                       auto_offset_reset: str = "latest") -> GroupConsumer:
    async def link_assistant_answer(env: Envelope[ChatAnswered], delivery: Delivery) -> None:
        await on_assistant_answer(new_uow(), topics, env.payload)

    # latest: a new collector group has no business with replies older than itself.
    return messaging.consume(topics.chat_answered, group_id=group_id, handler=link_assistant_answer,
                             auto_offset_reset=auto_offset_reset)
