"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

No LLM endpoint can be reached from these machines, so the clients of one (the answer
service's generator, the classifier's judge) are tested against this server over real HTTP,
including hostile answers: malformed JSON, URLs and markdown links in the text, wrong ids,
slow replies (client timeouts), HTTP 429 with Retry-After and HTTP 500.

    with FakeChatServer() as server:
        server.script(FakeReply.json({"answer": "..."}), FakeReply.status(429, retry_after=0))
        client = ChatCompletionsClient(LLMConfig(base_url=server.base_url, model="fake"))

Replies are served in order from the script; when it is empty, ``responder`` (if set) builds
the reply from the request body, else the server answers 500 "script exhausted". Every
request body is kept in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class FakeReply:
    status_code: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0

    @staticmethod
    def content(text: str, *, delay_s: float = 0.0, model: str = "fake-model") -> FakeReply:
        """A well-formed completion whose message content is ``text`` (any string at all)."""
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return FakeReply(200, json.dumps(payload).encode(), (("content-type", "application/json"),),
                         delay_s)

    @staticmethod
    def json(obj: Any, *, delay_s: float = 0.0) -> FakeReply:
        """A completion whose content is ``obj`` serialized as JSON."""
        return FakeReply.content(json.dumps(obj), delay_s=delay_s)

    @staticmethod
    def status(code: int, *, retry_after: float | None = None, body: str = "") -> FakeReply:
        headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
        return FakeReply(code, body.encode() or json.dumps({"error": {"code": code}}).encode(),
                         (("content-type", "application/json"), *headers))

    @staticmethod
    def raw(body: bytes, *, status: int = 200, content_type: str = "application/json") -> FakeReply:
        """Bytes as they are (e.g. a body that is not JSON at all)."""
        return FakeReply(status, body, (("content-type", content_type),))


Responder = Callable[[dict[str, Any]], FakeReply]


@dataclass
class FakeChatServer:
    host: str = "127.0.0.1"
    responder: Responder | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    _script: deque[FakeReply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://{self.host}:{self._server.server_address[1]}/v1"

    def script(self, *replies: FakeReply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return FakeReply.status(500, body='{"error":"script exhausted"}')

    def start(self) -> FakeChatServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(FakeReply.status(404))
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparseable": raw.decode("utf-8", "replace")}
                self._send(fake._next(body))

            def _send(self, reply: FakeReply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status_code)
                    for k, v in reply.headers:
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to do

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
