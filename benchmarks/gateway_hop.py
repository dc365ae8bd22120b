"""Gateway hop overhead: the same GETs through the gateway and straight to the evidence service,
side by side in one run, measured with wrk on loopback.

Scenarios (each with wrk, --latency):
  public GET   /v1/public/evidence/{sha256}   gateway (per-client rate limit in Redis) vs direct
  auth GET     /v1/evidence/{sha256}          gateway (API key + per-key limit) vs direct
                                              (internal token + workspace headers)
at 64 connections (throughput, p50/p99 under load) and at 1 connection (the bare hop).

Everything is real and started here: a temporary evidence database migrated with
`attesta evidence migrate`, one stored piece of evidence, `attesta run evidence`, a temporary
gateway database, an API key, `attesta run gateway`. Needs wrk (`apt-get install -y wrk`) and
the infrastructure of `.state/env`.

    .venv/bin/python benchmarks/gateway_hop.py [--duration 8] [--connections 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]


def wrk(url: str, headers: dict[str, str], duration: int, connections: int,
        threads: int) -> dict[str, float]:
    cmd = ["wrk", f"-t{min(threads, connections)}", f"-c{connections}", f"-d{duration}s",
           "--latency", "--timeout", "10s"]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    dist = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)\s*$", out, re.M))
    if "50" not in dist:
        raise SystemExit(f"wrk gave no latency distribution for {url}:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"rps": rps, "p50_ms": _ms(dist["50"]), "p99_ms": _ms(dist["99"]),
            "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "socket_errors": errors.group(1) if errors else ""}


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by these processes and their children."""
    import psutil

    total = 0.0
    for pid in pids:
        proc = psutil.Process(pid)
        for p in [proc, *proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
    return total


def measured(url: str, headers: dict[str, str], duration: int, connections: int, threads: int,
             cpu_of: dict[str, list[int]]) -> dict[str, float]:
    """wrk numbers plus CPU milliseconds per request of each named process group: a figure the
    other work on a shared machine disturbs much less than latency."""
    before = {name: _cpu_s(pids) for name, pids in cpu_of.items()}
    result = wrk(url, headers, duration, connections, threads)
    requests = result["rps"] * duration
    for name, pids in cpu_of.items():
        result[f"cpu_{name}"] = (_cpu_s(pids) - before[name]) * 1000 / max(1.0, requests)
    return result


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def _wait(url: str, proc: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{url}: process exited\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} not ready")


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", *args],
                            env={**os.environ, "ATTESTA_LOG_JSON": "false", **env},
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=ROOT)  # noqa: SIM115


async def _seed_evidence(db_url: str, text: str) -> str:
    import asyncpg

    from attesta_contracts.evidence import EvidenceRefKind
    from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
    from attesta_evidence.domain.model import RUN_MEDIA_TYPE, IncomingEvidence, Reference

    import hashlib

    sha = hashlib.sha256(text.encode()).hexdigest()
    pool = await asyncpg.create_pool(db_url, min_size=1, max_size=1)
    try:
        async with EvidenceUnitOfWork(pool) as uow:
            await uow.evidence.record_many([IncomingEvidence.build(
                text, sha, RUN_MEDIA_TYPE, Reference(EvidenceRefKind.RUN, "bench-run", "bench"),
                1_000_000)])
            await uow.commit()
    finally:
        await pool.close()
    return sha


async def _drop(admin: str, *names: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin)
    try:
        for name in names:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5,
                        help="1-connection runs alternate direct/gateway this many times "
                             "(2 s each); medians are reported, drift on a shared box cancels")
    parser.add_argument("--workers", default="1,2",
                        help="gateway worker counts to compare (ATTESTA_HTTP_WORKERS)")
    parser.add_argument("--exact", action=argparse.BooleanOptionalAction, default=True,
                        help="also run a 1-worker gateway with exact rate-limit counting "
                             "(ATTESTA_RATE_LIMIT_LEASE_MAX=1: one Redis call per request)")
    parser.add_argument("--hold", type=int, default=0,
                        help="keep the system up this many seconds after set-up (manual runs)")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    from attesta_gateway.adapters.migrate import migrate as gateway_migrate
    sys.path.insert(0, str(ROOT))  # tests/gateway_fakes.py: the gateway's test helpers
    from tests.gateway_fakes import free_port, make_key
    from attesta_testing.infra import postgres_admin_url

    admin = postgres_admin_url()
    tag = uuid.uuid4().hex[:8]
    ev_db, gw_db = f"bench_ev_{tag}", f"bench_gw_{tag}"
    parts = urlsplit(admin)
    ev_url = urlunsplit(parts._replace(
        netloc=f"attesta_evidence:attesta-evidence-dev-only@{parts.hostname}:{parts.port}",
        path=f"/{ev_db}"))
    gw_url = urlunsplit(parts._replace(
        netloc=f"attesta_gateway_test:gateway-test-only@{parts.hostname}:{parts.port}",
        path=f"/{gw_db}"))
    token, secret = secrets.token_urlsafe(32), secrets.token_urlsafe(48)
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    procs: list[subprocess.Popen] = []
    try:
        ev_env = {"ATTESTA_EVIDENCE_DATABASE": ev_db, "ATTESTA_EVIDENCE_DATABASE_URL": ev_url,
                  "ATTESTA_INTERNAL_TOKEN": token,
                  "ATTESTA_EVIDENCE_SIGNING_KEY_FILE": str(tmp / "log-key.pem"),
                  "ATTESTA_EVIDENCE_CONSUMER_GROUP": f"bench-evidence-{tag}",
                  "ATTESTA_EVIDENCE_HTTP_PORT": str(free_port())}
        subprocess.run([sys.executable, "-m", "attesta_platform.cli", "evidence", "migrate"],
                       env={**os.environ, **ev_env}, check=True, cwd=ROOT, capture_output=True)
        sha = asyncio.run(_seed_evidence(ev_url, f"benchmark evidence {tag}"))
        gateway_migrate(admin, gw_url)
        _, key = asyncio.run(make_key(gw_url, secret, "bench"))

        ev_port = int(ev_env["ATTESTA_EVIDENCE_HTTP_PORT"])
        procs.append(_spawn(["run", "evidence"], ev_env, tmp / "evidence.log"))
        ev = f"http://127.0.0.1:{ev_port}"
        _wait(f"{ev}/readyz", procs[-1], tmp / "evidence.log")
        gateways: dict[str, str] = {}
        gateway_pids: dict[str, int] = {}
        variants = [(f"{w} worker{'s' if w > 1 else ''}", w, "50")
                    for w in (int(x) for x in args.workers.split(","))]
        if args.exact:
            variants.append(("1 worker, exact limits", 1, "1"))
        for label, workers, lease in variants:
            gw_port = free_port()
            log = tmp / f"gateway-{gw_port}.log"
            procs.append(_spawn(["run", "gateway"], {
                "ATTESTA_HTTP_PORT": str(gw_port), "ATTESTA_HTTP_WORKERS": str(workers),
                "ATTESTA_GATEWAY_DB_URL": gw_url,
                "ATTESTA_GATEWAY_SECRET": secret, "ATTESTA_INTERNAL_TOKEN": token,
                "ATTESTA_EVIDENCE_URL": ev, "ATTESTA_RATE_LIMIT_PREFIX": f"bench-{tag}:",
                "ATTESTA_RATE_LIMIT_PER_KEY": "100000000",
                "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "100000000",
                "ATTESTA_RATE_LIMIT_LEASE_MAX": lease,
                "ATTESTA_LOG_LEVEL": "WARNING"}, log))
            gateways[label] = f"http://127.0.0.1:{gw_port}"
            gateway_pids[label] = procs[-1].pid
            _wait(f"{gateways[label]}/readyz", procs[-1], log)
        gw = next(iter(gateways.values()))
        import httpx

        # the first signed tree head that covers the seeded leaf (signer runs every second)

        for _ in range(50):
            if httpx.get(f"{ev}/v1/public/evidence/{sha}").status_code == 200:
                break
            time.sleep(0.2)

        internal = {"X-Attesta-Internal-Token": token, "X-Attesta-Workspace": "bench"}
        auth = {"Authorization": f"Bearer {key}"}
        cases = [("public GET /v1/public/evidence/{sha}", f"/v1/public/evidence/{sha}", {}, {}),
                 ("auth GET /v1/evidence/{sha}", f"/v1/evidence/{sha}", internal, auth)]
        for base in gateways.values():
            for _, path, _, g_h in cases:
                r = httpx.get(base + path, headers=g_h)
                assert r.status_code == 200, (path, r.status_code, r.text)
                wrk(base + path, g_h, 2, 16, 2)  # warm-up: pools, caches, every worker
        if args.hold:
            print(f"evidence {ev}  gateway {gw}  sha {sha}  key {key}  token {token}", flush=True)
            time.sleep(args.hold)
        print(f"\nwrk {args.duration}s per run, {args.threads} threads, loopback; "
              f"machine: {os.cpu_count()} cores shared with other work (noisy); "
              f"load average before: {os.getloadavg()[0]:.1f}\n")
        print("| scenario | conns | target | req/s | p50 ms | p99 ms | req/s vs direct | "
              "hop p50 ms | hop p99 ms | CPU ms/req evidence | CPU ms/req gateway | non-2xx |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        ev_pid = procs[0].pid
        def row(name: str, conns: int, target: str, r: dict, direct: dict) -> None:
            gw_cpu = f"{r['cpu_gateway']:.3f}" if "cpu_gateway" in r else "-"
            print(f"| {name} | {conns} | {target} | {r['rps']:.0f} | {r['p50_ms']:.2f} | "
                  f"{r['p99_ms']:.2f} | {r['rps'] / direct['rps']:.2f} | "
                  f"{r['p50_ms'] - direct['p50_ms']:.2f} | {r['p99_ms'] - direct['p99_ms']:.2f} | "
                  f"{r['cpu_evidence']:.3f} | {gw_cpu} | {r['non2xx']} |", flush=True)

        conns = args.connections
        for name, path, d_h, g_h in cases:
            direct = measured(ev + path, d_h, args.duration, conns, args.threads,
                              {"evidence": [ev_pid]})
            row(name, conns, "evidence direct", direct, direct)
            for label, base in gateways.items():
                r = measured(base + path, g_h, args.duration, conns, args.threads,
                             {"evidence": [ev_pid], "gateway": [gateway_pids[label]]})
                row(name, conns, f"gateway, {label}", r, direct)
        # One connection: the bare hop. Alternate short runs (direct, then each 1-worker
        # gateway) and take medians per metric: drift on a shared box hits every side alike.
        singles = {label: base for label, base in gateways.items() if label.startswith("1 ")}
        for name, path, d_h, g_h in cases:
            runs: dict[str, list[dict]] = {"direct": [], **{label: [] for label in singles}}
            for _ in range(args.rounds):
                runs["direct"].append(measured(ev + path, d_h, 2, 1, 1, {"evidence": [ev_pid]}))
                for label, base in singles.items():
                    runs[label].append(measured(base + path, g_h, 2, 1, 1, {
                        "evidence": [ev_pid], "gateway": [gateway_pids[label]]}))
            med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]
                       if isinstance(v[0][m], (int, float))} for k, v in runs.items()}
            row(name, 1, f"evidence direct (median of {args.rounds})", med["direct"],
                med["direct"])
            for label in singles:
                row(name, 1, f"gateway, {label} (median of {args.rounds})", med[label],
                    med["direct"])
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        asyncio.run(_drop(admin, ev_db, gw_db))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
