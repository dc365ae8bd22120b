"""A minimal Kafka-only service run as a real process by test_service_process.py.

It is wired like a real service (``load_settings`` -> ``Messaging.from_settings`` ->
``consume`` -> ``serve`` with health), with knobs from the environment:

- ``PROC_GROUP``: consumer group on ``chat.requested.v1``;
- ``PROC_JOURNAL``: file the handler appends ``start <request_id>`` / ``done <request_id>`` to
  (the handler's durable effect);
- ``PROC_MARKER``: only requests whose id starts with it are journaled (others are this
  group's backlog from other tests);
- ``PROC_SLOW_S``: how long a request whose question starts with "slow" takes;
- ``PROC_GATE``: ``on_started`` waits until this file exists (readiness stays 503 until then);
- ``PROC_NOT_READY``: while this file exists the ``ready`` check reports its content;
- ``PROC_BATCH``: ``1`` consumes with a batch handler (``consume_batch``: one call per fetched
  batch, journaling each message of it) instead of one message per call.

A request whose question starts with "fatal" raises a ``BaseException`` the consume loop does
not catch: its consumer task ends, as a consume-loop bug or a lost client would end it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED
from attesta_platform.logs import configure_logging
from attesta_platform.messaging import Delivery, Messaging
from attesta_platform.service import serve
from attesta_platform.settings import ServiceSettings, load_settings


class ConsumeLoopGone(BaseException):
    pass


async def _main() -> None:
    settings = load_settings(ServiceSettings)
    configure_logging("testproc", settings.log_level, settings.log_json)
    journal = Path(os.environ["PROC_JOURNAL"])
    marker = os.environ["PROC_MARKER"]
    slow_s = float(os.environ.get("PROC_SLOW_S", "0"))
    gate = os.environ.get("PROC_GATE")
    not_ready = os.environ.get("PROC_NOT_READY")

    def write(line: str) -> None:
        with journal.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    async def handle(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        rid = env.payload.request_id
        if not rid.startswith(marker):
            return
        write(f"start {rid} {delivery.partition}:{delivery.offset}")
        if env.payload.question.startswith("fatal"):
            raise ConsumeLoopGone("the consume loop is gone")
        if env.payload.question.startswith("slow"):
            await asyncio.sleep(slow_s)
        write(f"done {rid} {delivery.partition}:{delivery.offset}")

    async def wait_gate() -> None:
        while gate and not Path(gate).exists():
            await asyncio.sleep(0.05)

    def ready() -> str | None:
        if not_ready and Path(not_ready).exists():
            return Path(not_ready).read_text(encoding="utf-8").strip() or "not ready"
        return None

    async def handle_batch(items):
        for item in items:
            await handle(item.envelope, item.delivery)
        return []

    messaging = Messaging.from_settings(settings, "testproc")
    if os.environ.get("PROC_BATCH") == "1":
        messaging.consume_batch(CHAT_REQUESTED, group_id=os.environ["PROC_GROUP"],
                                handler=handle_batch, batch_max=50)
    else:
        messaging.consume(CHAT_REQUESTED, group_id=os.environ["PROC_GROUP"], handler=handle)
    await serve("testproc", messaging, [CHAT_REQUESTED, DEAD_LETTERED], settings.kafka_partitions,
                on_started=wait_gate, health_host=settings.health_host,
                health_port=settings.health_port, ready=ready)


if __name__ == "__main__":
    asyncio.run(_main())
