"""What protects the public edge below the routes: slow clients and response headers.

- ``EdgeGuard`` (pure ASGI middleware, outermost): the security headers on every response
  (CSP with ``frame-ancestors 'none'``, ``nosniff``, ``X-Frame-Options``, ``Referrer-Policy``);
  a NUL byte (``%00``) in the path or query is a 400 before any route sees it; and the body must
  arrive within ``body_timeout_s`` of the app first asking for it, else 408 and the connection
  is closed.
- ``GuardedHttpProtocol``: uvicorn's HTTP protocol with a header deadline. uvicorn only times out
  *idle* keep-alive connections; a client that opens a connection and sends half a request
  line (or half its headers) would hold it forever, and the ASGI app never hears of it. Here the
  request line and headers must be complete within ``header_timeout_s`` of the connection
  opening (or of the previous response), else 408 and close.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

SECURITY_HEADERS_BASE = (
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
)


def security_headers(csp: str) -> list[tuple[str, str]]:
    return [("content-security-policy", csp), *SECURITY_HEADERS_BASE]


def _json_error(status: int, code: str, reason: str) -> bytes:
    return json.dumps({"error": {"code": code, "reason": reason}}).encode()


class EdgeGuard:
    def __init__(self, app: Any, *, headers: list[tuple[str, str]], body_timeout_s: float) -> None:
        self.app, self.body_timeout_s = app, body_timeout_s
        self._headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        self._names = {k for k, _ in self._headers}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        timed_out = False

        async def send_guarded(message: Any) -> None:
            nonlocal started
            if timed_out:
                return  # the app's answer to a body that never came; the 408 is sent below
            if message["type"] == "http.response.start":
                started = True
                own = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self._names]
                message = {**message, "headers": [*own, *self._headers]}
            await send(message)

        raw = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        if b"%00" in raw or b"\x00" in raw or b"%00" in scope.get("query_string", b""):
            await self._error(send_guarded, 400, "nul_character",
                              "the URL contains a NUL character (%00)")
            return

        loop = asyncio.get_running_loop()
        deadline: float | None = None
        body_done = False

        async def receive_guarded() -> Any:
            nonlocal deadline, body_done, timed_out
            if body_done:
                return await receive()  # only http.disconnect is left: no deadline
            if deadline is None:
                deadline = loop.time() + self.body_timeout_s
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                # Seen by the app as a client that went away (however the framework answers
                # that, send_guarded drops it).
                timed_out = not started
                body_done = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, receive_guarded, send_guarded)
        if timed_out:
            await self._error(send, 408, "request_timeout",
                              f"the request body did not arrive within {self.body_timeout_s:g} s",
                              close=True, extra=self._headers)

    async def _error(self, send: Any, status: int, code: str, reason: str,
                     close: bool = False, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        body = _json_error(status, code, reason)
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode()), *extra]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol (httptools, pinned: uvicorn's default when installed) with the
    header deadline: httptools creates ``self.cycle`` when a request's headers are complete,
    which is what this watches. Module level, so ``uvicorn.run(..., workers=N)`` can hand it to
    its workers."""

    header_timeout_s = 10.0
    timeout_response = b""
    _header_timer: asyncio.TimerHandle | None = None

    @classmethod
    def configure(cls, header_timeout_s: float, headers: list[tuple[str, str]]) -> None:
        """Set the deadline and the 408's headers (each worker process calls this once, from
        the app factory, before serving)."""
        body = _json_error(408, "request_timeout",
                           f"the request headers did not arrive within {header_timeout_s:g} s")
        head = [b"HTTP/1.1 408 Request Timeout", b"content-type: application/json",
                b"content-length: " + str(len(body)).encode(), b"connection: close",
                *(f"{k}: {v}".encode("latin-1") for k, v in headers)]
        cls.header_timeout_s = header_timeout_s
        cls.timeout_response = b"\r\n".join(head) + b"\r\n\r\n" + body

    # Narrower than asyncio's BaseTransport, as uvicorn's own override is: uvicorn's servers
    # only ever hand it a Transport.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._bytes_seen = False
        self._arm_header_deadline()

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._awaited_after = self.cycle
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        self._bytes_seen = True
        super().data_received(data)
        if self._header_timer is not None and self.cycle is not self._awaited_after:
            self._disarm_header_deadline()  # a request's headers are complete

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn declares ``cycle`` non-optional but starts it as None (no request yet).
        cycle: RequestResponseCycle | None = self.cycle
        if not self.transport.is_closing() and (cycle is None or cycle.response_complete):
            self._arm_header_deadline()  # waiting for the next request's headers

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.cycle is not self._awaited_after:
            return
        # A connection that has sent something gets a reason (part of the next request may
        # already sit in the parser); one that never sent a byte is just closed.
        if self._bytes_seen:
            self.transport.write(self.timeout_response)
        self.transport.close()
