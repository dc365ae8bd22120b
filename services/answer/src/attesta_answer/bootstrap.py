"""Wiring of the answer service: ``attesta run answer``.

``build_bus`` is the one place the answer service's handlers get their dependencies (by
parameter name, ``attesta_platform.bus``); the ``retrieval.completed.v1`` subscriber and the
``attesta answer try`` CLI hand their messages to the bus it returns. Nothing happens at
import time.
"""

from __future__ import annotations

import asyncio

from attesta_answer.adapters.metrics import AnswerMetrics, answer_metrics
from attesta_answer.entrypoints.kafka import subscribe
from attesta_answer.service_layer.answering import Generator
from attesta_answer.service_layer.handlers import HANDLERS, Publisher
from attesta_answer.settings import AnswerSettings
from attesta_contracts.topics import CHAT_ANSWERED, DEAD_LETTERED, RETRIEVAL_COMPLETED, RUNS_RECORDED
from attesta_platform import bus
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.service import serve
from attesta_platform.settings import load_settings

NAME = "answer"
log = get_logger("attesta.answer")


def build_bus(generator: Generator, *, publisher: Publisher | None = None,
              default_workspace: str = "", metrics: AnswerMetrics | None = None) -> bus.MessageBus:
    """The answer service's bus. ``publisher`` None: nothing can be published (the CLI, which
    only builds answers)."""
    return bus.bootstrap(HANDLERS, generator=generator, publisher=publisher,
                         default_workspace=default_workspace,
                         metrics=metrics or answer_metrics())


def build_generator(settings: AnswerSettings) -> Generator:
    if settings.answer_generator == "openai":
        # Each generator's module loads only when it is the one chosen.
        from attesta_answer.adapters.llm_generator import LLMGenerator

        return LLMGenerator(settings.llm_config(), budget_s=settings.answer_llm_budget_s)
    # The offline generator and its gate artefact: only when it is the one chosen.
    from attesta_answer.adapters.gate_artefact import load_gate
    from attesta_answer.domain.extractive import OfflineGenerator

    # The gate's pair reader as ATTESTA_ANSWER_READER says (default auto: used when trained here).
    return OfflineGenerator(load_gate(settings.answer_gate_path, reader=settings.answer_reader,
                                      reader_dir=settings.answer_reader_dir))  # no artefact: no start


async def _main() -> None:
    settings = load_settings(AnswerSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    generator = build_generator(settings)
    generator.warm_up()
    log.info("answer generator ready", generator=generator.name,
             kind=settings.answer_generator, workspace=settings.assistant_workspace)
    messaging = Messaging.from_settings(settings, NAME)
    message_bus = build_bus(generator, publisher=messaging,
                            default_workspace=settings.assistant_workspace)
    subscribe(messaging, message_bus, group_id=settings.answer_consumer_group)
    await serve(NAME, messaging, [RETRIEVAL_COMPLETED, CHAT_ANSWERED, RUNS_RECORDED, DEAD_LETTERED],
                settings.kafka_partitions, health_host=settings.health_host,
                health_port=settings.health_port, on_stopping=generator.aclose)


def main() -> None:
    asyncio.run(_main())
