"""Running a Kafka-only service process: start, wait for a stop signal, shut down cleanly."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging

log = get_logger("attesta.service")


async def serve(name: str, messaging: Messaging, topics: list[str], partitions: int = 3,
                on_started: Callable[[], Awaitable[None]] | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await messaging.ensure_topics(topics, partitions)
        await messaging.start()
    except Exception as exc:  # noqa: BLE001 - a clear message and exit code, not a traceback
        log.error("cannot reach Kafka", service=name, error=repr(exc))
        raise SystemExit(3) from None
    log.info("service started", service=name)
    if on_started is not None:
        await on_started()
    await stop.wait()
    log.info("service stopping", service=name)
    await messaging.stop()  # finishes the message in hand, commits, leaves the group
