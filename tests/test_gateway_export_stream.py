"""The gateway passes an export on while it arrives (``Upstream.stream`` + ``stream_export``),
against a real HTTP server on 127.0.0.1 standing in for the classifier: the first chunk reaches
the caller before the upstream has finished, a slow-but-alive export outlives the per-call
timeout, a stalled one fails instead of hanging, and errors keep the usual shapes."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from attesta_gateway.adapters.upstream import Upstream
from attesta_gateway.entrypoints.responses import to_response
from attesta_gateway.domain.commands import JSON_ONLY, StreamExport
from attesta_gateway.service_layer.forwarding import stream_export
from attesta_platform.http import ApiError
from tests.gateway_fakes import http_errors

pytestmark = pytest.mark.unit
CSV = ("text/csv", "application/x-ndjson")
TIMEOUT_S = 1.0  # the upstream's per-call timeout; the slow export below takes 3 s in all


FINISHED: dict[str, float] = {}  # when the stand-in wrote its last byte


async def _export(request: web.Request) -> web.StreamResponse:
    mode = request.query.get("mode", "slow")
    if mode == "refused":
        return web.json_response({"error": {"code": "invalid_request", "reason": "to: bad"}},
                                 status=422)
    if mode == "html":
        return web.Response(text="<html></html>", content_type="text/html")
    resp = web.StreamResponse(headers={"Content-Type": "text/csv; charset=utf-8",
                                       "Content-Disposition": 'attachment; filename="x.csv"'})
    await resp.prepare(request)
    FINISHED.pop("at", None)
    await resp.write(b"run_id,engine\r\n")
    for i in range(5):
        # slow: 0.6 s between chunks (alive: each wait is under the timeout); stall: 3 s
        await asyncio.sleep(0.6 if mode == "slow" else 3.0)
        await resp.write(f"run-{i},e\r\n".encode() * 2000)
    FINISHED["at"] = time.monotonic()
    await resp.write_eof()
    return resp


@pytest.fixture
async def upstream():
    app = web.Application()
    app.router.add_get("/v1/exports/runs", _export)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    up = Upstream("classifier", f"http://127.0.0.1:{port}", "token", timeout_s=TIMEOUT_S,
                  deadline_s=TIMEOUT_S)
    yield up
    await up.close()
    await runner.cleanup()


async def _get(up: Upstream, mode: str):
    return to_response(await stream_export(
        StreamExport("classifier", "/v1/exports/runs", "ws", "key", {"mode": mode}, CSV),
        lambda name: up))


async def test_a_slow_export_is_passed_on_chunk_by_chunk(upstream):
    up = upstream
    started = time.monotonic()
    resp = await _get(up, "slow")
    assert resp.status_code == 200 and resp.media_type.startswith("text/csv")
    assert resp.headers["content-disposition"] == 'attachment; filename="x.csv"'
    chunks, first_at = [], None
    async for chunk in resp.body_iterator:
        first_at = first_at or time.monotonic()
        chunks.append(chunk)
    body = b"".join(chunks)
    assert body.startswith(b"run_id,engine\r\n") and body.count(b"\r\n") == 1 + 5 * 2000
    # The header line was handed on while the upstream was still writing, and the whole
    # answer took longer than the per-call timeout without being cut off.
    assert first_at < FINISHED["at"]
    assert FINISHED["at"] - started > 2 * TIMEOUT_S
    assert len(chunks) >= 5  # one piece at a time, never the whole file at once


async def test_a_stalled_export_fails_instead_of_hanging(upstream):
    up = upstream
    resp = await _get(up, "stall")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async for _ in resp.body_iterator:
            pass
    assert time.monotonic() - started < 3 * TIMEOUT_S


async def test_errors_keep_their_shape(upstream):
    up = upstream
    refused = await _get(up, "refused")
    assert refused.status_code == 422 and b"to: bad" in refused.body
    wrong_type = await _get(up, "html")
    assert wrong_type.status_code == 502 and b"upstream_bad_response" in wrong_type.body
    gone = Upstream("classifier", "http://127.0.0.1:9", "token", timeout_s=TIMEOUT_S)
    with pytest.raises(ApiError) as err, http_errors():
        await stream_export(StreamExport("classifier", "/v1/exports/runs", "ws", None, None,
                                         JSON_ONLY), lambda name: gone)
    assert err.value.status == 503 and err.value.code == "upstream_unavailable"
    await gone.close()
