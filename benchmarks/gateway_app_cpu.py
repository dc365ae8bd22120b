"""CPU per request of the gateway's own ASGI app, in-process, no network: one authenticated GET
(key check, rate limit with a lease in hand, forward to a stand-in upstream that answers at
once), so what remains is FastAPI routing/dependencies, the edge guard and the response. CPU
time (process_time), not wall time: on a loaded shared box wall time is mostly run-queue wait.
Optionally profiles the same loop (--profile N: the N costliest functions).

    .venv/bin/python benchmarks/gateway_app_cpu.py [--requests 2000] [--rounds 5] [--profile 15]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import time


async def _run(requests: int, rounds: int) -> list[float]:
    from attesta_gateway.adapters.upstream import UpstreamReply
    from attesta_gateway.bootstrap import build_gateway
    from attesta_gateway.domain.keys import Principal
    from attesta_gateway.entrypoints.http import create_app
    from attesta_gateway.settings import GatewaySettings

    class Upstream:
        name, base_url = "evidence", "in-process"

        async def request(self, *args: object, **kw: object) -> UpstreamReply:
            return UpstreamReply(200, b'{"sha256": "..."}', "application/json")

        async def close(self) -> None:
            pass

    class Authenticator:
        async def authenticate(self, plaintext: str) -> Principal:
            return Principal("0123456789abcdef", "bench")

    class Limits:
        async def for_key(self, key_id: str) -> None:
            return None

    gw = build_gateway(GatewaySettings(env="development", _env_file=None))  # type: ignore[call-arg]
    gw.evidence, gw.authenticator, gw.limits = Upstream(), Authenticator(), Limits()
    app = create_app(gw)
    path = "/v1/evidence/" + "a" * 64
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
             "headers": [(b"host", b"gw"),
                         (b"authorization", b"Bearer atk_0123456789abcdef_" + b"A" * 43)]}
    statuses: list[int] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    for _ in range(300):  # warm-up
        await app(dict(scope), receive, send)
    assert statuses[-1] == 200, statuses[-5:]
    out = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(requests):
            await app(dict(scope), receive, send)
        out.append((time.process_time() - started) / requests * 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    runs = asyncio.run(_run(args.requests, args.rounds))
    print(f"gateway app, authenticated GET, in-process: median {statistics.median(runs):.0f} us "
          f"CPU/request (rounds: {', '.join(f'{r:.0f}' for r in runs)})")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        asyncio.run(_run(args.requests, 1))
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(args.profile)
        print(text.getvalue())


if __name__ == "__main__":
    main()
