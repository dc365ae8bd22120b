"""A ground-truth refresh has one deadline for the whole request, shorter than the gateway's
upstream timeout: sources still hanging then are cancelled (their connections closed), not left
running after the answer; and one refresh per brand runs at a time. Real PostgreSQL, a real
hanging HTTP server on 127.0.0.1 and the local brand sites."""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.integration


class HangingServer:
    """Accepts connections, reads the request, never answers; counts what is still open."""

    def __init__(self) -> None:
        self.accepted = 0
        self.open = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        try:
            while await reader.read(4096):  # until the client closes
                pass
        except ConnectionError:
            pass
        finally:
            self.open -= 1
            writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


@pytest.fixture
async def hanging():
    server = HangingServer()
    port = await server.start()
    yield server, port
    await server.stop()


async def _until(predicate, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def test_a_refresh_answers_by_its_deadline_and_cancels_the_hanging_fetches(
        make_client, workspace, sites, hanging):
    server, port = hanging
    c = make_client(workspace, allow=f"127.0.0.1:{sites.port},127.0.0.1:{port}",
                    refresh_deadline_s=4.0, timeout_s=10.0)
    sources = [sites.url("https://lumora.example/about")]
    sources += [f"http://127.0.0.1:{port}/hang/{i}" for i in range(12)]
    await c.post("/v1/brands", json={"name": "Lumora", "sources": sources})
    started = time.monotonic()
    r = await c.post("/v1/brands/lumora/ground-truth/refresh")
    took = time.monotonic() - started
    assert r.status_code == 200, r.text
    assert took < 4.6, f"answered after {took:.1f} s, deadline 4 s"
    outcomes = {s["url"]: s for s in r.json()["sources"]}
    assert outcomes[sources[0]]["ok"] and r.json()["added_fact_ids"]
    hung = [outcomes[u] for u in sources[1:]]
    assert not any(o["ok"] for o in hung)
    assert all("refresh deadline" in o["error"] for o in hung), hung
    # Nothing keeps working for the answered caller: every connection it opened is closed, and
    # the sources that were still waiting for a slot never connect.
    assert await _until(lambda: server.open == 0, 1.0), f"{server.open} fetches still open"
    accepted = server.accepted
    await asyncio.sleep(1.0)
    assert server.accepted == accepted and server.open == 0


async def test_one_refresh_per_brand_at_a_time(make_client, workspace, hanging):
    server, port = hanging
    c = make_client(workspace, allow=f"127.0.0.1:{port}", refresh_deadline_s=1.5)
    await c.post("/v1/brands", json={"name": "Hang", "sources": [f"http://127.0.0.1:{port}/h"]})
    first = asyncio.create_task(c.post("/v1/brands/hang/ground-truth/refresh"))
    assert await _until(lambda: server.accepted == 1, 2.0)
    second = await c.post("/v1/brands/hang/ground-truth/refresh")
    assert second.status_code == 409, second.text
    assert second.json()["error"]["code"] == "refresh_in_progress"
    assert second.headers["retry-after"] == "2"
    assert server.accepted == 1  # the second request fetched nothing
    done = await first
    assert done.status_code == 502 and "refresh deadline" in done.json()["error"]["reason"]
    # Once the first has answered, the brand is free again.
    again = await c.post("/v1/brands/hang/ground-truth/refresh")
    assert again.status_code == 502 and server.accepted == 2
