"""Test helpers of the evidence service (used by its tests and benchmarks): a migrated
temporary database with its own app role, and the HTTP API served for real on a free 127.0.0.1
port in its own thread and event loop."""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

if TYPE_CHECKING:
    import subprocess

    import uvicorn
    from fastapi import FastAPI

    from attesta_testing.infra import MigratedDb

INTERNAL_TOKEN = "test-internal-token"


def migrated_database(admin_url: str, prefix: str = "evidence"
                      ) -> AbstractAsyncContextManager[MigratedDb]:
    """A fresh database migrated by ``attesta evidence migrate``'s code, with a unique app role
    (``attesta_testing.infra.migrated_database``)."""
    from attesta_evidence.adapters.migrate import migrate
    from attesta_testing.infra import migrated_database as migrated

    return migrated(migrate, admin_url, prefix, "evt")


class LiveApi:
    """``create_app`` under uvicorn in a thread with its own loop and pool: the same HTTP a
    client (the verifier subprocess, schemathesis) talks to in production."""

    def __init__(self, db_url: str, key: Ed25519PrivateKey, max_body_bytes: int = 64 * 1024,
                 pool_size: int = 10) -> None:
        self.db_url, self.key, self.max_body_bytes = db_url, key, max_body_bytes
        self.pool_size = pool_size
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.server: uvicorn.Server | None = None
        self.app: FastAPI | None = None
        self.base_url = ""

    async def _main(self) -> None:
        import uvicorn

        from attesta_evidence.entrypoints.http import create_app
        from attesta_evidence.service_layer.log import TransparencyLog

        from attesta_evidence.adapters.postgres import EvidenceUnitOfWork, create_pool

        from attesta_evidence.bootstrap import build_bus  # late, like the others: the whole service

        pool = await create_pool(self.db_url, max_size=self.pool_size)
        try:
            new_uow = partial(EvidenceUnitOfWork, pool)
            bus = build_bus(new_uow, tlog=TransparencyLog(new_uow, self.key))
            app = create_app(bus, database=pool, internal_token=INTERNAL_TOKEN,
                             max_body_bytes=self.max_body_bytes)
            self.app = app
            self.server = server = uvicorn.Server(uvicorn.Config(
                app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
            # No signal handlers to disable: uvicorn installs them only on the main thread.
            task = asyncio.create_task(server.serve())
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            self.base_url = f"http://127.0.0.1:{port}"
            self._ready.set()
            await task
        finally:
            await pool.close()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test by start()
            self._error = exc
            self._ready.set()

    def start(self) -> LiveApi:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None or not self.base_url:
            raise RuntimeError(f"evidence API did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self._thread.join(15)


def free_port() -> int:
    """``attesta_testing.infra.free_port`` (imported late: that module needs pytest)."""
    from attesta_testing.infra import free_port as platform_free_port

    return platform_free_port()


class EvidenceProcess:
    """``attesta run evidence`` as a subprocess with the given environment (its log in a file)."""

    def __init__(self, env: dict[str, str], log_path: Path, port: int | None = None) -> None:
        import os

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.env = {**os.environ, "ATTESTA_LOG_JSON": "false", **env,
                    "ATTESTA_EVIDENCE_HTTP_PORT": str(self.port)}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> EvidenceProcess:
        import subprocess
        import sys
        import time

        import httpx

        out = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run",
                                      "evidence"], env=self.env, stdout=out,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"evidence exited with {self.proc.returncode}: "
                                   f"{open(self.log_path, errors='replace').read()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"evidence not ready in {timeout_s}s")

    def stop(self) -> int | None:
        import signal
        import subprocess

        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def keys_covering_partitions(prefix: str, partitions: int) -> list[str]:
    """One message key per partition (Kafka's default murmur2 partitioner): publishing a probe
    with each lets a test know a new ``latest`` group owns and has committed every partition."""
    from aiokafka.partitioner import murmur2

    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        key = f"{prefix}-{i}"
        found.setdefault((murmur2(key.encode()) & 0x7FFFFFFF) % partitions, key)
        i += 1
    return [found[p] for p in range(partitions)]
