"""CPU per request of the gateway's own ASGI app, in-process, no network: one authenticated GET
(key check, rate limit with a lease in hand, forward to a stand-in upstream that answers at
once), so what remains is FastAPI routing/dependencies, the edge guard and the response. CPU
time (process_time), not wall time: on a loaded shared box wall time is mostly run-queue wait.
Optionally profiles the same loop (--profile N: the N costliest functions).

``--baseline REF`` measures the gateway code of git revision REF side by side with the working
tree's, in one run: its ``services/gateway/src`` is extracted to a temporary directory, and the
rounds alternate between the two in fresh processes (the baseline's first on PYTHONPATH), so
drift on a shared machine hits both alike; it prints both medians and their ratio.

    .venv/bin/python benchmarks/gateway_app_cpu.py [--requests 2000] [--rounds 5] [--profile 15]
    .venv/bin/python benchmarks/gateway_app_cpu.py --rounds 7 --baseline 8ea0e2c
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def _run(requests: int, rounds: int) -> list[float]:
    from attesta_gateway.adapters.upstream import UpstreamReply
    from attesta_gateway.bootstrap import build_gateway
    from attesta_gateway.domain.keys import Principal
    from attesta_gateway.entrypoints.http import create_app

    try:
        from attesta_gateway.settings import GatewaySettings
    except ImportError:  # a --baseline from before the settings moved out of bootstrap.py
        from attesta_gateway.bootstrap import GatewaySettings

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

    gw = build_gateway(GatewaySettings(env="development"))
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


def _one_round(requests: int, gateway_src: Path | None) -> float:
    """One round in a fresh process: the working tree's gateway, or the one in ``gateway_src``."""
    env = dict(os.environ)
    if gateway_src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(gateway_src),
                                                          env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, __file__, "--requests", str(requests), "--rounds", "1",
                          "--round-only"], env=env, cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return float(out.strip().splitlines()[-1])


def _extract_gateway(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, "services/gateway/src"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "services" / "gateway" / "src"


def _compare(requests: int, rounds: int, ref: str) -> None:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gw-baseline-") as tmp:
        baseline_src = _extract_gateway(ref, Path(tmp))
        before, after = [], []
        for _ in range(rounds):  # alternated: drift on a shared machine hits both alike
            before.append(_one_round(requests, baseline_src))
            after.append(_one_round(requests, None))
    b, a = statistics.median(before), statistics.median(after)
    print(f"gateway app, authenticated GET, in-process, {requests} requests x {rounds} rounds "
          f"alternated; load average before: {load:.1f}")
    print("| code | median us CPU/request | rounds |\n|---|---|---|")
    print(f"| baseline {ref} | {b:.0f} | {', '.join(f'{r:.0f}' for r in before)} |")
    print(f"| working tree | {a:.0f} | {', '.join(f'{r:.0f}' for r in after)} |")
    print(f"working tree / baseline: {a / b:.2f} ({b - a:.0f} us less CPU per request)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--baseline", metavar="REF",
                        help="also measure the gateway of git revision REF, rounds alternated")
    parser.add_argument("--round-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        _compare(args.requests, args.rounds, args.baseline)
        return
    runs = asyncio.run(_run(args.requests, args.rounds))
    if args.round_only:  # one number for _one_round
        print(f"{runs[0]:.3f}")
        return
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
