"""A service that comes back on another address (a restarted container gets a new one on its
network) is reached again at once: after a failed connect the gateway forgets the cached
addresses instead of trying the old one until its DNS cache expires. Against a real HTTP server
on 127.0.0.1; the name resolves first to ::1, where nothing listens on that port."""

from __future__ import annotations

import socket

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from attesta_gateway.adapters.upstream import Upstream
from attesta_platform.http import ApiError
from tests.gateway_fakes import http_errors

pytestmark = pytest.mark.unit


class MovedResolver(AbstractResolver):
    """``classifier`` is at ::1 until ``move()``, then at 127.0.0.1."""

    def __init__(self) -> None:
        self.address, self.lookups = "::1", 0

    def move(self) -> None:
        self.address = "127.0.0.1"

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        self.lookups += 1
        fam = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        return [ResolveResult(hostname=host, host=self.address, port=port, family=fam, proto=0,
                              flags=socket.AI_NUMERICHOST)]

    async def close(self) -> None:
        pass


async def _brands(request: web.Request) -> web.Response:
    return web.json_response({"items": []})


async def test_a_service_back_on_another_address_is_reached_without_waiting_for_the_cache():
    app = web.Application()
    app.router.add_get("/v1/brands", _brands)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)  # IPv4 only: ::1 at this port refuses
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    resolver = MovedResolver()
    up = Upstream("classifier", f"http://classifier:{port}", "token", attempts=1,
                  resolver=resolver)
    try:
        with pytest.raises(ApiError) as refused, http_errors():
            await up.request("GET", "/v1/brands", workspace="ws")
        assert refused.value.status == 503 and "unreachable" in refused.value.reason
        resolver.move()  # the service is back, elsewhere
        reply = await up.request("GET", "/v1/brands", workspace="ws")
        assert reply.status == 200 and resolver.lookups == 2
        # a success keeps the cache: the next call does not resolve again
        assert (await up.request("GET", "/v1/brands", workspace="ws")).status == 200
        assert resolver.lookups == 2
    finally:
        await up.close()
        await runner.cleanup()
