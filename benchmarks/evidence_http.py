"""Public evidence routes under 50 concurrent clients on loopback, straight to the service (the
gateway engineer measures the same through the gateway), side by side with the floor: the same
server's /healthz (no database).

A temporary evidence database is migrated and seeded with --seed records through the service
layer (so the log has that many leaves); the service's HTTP app (entrypoints.http.create_app, the
one `attesta run evidence` serves) runs under uvicorn in a child process; wrk drives it:

  GET  /healthz                               floor: same process, no PostgreSQL
  GET  /v1/public/evidence/{sha256}           metadata + inclusion proof + signed head
  POST /v1/public/evidence/{sha256}/check     byte-for-byte check of a ~500-byte answer
  GET  /v1/public/evidence/{unknown}          404 path
  GET  /v1/public/log/tree-head

    .venv/bin/python benchmarks/evidence_http.py [--duration 8] [--connections 50] [--seed 1000]

Needs wrk (`apt-get install -y wrk`) and the infrastructure of `.state/env` (PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from functools import partial

import asyncpg
import httpx


def wrk(url: str, duration: int, connections: int, script: str | None = None) -> dict:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "10s"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    dist = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)\s*$", out, re.M))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": _ms(dist["50"]), "p99": _ms(dist["99"]),
            "non2xx": int(non2xx.group(1)) if non2xx else 0}


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def serve(db_url: str, port: int) -> None:
    """Child process: the service's HTTP app, as bootstrap wires it (pool of 10)."""
    import uvicorn
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from attesta_evidence.adapters.postgres import EvidenceUnitOfWork, create_pool
    from attesta_evidence.bootstrap import build_bus
    from attesta_evidence.entrypoints.http import create_app
    from attesta_evidence.service_layer.log import TransparencyLog

    async def run() -> None:
        pool = await create_pool(db_url, min_size=10, max_size=10)
        new_uow = partial(EvidenceUnitOfWork, pool)
        app = create_app(build_bus(new_uow, tlog=TransparencyLog(new_uow, Ed25519PrivateKey.generate())),
                         database=pool, internal_token="bench", max_body_bytes=4 << 20)
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                            log_level="warning", lifespan="off")).serve()

    asyncio.run(run())


async def seed(app_url: str, n: int) -> tuple[str, str]:
    from attesta_contracts.evidence import EvidenceRefKind
    from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
    from attesta_evidence.domain.model import IncomingEvidence, Reference
    from attesta_evidence.domain.commands import Intake, RecordEvidence
    from attesta_evidence.service_layer.handlers import record_evidence
    from attesta_platform.messaging import Messaging

    pool = await asyncpg.create_pool(app_url, min_size=1, max_size=8)
    events = Messaging("127.0.0.1:1", "bench")
    texts = [f"Seeded answer {i}: Velnorex 20 mg once daily, see the label. " * 8 for i in range(n)]

    async def put(chunk: list[str]) -> None:
        for t in chunk:
            await record_evidence(RecordEvidence((Intake(IncomingEvidence.build(
                t, hashlib.sha256(t.encode()).hexdigest(), "text/plain; charset=utf-8",
                Reference(EvidenceRefKind.RUN, f"r-{hash(t)}", "ws"), 1 << 20), "bench", None),)),
                EvidenceUnitOfWork(pool), events)

    await asyncio.gather(*(put(texts[i::8]) for i in range(8)))
    await pool.close()
    middle = texts[n // 2]
    return hashlib.sha256(middle.encode()).hexdigest(), middle


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()

    from attesta_testing.evidence import free_port, migrated_database
    from attesta_testing.infra import postgres_admin_url

    async with migrated_database(postgres_admin_url(), prefix="bench_http") as db:
        t = time.perf_counter()
        sha, content = await seed(db.app_url, args.seed)
        print(f"seeded {args.seed} records in {time.perf_counter() - t:.1f}s")
        port = free_port()
        child = subprocess.Popen([sys.executable, __file__, "--serve", db.app_url, str(port)])
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            assert httpx.get(f"{base}/v1/public/evidence/{sha}").status_code == 200
            with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
                body = json.dumps({"content": content}).replace("\\", "\\\\").replace('"', '\\"')
                lua.write(f'wrk.method = "POST"\nwrk.body = "{body}"\n'
                          'wrk.headers["Content-Type"] = "application/json"\n')
            check = httpx.post(f"{base}/v1/public/evidence/{sha}/check", json={"content": content})
            assert check.json()["match"] is True, check.text
            unknown = hashlib.sha256(b"unknown").hexdigest()
            scenarios = [
                ("floor: GET /healthz (no database)", f"{base}/healthz", None),
                ("GET /v1/public/evidence/{sha256} (+proof)", f"{base}/v1/public/evidence/{sha}",
                 None),
                ("POST /v1/public/evidence/{sha256}/check", f"{base}/v1/public/evidence/{sha}/check",
                 lua.name),
                ("GET /v1/public/evidence/{unknown} (404)", f"{base}/v1/public/evidence/{unknown}",
                 None),
                ("GET /v1/public/log/tree-head", f"{base}/v1/public/log/tree-head", None),
            ]
            print(f"\n{args.connections} connections, {args.duration}s each, wrk -t2, loopback; "
                  f"log of {args.seed} leaves; body {len(content.encode())} bytes\n")
            print(f"{'scenario':<44} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
            for name, url, script in scenarios:
                r = wrk(url, args.duration, args.connections, script)
                print(f"{name:<44} {r['rps']:>8.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} "
                      f"{r['non2xx']:>8}")
            os.unlink(lua.name)
        finally:
            child.terminate()
            child.wait(15)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        asyncio.run(main())
