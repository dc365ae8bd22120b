"""Running a Kafka-only service process: start, serve health, wait for a stop signal, shut down.

Every Kafka-only service (retrieval, answer, and the consumers of the others) gets the same
small HTTP side door on ``ATTESTA_HEALTH_HOST:ATTESTA_HEALTH_PORT``:
``/healthz`` (the process is alive), ``/readyz`` (Kafka reached, consumers started, and the
service's own ``ready`` check passes) and ``/metrics`` (Prometheus text format).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable

from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging

log = get_logger("attesta.service")

ReadyCheck = Callable[[], str | None]  # None when ready, else the reason it is not


def health_app(name: str, ready: ReadyCheck):
    """A tiny ASGI app with /healthz, /readyz and /metrics."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    from attesta_platform.http import add_metrics_route

    app = FastAPI(title=f"attesta {name} health", openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok", "service": name}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        reason = ready()
        if reason is not None:
            return JSONResponse(status_code=503, content={"error": {"code": "not_ready", "reason": reason}})
        return JSONResponse({"status": "ready", "service": name})

    add_metrics_route(app)
    return app


async def start_health_server(name: str, host: str, port: int, ready: ReadyCheck):
    """Start the health app in this event loop; returns the uvicorn server (``.should_exit``)."""
    import uvicorn

    config = uvicorn.Config(health_app(name, ready), host=host, port=port, log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign] # serve() owns signals
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # re-raises the bind error, if any
            raise RuntimeError(f"health server on {host}:{port} stopped at start")
        await asyncio.sleep(0.01)
    sock = server.servers[0].sockets[0].getsockname()
    log.info("health endpoints up", service=name, url=f"http://{sock[0]}:{sock[1]}/readyz")
    return server


async def serve(name: str, messaging: Messaging, topics: list[str], partitions: int = 3,
                on_started: Callable[[], Awaitable[None]] | None = None, *,
                health_host: str = "127.0.0.1", health_port: int | None = None,
                ready: ReadyCheck | None = None,
                on_stopping: Callable[[], Awaitable[None]] | None = None) -> None:
    """Run a Kafka-only service until SIGTERM/SIGINT.

    ``health_port=None`` serves no health endpoints; ``0`` picks a free port (logged).
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    state = {"started": False}

    def _ready() -> str | None:
        if not state["started"]:
            return "starting: Kafka consumers not started yet"
        return ready() if ready is not None else None

    health = None
    try:
        if health_port is not None:
            health = await start_health_server(name, health_host, health_port, _ready)
        try:
            await messaging.ensure_topics(topics, partitions)
            await messaging.start()
        except Exception as exc:  # noqa: BLE001 - a clear message and exit code, not a traceback
            log.error("cannot reach Kafka", service=name,
                      bootstrap_servers=getattr(messaging, "bootstrap_servers", "?"),
                      error=repr(exc))
            # Closing what half-started keeps the exit quiet (no "unclosed producer" noise).
            with contextlib.suppress(Exception):
                await messaging.stop()
            raise SystemExit(3) from None
        log.info("service started", service=name)
        if on_started is not None:
            await on_started()
        state["started"] = True
        await stop.wait()
        log.info("service stopping", service=name)
        if on_stopping is not None:
            await on_stopping()
        await messaging.stop()  # finishes the message in hand, commits, leaves the group
        log.info("service stopped", service=name)
    finally:
        if health is not None:
            health.should_exit = True
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
