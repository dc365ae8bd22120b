"""Test helpers and fakes for the gateway's tests and the cross-service tests that start a
gateway: real processes and real servers on 127.0.0.1, no mocks. None of this ships in the
gateway's wheel.

- ``GatewayProcess``: ``attesta run gateway`` as a subprocess with the given environment.
- ``RedisServer``: a private ``redis-server`` on a free port that a test can stop and restart
  (to take Redis away for real).
- ``StandInApi``: a small real HTTP server that speaks the classifier's and evidence service's
  internal contract (internal token, workspace header, per-workspace brands and runs), used to
  test the gateway on its own; the cross-service tests use the real services instead.
- ``InMemoryUnitOfWork``: the gateway's repositories in memory, with the same behaviour as the
  PostgreSQL ones (``tests/test_gateway_stores.py`` runs one suite against both).
- ``http_errors``: a domain error as the ``ApiError`` the edge answers it with.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import uvicorn
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

# Module level: the stand-in's routes resolve Request by name.
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from attesta_gateway.adapters.database import Database
from attesta_gateway.adapters.keystore import PostgresKeyStore
from attesta_gateway.adapters.migrate import migrate
from attesta_gateway.domain.idempotency import IdempotencyRecord, StoredResponse
from attesta_gateway.domain.keys import StoredKey, key_digest, new_key
from attesta_gateway.entrypoints.responses import api_error
from attesta_gateway.service_layer.errors import GatewayError
from attesta_gateway.service_layer.forwarding import forward, forward_once, stream_export
from attesta_gateway.service_layer.handlers import HANDLERS
from attesta_platform.bus import bootstrap as bind_handlers
from attesta_platform.http import (
    ACTOR_HEADER,
    ApiError,
    check_internal_token,
    install_error_handlers,
)
from attesta_testing.edge import edge_errors
from attesta_testing.infra import free_port, postgres_admin_url, temp_database

__all__ = ["ROOT", "TEST_ROLE", "GatewayProcess", "InMemoryUnitOfWork",
           "RedisServer", "StandInApi", "free_port", "http_errors", "make_key",
           "migrated_database", "start_group_at_end", "wait_http", "gateway_on"]

ROOT = Path(__file__).resolve().parents[1]


def wait_http(url: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60,
              log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"process for {url} exited with {proc.returncode}\n{tail}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} not ready in {timeout}s")


class GatewayProcess:
    def __init__(self, env: dict[str, str], log_dir: Path, name: str = "gateway") -> None:
        self.port = int(env.get("ATTESTA_HTTP_PORT") or free_port())
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / f"{name}-{self.port}.log"
        self.env = {**os.environ, "ATTESTA_LOG_JSON": "false", **env,
                    "ATTESTA_HTTP_PORT": str(self.port)}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> GatewayProcess:
        out = open(self.log, "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attesta_platform.cli", "run", "gateway"],
            env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        if wait:
            try:
                wait_http(f"{self.url}/readyz", self.proc, timeout=120, log=self.log)
            except BaseException:
                self.stop()  # never leave a half-started gateway behind
                raise
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RedisServer:
    """A private redis-server (no persistence) on a free port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="gw-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (apt-get install redis-server)"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self._dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port),
                                                                        timeout=0.2):
                return self
            time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


class StandInApi:
    """A real HTTP server on 127.0.0.1 that keeps the internal contract of the classifier and
    the evidence service (token, workspace scoping, shapes of the contract models)."""

    def __init__(self, internal_token: str, slow_s: float = 3.0) -> None:
        self.token, self.slow_s = internal_token, slow_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.brands: dict[tuple[str, str], dict[str, Any]] = {}
        self.runs: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[dict[str, Any]] = []  # method, path, headers of every call
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def calls_to(self, method: str, path: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["method"] == method and c["path"] == path]

    def _app(self) -> FastAPI:
        app = FastAPI()
        install_error_handlers(app)

        @app.middleware("http")
        async def record(request: Request,
                         call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            self.calls.append({"method": request.method, "path": request.url.path,
                               "query": str(request.url.query),
                               "headers": dict(request.headers)})
            return await call_next(request)

        def brand_view(b: dict[str, Any]) -> dict[str, Any]:
            return b

        @app.post("/v1/brands")
        async def create_brand(request: Request) -> JSONResponse:
            ws = check_internal_token(request, self.token)
            body = await request.json()
            brand_id = body.get("brand_id") or body["name"].lower().replace(" ", "-")
            if (ws, brand_id) in self.brands:
                raise ApiError(409, "brand_exists", f"brand {brand_id} exists")
            b = {"brand_id": brand_id, "workspace_id": ws, "name": body["name"],
                 "aliases": body.get("aliases", []), "domains": body.get("domains", []),
                 "competitors": body.get("competitors", []), "sources": body.get("sources", []),
                 "created_at": _now(), "updated_at": _now()}
            self.brands[(ws, brand_id)] = b
            return JSONResponse(b, status_code=201)

        @app.get("/v1/brands")
        async def list_brands(request: Request) -> dict[str, Any]:
            ws = check_internal_token(request, self.token)
            return {"items": [b for (w, _), b in self.brands.items() if w == ws]}

        @app.get("/v1/brands/{brand_id}")
        async def get_brand(brand_id: str, request: Request) -> dict[str, Any]:
            ws = check_internal_token(request, self.token)
            if (ws, brand_id) not in self.brands:
                raise ApiError(404, "not_found", f"no brand {brand_id}")
            return brand_view(self.brands[(ws, brand_id)])

        @app.post("/v1/runs")
        async def create_run(request: Request) -> JSONResponse:
            ws = check_internal_token(request, self.token)
            body = await request.json()
            if body.get("prompt") == "slow":
                await asyncio.sleep(self.slow_s)
            run_id = f"run-{len(self.runs) + 1}"
            sha = hashlib.sha256(body["answer"].encode()).hexdigest()
            self.runs[(ws, run_id)] = {**body, "actor": request.headers.get(ACTOR_HEADER)}
            return JSONResponse({"run_id": run_id, "answer_sha256": sha, "status": "accepted"},
                                status_code=202)

        @app.get("/v1/runs/{run_id}")
        async def get_run(run_id: str, request: Request) -> JSONResponse:
            check_internal_token(request, self.token)
            if run_id == "slow":
                await asyncio.sleep(self.slow_s)
            if run_id == "broken":
                return JSONResponse({"oops": True}, status_code=500)
            raise ApiError(404, "not_found", f"no run {run_id}")

        @app.get("/v1/public/log/tree-head")
        async def tree_head() -> dict[str, Any]:
            return {"tree_size": 0, "root_hash": hashlib.sha256(b"").hexdigest(),
                    "timestamp_ms": 0, "signature": "", "key_id": "0" * 64}

        @app.get("/v1/public/evidence/{sha256}")
        async def evidence(sha256: str) -> dict[str, Any]:
            raise ApiError(404, "not_found", f"no evidence {sha256}")

        return app

    def start(self) -> StandInApi:
        config = uvicorn.Config(self._app(), host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        wait_http(f"{self.url}/v1/public/log/tree-head", timeout=20)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def _now() -> str:
    return datetime.now(UTC).isoformat()


TEST_ROLE, TEST_PASSWORD = "attesta_gateway_test", "gateway-test-only"


@contextlib.asynccontextmanager
async def migrated_database() -> AsyncIterator[str]:
    """A fresh gateway database (``attesta_testing.infra.temp_database``), migrated, with the
    least-privilege app role; yields the app role's URL."""
    async with temp_database("t_gateway") as admin_db_url:
        parts = urlsplit(admin_db_url)
        netloc = f"{TEST_ROLE}:{TEST_PASSWORD}@{parts.hostname}:{parts.port}"
        app_url = urlunsplit(parts._replace(netloc=netloc))
        await asyncio.to_thread(migrate, postgres_admin_url(), app_url)
        yield app_url


async def make_key(app_db_url: str, secret: str, workspace: str, name: str = "") -> tuple[str, str]:
    """Create an API key directly in the store; returns ``(key id, plaintext)``."""
    db = Database(app_db_url, min_size=1, max_size=1)
    try:
        key_id, plaintext = new_key()
        await PostgresKeyStore(db).add(StoredKey(key_id, workspace, name,
                                                 key_digest(secret.encode(), plaintext)))
        return key_id, plaintext
    finally:
        await db.close()


async def start_group_at_end(bootstrap: str, group: str, topics: list[str]) -> None:
    """Commit ``group``'s offsets at the current end of ``topics``, so a service started with a
    fresh test group reads only what the test publishes, not the shared topics' history."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(t, p) for t in topics
                 for p in (consumer.partitions_for_topic(t) or await _partitions(consumer, t))]
        if not parts:
            return
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        await consumer.commit({tp: OffsetAndMetadata(off, "") for tp, off in ends.items()})
    finally:
        await consumer.stop()


async def _partitions(consumer: Any, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()  # noqa: SLF001 - aiokafka has no public call
    return consumer.partitions_for_topic(topic) or set()


# -- in-memory repositories -------------------------------------------------------------------
class InMemoryKeyRepository:
    def __init__(self) -> None:
        self._keys: dict[str, StoredKey] = {}

    async def get(self, key_id: str) -> StoredKey | None:
        return self._keys.get(key_id)

    async def add(self, key: StoredKey) -> None:
        if key.key_id in self._keys:
            raise ValueError(f"key {key.key_id} exists")
        self._keys[key.key_id] = replace(key, created_at=datetime.now(UTC), revoked_at=None)

    async def revoke(self, key_id: str) -> bool:
        key = self._keys.get(key_id)
        if key is None or key.revoked_at is not None:
            return False
        self._keys[key_id] = replace(key, revoked_at=datetime.now(UTC))
        return True

    async def list(self, workspace_id: str | None = None) -> list[StoredKey]:
        return [k for k in self._keys.values()
                if workspace_id is None or k.workspace_id == workspace_id]


@dataclass
class _Row:
    fingerprint: str
    locked_until: float | None
    expires_at: float
    response: StoredResponse | None = None


class InMemoryIdempotencyRepository:
    def __init__(self, ttl_s: float, lock_s: float) -> None:
        self._ttl, self._lock = ttl_s, lock_s
        self._rows: dict[tuple[str, str], _Row] = {}

    async def claim(self, workspace_id: str, key: str,
                    fingerprint: str) -> IdempotencyRecord | None:
        now = time.monotonic()
        row = self._rows.get((workspace_id, key))
        stale_lock = (row is not None and row.response is None and row.locked_until is not None
                      and row.locked_until < now and row.fingerprint == fingerprint)
        if row is None or row.expires_at < now or stale_lock:
            self._rows[(workspace_id, key)] = _Row(fingerprint, now + self._lock, now + self._ttl)
            return None
        return IdempotencyRecord(fingerprint=row.fingerprint, in_flight=row.response is None,
                                 response=row.response)

    async def complete(self, workspace_id: str, key: str, response: StoredResponse) -> None:
        row = self._rows.get((workspace_id, key))
        if row is not None:
            row.response, row.locked_until = response, None

    async def release(self, workspace_id: str, key: str) -> None:
        row = self._rows.get((workspace_id, key))
        if row is not None and row.response is None:
            del self._rows[(workspace_id, key)]

    async def purge_expired(self) -> int:
        now = time.monotonic()
        gone = [k for k, r in self._rows.items() if r.expires_at < now]
        for k in gone:
            del self._rows[k]
        return len(gone)


class InMemoryUnitOfWork:
    def __init__(self, *, idempotency_ttl_s: float = 86_400, idempotency_lock_s: float = 35) -> None:
        self.keys = InMemoryKeyRepository()
        self.idempotency = InMemoryIdempotencyRepository(idempotency_ttl_s, idempotency_lock_s)

    async def close(self) -> None:
        pass


def http_errors() -> contextlib.AbstractContextManager[None]:
    """A domain error raised inside becomes the ``ApiError`` the edge answers it with
    (``entrypoints/responses.py``), as a route's caller sees it."""
    return edge_errors(GatewayError, api_error)


def gateway_on(upstream: Any, uow: Any) -> SimpleNamespace:
    """What a ``Caller`` needs of the gateway: its bus, forwarding to ``upstream`` (whatever
    the service's name) with ``uow``'s idempotency records."""
    handlers = {kind: handler for kind, handler in HANDLERS.items()
                if handler in (forward, forward_once, stream_export)}
    return SimpleNamespace(bus=bind_handlers(handlers, upstream=lambda name: upstream, uow=uow))
