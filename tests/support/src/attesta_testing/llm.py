"""``attesta run llm`` as a subprocess on free 127.0.0.1 ports, for tests that need the real
local model (the LLM smoke test here; the judge's and the answer generator's own tests).

    with LocalLLMProcess(log_path=tmp / "llm.log") as llm:   # waits until /readyz says ready
        client = ChatCompletionsClient(LLMConfig(base_url=llm.base_url, model="local"))

Loading costs a few seconds of one core and ~1.5 GB of memory (n_ctx 2048): start it once per
session (a session-scoped fixture) and share it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LocalLLMProcess:
    def __init__(self, log_path: Path, env: dict[str, str] | None = None, ctx: int = 2048) -> None:
        self.port, self.health_port = free_port(), free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.health_url = f"http://127.0.0.1:{self.health_port}"
        self.log_path = log_path
        self.env = {**os.environ, "ATTESTA_LOG_JSON": "false", "ATTESTA_LLM_LOCAL_CTX": str(ctx),
                    **(env or {}), "ATTESTA_LLM_LOCAL_HOST": "127.0.0.1",
                    "ATTESTA_LLM_LOCAL_PORT": str(self.port), "ATTESTA_HEALTH_HOST": "127.0.0.1",
                    "ATTESTA_HEALTH_PORT": str(self.health_port)}
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def start(self, timeout_s: float = 180.0) -> LocalLLMProcess:
        import httpx

        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", "llm"],
                                     env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"attesta run llm exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if httpx.get(f"{self.health_url}/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"attesta run llm not ready in {timeout_s:g} s: {self.log_tail()}")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, then the exit code (SIGKILL only if it did not stop within ``timeout_s``)."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
        return rc

    def __enter__(self) -> LocalLLMProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
