"""Wiring of the answer service (walking skeleton)."""

from __future__ import annotations

import asyncio

from attesta_contracts.topics import CHAT_ANSWERED, DEAD_LETTERED, RETRIEVAL_COMPLETED
from attesta_platform.logs import configure_logging
from attesta_platform.messaging import Messaging
from attesta_platform.service import serve
from attesta_platform.settings import ServiceSettings, load_settings

NAME = "answer"


async def _main() -> None:
    from attesta_answer.service_layer.handlers import make_answer

    settings = load_settings(ServiceSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    messaging = Messaging.from_settings(settings, NAME)
    messaging.consume(RETRIEVAL_COMPLETED, group_id=NAME, handler=make_answer(messaging))
    await serve(NAME, messaging, [RETRIEVAL_COMPLETED, CHAT_ANSWERED, DEAD_LETTERED],
                settings.kafka_partitions, health_host=settings.health_host,
                health_port=settings.health_port)


def main() -> None:
    asyncio.run(_main())
