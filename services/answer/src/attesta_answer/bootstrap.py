"""Wiring of the answer service: ``attesta run answer``."""

from __future__ import annotations

import asyncio

from attesta_answer.settings import AnswerSettings
from attesta_answer.service_layer.answering import Generator
from attesta_contracts.topics import CHAT_ANSWERED, DEAD_LETTERED, RETRIEVAL_COMPLETED, RUNS_RECORDED
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.service import serve
from attesta_platform.settings import load_settings

NAME = "answer"
log = get_logger("attesta.answer")


def build_generator(settings: AnswerSettings) -> Generator:
    if settings.answer_generator == "openai":
        from attesta_answer.adapters.llm_generator import LLMGenerator

        return LLMGenerator(settings.llm_config(), budget_s=settings.answer_llm_budget_s)
    from attesta_answer.adapters.gate_artefact import load_gate
    from attesta_answer.domain.extractive import OfflineGenerator

    return OfflineGenerator(load_gate(settings.answer_gate_path))  # no artefact: no start


async def _main() -> None:
    from attesta_answer.entrypoints.kafka import subscribe

    settings = load_settings(AnswerSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    generator = build_generator(settings)
    generator.warm_up()
    log.info("answer generator ready", generator=generator.name,
             kind=settings.answer_generator, workspace=settings.assistant_workspace)
    messaging = Messaging.from_settings(settings, NAME)
    subscribe(messaging, generator, default_workspace=settings.assistant_workspace,
              group_id=settings.answer_consumer_group)
    await serve(NAME, messaging, [RETRIEVAL_COMPLETED, CHAT_ANSWERED, RUNS_RECORDED, DEAD_LETTERED],
                settings.kafka_partitions, health_host=settings.health_host,
                health_port=settings.health_port, on_stopping=generator.aclose)


def main() -> None:
    asyncio.run(_main())
