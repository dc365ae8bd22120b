"""Wiring of the retrieval service (walking skeleton)."""

from __future__ import annotations

import asyncio

from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED, RETRIEVAL_COMPLETED
from attesta_platform.logs import configure_logging
from attesta_platform.messaging import Messaging
from attesta_platform.service import serve
from attesta_platform.settings import ServiceSettings, load_settings

NAME = "retrieval"


async def _main() -> None:
    from attesta_kb import load_cards
    from attesta_retrieval.domain.lexical import LexicalIndex
    from attesta_retrieval.service_layer.handlers import make_retrieve

    settings = load_settings(ServiceSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    messaging = Messaging.from_settings(settings, NAME)
    index = LexicalIndex(load_cards())
    messaging.consume(CHAT_REQUESTED, group_id=NAME, handler=make_retrieve(index, messaging))
    await serve(NAME, messaging, [CHAT_REQUESTED, RETRIEVAL_COMPLETED, DEAD_LETTERED],
                settings.kafka_partitions, health_host=settings.health_host,
                health_port=settings.health_port)


def main() -> None:
    asyncio.run(_main())
