"""``attesta run llm``: the model file checked by its SHA-256, llama.cpp's OpenAI-compatible
server started in this process, and the health side door (``/healthz``, ``/readyz``,
``/metrics`` on ``ATTESTA_HEALTH_HOST:ATTESTA_HEALTH_PORT``, like retrieval and answer).

Ready only once the model has answered a 1-token completion; not ready again (503 with the
reason) and then stopped with exit 1 when llama.cpp's own ``/health`` stops answering. SIGTERM
or SIGINT stops the server and exits 0. A model file whose hash is not the expected one, or a
port that is taken, exits 2 with the reason before anything is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from attesta_llm.adapters.model_store import resolve_model
from attesta_llm.domain.model import QWEN25_CODER_1_5B_Q4_K_M, ModelFileError
from attesta_llm.settings import LocalLLMSettings
from attesta_platform.settings import load_settings

if TYPE_CHECKING:
    from attesta_llm.adapters.llama import LlamaServer

NAME = "llm"
WATCH_INTERVAL_S = 5.0
WATCH_FAILURES = 3  # consecutive /health failures before the process gives up


def model_path(settings: LocalLLMSettings) -> Path:
    """The verified model file (assembled from its packages on first use); exit 2 if refused."""
    try:
        return resolve_model(QWEN25_CODER_1_5B_Q4_K_M, explicit_path=settings.llm_local_model_path,
                             expected_sha256=settings.llm_local_model_sha256,
                             cache_dir=settings.cache_dir)
    except (ModelFileError, OSError) as exc:
        print(f"llm: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class Readiness:
    """Why the process is not ready yet (``None`` once the model has answered)."""

    def __init__(self) -> None:
        self.reason: str | None = "loading the model"

    def __call__(self) -> str | None:
        return self.reason


async def _watch(server: LlamaServer, readiness: Readiness, stop: asyncio.Event,
                 failed: list[str]) -> None:
    """llama.cpp serves from its own threads: if its /health stops answering, stop (exit 1)
    rather than look alive while every request fails."""
    # httpx (about 0.3 s) and logging (0.2 s) load when the service runs, not for
    # `attesta llm model-path`, which imports this module for `model_path` only
    import httpx

    from attesta_platform.logs import get_logger  # likewise: only once the service runs

    log = get_logger("attesta.llm")
    misses = 0
    async with httpx.AsyncClient(timeout=WATCH_INTERVAL_S) as http:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), WATCH_INTERVAL_S)
            if stop.is_set():
                return
            try:
                ok = (await http.get(f"{server.base_url}/health")).status_code == 200
            except httpx.HTTPError:
                ok = False
            misses = 0 if ok else misses + 1
            readiness.reason = None if ok else f"llama.cpp /health failed {misses} time(s) in a row"
            if misses >= WATCH_FAILURES:
                log.error("model server stopped answering; stopping", base_url=server.base_url)
                failed.append("model server stopped answering")
                stop.set()


async def run(settings: LocalLLMSettings, model: Path) -> None:
    # the model server, logging and the health side door (FastAPI, uvicorn) load when the
    # service runs, not for `attesta llm model-path`, which imports this module too
    from attesta_llm.adapters.llama import LlamaServer, ModelServerError, ServerOptions
    from attesta_platform.logs import get_logger
    from attesta_platform.service import start_health_server

    log = get_logger("attesta.llm")
    stop = asyncio.Event()
    # llama.cpp's own server binary handles SIGTERM; the xllamacpp build pinned here leaves
    # signals to Python (checked: a SIGTERM after the load reaches this handler).
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    readiness = Readiness()
    health = await start_health_server(NAME, settings.health_host, settings.health_port, readiness)
    opts = ServerOptions(host=settings.llm_local_host, port=settings.llm_local_port,
                         threads=settings.llm_local_threads, ctx=settings.llm_local_ctx,
                         parallel=settings.llm_local_parallel, api_key=settings.llm_local_api_key,
                         model_alias=model.stem if settings.llm_local_model_path
                         else QWEN25_CODER_1_5B_Q4_K_M.name)
    server: LlamaServer | None = None
    failed: list[str] = []
    watcher: asyncio.Task[None] | None = None
    try:
        started = time.perf_counter()
        try:
            server = await asyncio.to_thread(LlamaServer.start, model, opts)
        except ModelServerError as exc:
            print(f"llm: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        loaded_s = time.perf_counter() - started
        readiness.reason = "warming up: waiting for a 1-token completion"
        try:
            first_token_s = await asyncio.to_thread(server.complete_one_token)
        except ModelServerError as exc:
            print(f"llm: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        readiness.reason = None
        log.info("local LLM ready", base_url=f"{server.base_url}/v1", model=str(model),
                 sha256=settings.llm_local_model_sha256, threads=opts.threads, ctx=opts.ctx,
                 parallel=opts.parallel, load_s=round(loaded_s, 2),
                 first_token_s=round(first_token_s, 3))
        watcher = asyncio.create_task(_watch(server, readiness, stop, failed))
        await stop.wait()
        log.info("local LLM stopping")
    finally:
        stop.set()
        readiness.reason = "stopping"
        if watcher is not None:
            await asyncio.gather(watcher, return_exceptions=True)
        if server is not None:
            await asyncio.to_thread(server.stop)
        health.server.should_exit = True
        await asyncio.gather(health.task, return_exceptions=True)
    log.info("local LLM stopped")
    if failed:
        raise SystemExit(1)


def main() -> None:
    from attesta_platform.logs import configure_logging  # logging: not for `model-path` (see run)

    settings = load_settings(LocalLLMSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    model = model_path(settings)
    asyncio.run(run(settings, model))
