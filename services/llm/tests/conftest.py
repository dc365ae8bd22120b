"""The real local LLM process, started once per test session and stopped at its end (its stop
is checked: SIGTERM must end it with exit 0 and free its port)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from attesta_testing.llm import LocalLLMProcess


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLMProcess]:
    llm = LocalLLMProcess(tmp_path_factory.mktemp("llm") / "llm.log").start()
    yield llm
    rc = llm.stop()
    assert rc == 0, f"SIGTERM should stop attesta run llm with exit 0, got {rc}: {llm.log_tail()}"
    with socket.socket() as s:  # the OpenAI port is free again: the C++ server really stopped
        # SO_REUSEADDR: the server's closed connections may sit in TIME_WAIT on this port for a
        # minute; only a live listener still refuses the bind.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", llm.port))
