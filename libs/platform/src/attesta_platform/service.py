"""Running a service process: start, serve HTTP, run its workers, wait for a stop signal, shut
down. The one supervisor every service's bootstrap calls (``serve``).

Every service answers ``/healthz`` (the process is alive), ``/readyz`` (its database answers,
Kafka was reached, its consumers started, and its own ``ready`` check passes) and ``/metrics``
(Prometheus text format), added once by ``add_health_routes``: on the service's own API, or on a
small side door (``ATTESTA_HEALTH_HOST:ATTESTA_HEALTH_PORT``) for the Kafka-only services.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from attesta_platform.logs import get_logger
from attesta_platform.messaging import Messaging

if TYPE_CHECKING:  # imported when a service serves HTTP, not at import time
    import uvicorn
    from fastapi import APIRouter, FastAPI

log = get_logger("attesta.service")

ReadyCheck = Callable[[], str | None]  # None when ready, else the reason it is not
# create_task() takes a coroutine: a worker is an async function that runs until the event is set.
Worker = Callable[[asyncio.Event], Coroutine[Any, Any, Any]]


@dataclass
class HttpServer:
    """A uvicorn server running in this event loop, and the task serving it."""

    server: uvicorn.Server
    task: asyncio.Task[None]


class Health(BaseModel):
    status: str
    service: str


class Readiness(BaseModel):
    status: str
    service: str
    instance: str | None = None  # which replica answered, where a service names it


def add_health_routes(app: FastAPI | APIRouter, name: str, ready: ReadyCheck | None = None, *,
                      database: Any = None, instance: str | None = None,
                      documented: dict[int | str, dict[str, Any]] | None = None,
                      metrics: bool = True) -> None:
    """/healthz, /readyz and (unless ``metrics`` is false) /metrics on ``app`` (an app or a
    router). Ready means ``database`` (an asyncpg pool, when given) answers within 2 s, then
    ``ready()``; not ready is a 503 with the reason and ``Retry-After``. Internal services keep
    the routes out of their OpenAPI document; a public edge passes ``documented`` (the error
    responses to declare) and they are in it with their models."""
    # heavy: FastAPI (and attesta_platform.http, built on it) loads when routes are added, not
    # with this module (the Kafka-only services import it for `serve`, before any side door)
    from fastapi.responses import JSONResponse

    # heavy too: attesta_platform.http imports FastAPI at module level
    from attesta_platform.http import add_metrics_route, error_response

    shown = documented is not None

    @app.get("/healthz", include_in_schema=shown, response_model=Health)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "service": name}

    @app.get("/readyz", include_in_schema=shown, response_model=Readiness,
             responses=documented or {})
    async def readyz() -> JSONResponse:
        if database is not None:
            try:
                async with database.acquire(timeout=2) as conn:
                    await conn.fetchval("SELECT 1")
            except Exception as exc:  # noqa: BLE001 - any failure means not ready
                return error_response(503, "not_ready", f"database: {exc!r}", {"Retry-After": "1"})
        reason = ready() if ready is not None else None
        if reason is not None:
            return error_response(503, "not_ready", reason, {"Retry-After": "1"})
        body = {"status": "ready", "service": name}
        return JSONResponse(body if instance is None else {**body, "instance": instance})

    if metrics:
        add_metrics_route(app)


def health_app(name: str, ready: ReadyCheck) -> FastAPI:
    """A tiny ASGI app with only the health routes (the Kafka-only services' side door)."""
    from fastapi import FastAPI  # heavy: loaded when the side door starts, not at import

    app = FastAPI(title=f"attesta {name} health", openapi_url=None, docs_url=None, redoc_url=None)
    add_health_routes(app, name, ready)
    return app


async def start_http_server(app: Any, host: str, port: int, what: str = "HTTP") -> HttpServer:
    """Serve ``app`` in this event loop; returns the uvicorn server once it listens."""
    import uvicorn  # heavy: loaded when a server starts, not at import

    class Server(uvicorn.Server):
        # serve() owns SIGTERM/SIGINT: uvicorn's own handlers would stop the HTTP server at the
        # signal, before the service's orderly stop (on_stopping, workers, consumers).
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # re-raises the bind error, if any
            raise RuntimeError(f"{what} server on {host}:{port} stopped at start")
        await asyncio.sleep(0.01)
    return HttpServer(server, task)


async def start_health_server(name: str, host: str, port: int, ready: ReadyCheck) -> HttpServer:
    """Start the health app in this event loop."""
    server = await start_http_server(health_app(name, ready), host, port, "health")
    sock = server.server.servers[0].sockets[0].getsockname()
    log.info("health endpoints up", service=name, url=f"http://{sock[0]}:{sock[1]}/readyz")
    return server


async def serve(name: str, messaging: Messaging, topics: list[str], partitions: int = 3,
                on_started: Callable[[], Awaitable[None]] | None = None, *,
                health_host: str = "127.0.0.1", health_port: int | None = None,
                ready: ReadyCheck | None = None,
                on_stopping: Callable[[], Awaitable[None]] | None = None,
                app: Any = None, http_host: str = "127.0.0.1", http_port: int = 0,
                workers: Sequence[Worker] = ()) -> None:
    """Run a service until SIGTERM/SIGINT (or until one of its workers fails).

    ``app``: the service's own HTTP API, served on ``http_host:http_port`` from the start (it
    answers while Kafka is still away) and carrying its own health routes; otherwise, with
    ``health_port`` set, the health side door (``0`` picks a free port, logged). ``workers``
    start once Kafka is reached and ``on_started`` ran, each with the stop event; at a stop
    they are awaited after ``on_stopping``, before the consumers leave their groups. A worker
    that raises, or a consumer that ends before the stop, stops the service (logged; readiness
    answers 503 with the reason meanwhile) and exits 1 after the orderly stop: a half-working
    process is worse than a restart.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    state = {"started": False}

    def _ready() -> str | None:
        if not state["started"]:
            return "starting: Kafka consumers not started yet"
        if messaging.failure is not None:
            return messaging.failure
        return ready() if ready is not None else None

    failed: list[str] = []  # why the service stopped itself: it then exits 1

    def _consumer_failed(reason: str) -> None:
        if not stop.is_set():
            log.error("consumer ended; stopping", service=name, reason=reason)
            failed.append(reason)
            stop.set()

    http = None
    running: list[asyncio.Task[Any]] = []

    def _watch(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None and not stop.is_set():
            log.error("worker failed; stopping", service=name, worker=task.get_name(),
                      error=repr(task.exception()))
            failed.append(f"worker {task.get_name()} failed")
            stop.set()

    try:
        if app is not None:
            http = await start_http_server(app, http_host, http_port)
        elif health_port is not None:
            http = await start_health_server(name, health_host, health_port, _ready)
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
        # A consumer that dies leaves its partitions unread while the process looks alive: stop
        # (the orchestrator restarts the service) rather than run half-working.
        messaging.on_failure(_consumer_failed)
        log.info("service started", service=name)
        if on_started is not None:
            await on_started()
        for worker in workers:
            task = asyncio.create_task(worker(stop), name=getattr(worker, "__name__", "worker"))
            task.add_done_callback(_watch)
            running.append(task)
        state["started"] = True
        await stop.wait()
        log.info("service stopping", service=name)
        if on_stopping is not None:
            await on_stopping()
        await asyncio.gather(*running, return_exceptions=True)
        await messaging.stop()  # finishes the message in hand, commits, leaves the group
        log.info("service stopped", service=name)
        if failed:
            raise SystemExit(1)
    finally:
        stop.set()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if http is not None:
            http.server.should_exit = True
            await asyncio.gather(http.task, return_exceptions=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
