"""llama.cpp's OpenAI-compatible HTTP server, run in this process by ``xllamacpp``.

``xllamacpp.Server(params)`` loads the model and serves ``/v1/chat/completions`` (JSON schema
``response_format``, GBNF ``grammar``, logprobs), ``/v1/models``, ``/health`` and ``/metrics``
from its own C++ threads; the Python side only starts it, asks it one token to prove it answers,
watches ``/health`` and stops it. A client that hangs up cancels its request in llama.cpp.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ModelServerError(Exception):
    """The model server could not start or does not answer; the message says why."""


@dataclass(frozen=True)
class ServerOptions:
    host: str
    port: int
    threads: int
    ctx: int
    parallel: int
    model_alias: str
    api_key: str = ""


def _check_port_free(host: str, port: int) -> None:
    # llama.cpp reports a bind failure only as "failed to init server": say which port instead.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise ModelServerError(
                f"cannot listen on {host}:{port} ({exc.strerror}); set ATTESTA_LLM_LOCAL_PORT") from None


def _params(model_path: Path, opts: ServerOptions) -> Any:
    import xllamacpp  # the native llama.cpp binding loads when a model is opened, not at import

    p = xllamacpp.CommonParams()
    p.model.path = str(model_path)
    p.model_alias = {opts.model_alias}
    p.n_ctx = opts.ctx
    p.n_parallel = opts.parallel
    p.cpuparams.n_threads = opts.threads
    p.cpuparams_batch.n_threads = opts.threads
    p.hostnames = [opts.host]
    p.port = opts.port
    p.offline = True  # never reach for a model hub
    p.ui = False
    p.endpoint_metrics = True
    p.endpoint_slots = False  # no slot save/restore/erase over HTTP
    # No cross-origin browser access: a web page must not drive the local model (llama.cpp's
    # default is "*"); the services call it server-to-server, without an Origin header.
    p.cors_origins = ""
    p.cors_origins_explicit = True
    if opts.api_key:
        p.api_keys = [opts.api_key]
    return p


class LlamaServer:
    def __init__(self, server: Any, base_url: str) -> None:
        self._server: Any = server
        self.base_url = base_url  # http://host:port (the OpenAI API is under /v1)

    @classmethod
    def start(cls, model_path: Path, opts: ServerOptions) -> LlamaServer:
        """Load the model and listen (blocks for the load: seconds)."""
        import xllamacpp  # the native llama.cpp binding loads when a model is opened, not at import

        _check_port_free(opts.host, opts.port)
        try:
            server = xllamacpp.Server(_params(model_path, opts))
        except RuntimeError as exc:
            raise ModelServerError(f"llama.cpp could not load {model_path}: {exc}") from None
        return cls(server, str(server.listening_address))

    def complete_one_token(self) -> float:
        """Ask for one token (the readiness proof); returns the seconds it took."""
        started = time.perf_counter()
        out = self._server.handle_completions({"prompt": "ok", "max_tokens": 1, "temperature": 0})
        choices = out.get("choices") if isinstance(out, dict) else None
        if not choices or not isinstance(choices[0], dict) or "text" not in choices[0]:
            raise ModelServerError(f"the 1-token completion failed: {str(out)[:300]}")
        return time.perf_counter() - started

    def stop(self) -> None:
        """Stop the server loop and free the model (the C++ destructor joins its threads)."""
        self._server = None
