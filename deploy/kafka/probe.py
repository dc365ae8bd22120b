"""Kafka readiness probe used by `scripts/infra`.

Ready means: an admin client (aiokafka, from the project venv) sees at least one broker
AND creating a probe topic succeeds (error code 0 = created, 36 = already exists).
An open TCP port is not readiness.

Exit codes: 0 ready, 1 not ready before the deadline, 2 the broker process died.

    python deploy/kafka/probe.py --bootstrap 127.0.0.1:19092 [--pid 1234] [--timeout 90]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

PROBE_TOPIC = "attesta-infra-probe"
OK_CODES = {0, 36}  # NONE, TOPIC_ALREADY_EXISTS


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); look at its state.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _attempt(bootstrap: str, timeout_s: float) -> tuple[bool, str]:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=int(max(timeout_s, 1) * 1000),
        client_id="attesta-infra-probe",
    )
    try:
        await asyncio.wait_for(admin.start(), timeout_s)
        cluster = await asyncio.wait_for(admin.describe_cluster(), timeout_s)
        brokers = cluster.get("brokers") or []
        if not brokers:
            return False, "admin client sees no broker yet"
        resp = await asyncio.wait_for(
            admin.create_topics(
                [NewTopic(PROBE_TOPIC, num_partitions=1, replication_factor=1)],
                timeout_ms=int(timeout_s * 1000),
            ),
            timeout_s + 1,
        )
        codes = {t[0]: t[1] for t in resp.topic_errors}
        code = codes.get(PROBE_TOPIC)
        if code in OK_CODES:
            ids = ",".join(str(b.get("node_id")) for b in brokers)
            return True, (
                f"brokers=[{ids}] cluster_id={cluster.get('cluster_id')} "
                f"controller={cluster.get('controller_id')} "
                f"probe topic '{PROBE_TOPIC}' create -> error_code {code}"
            )
        return False, f"probe topic create returned {resp.topic_errors!r}"
    except Exception as exc:  # noqa: BLE001 - any failure just means "not yet"
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        try:
            await asyncio.wait_for(admin.close(), 5)
        except Exception:  # noqa: BLE001
            pass


async def wait_ready(attempt: Callable[[float], Awaitable[tuple[bool, str]]], *, timeout: float,
                     pids: Sequence[int | None] = (), pause: float = 0.5, name: str = "kafka probe",
                     ready: str = "kafka ready", died: str = "broker process {dead[0]}",
                     quiet: bool = False) -> int:
    """Call ``attempt(seconds left)`` until it says ready, a process of ``pids`` dies or
    ``timeout`` passes; the exit code (0 ready, 1 not ready before the deadline, 2 a broker
    process died), with what the last attempt said. Also the cluster set-up's wait
    (cluster_setup.py): one loop for both."""
    deadline = time.monotonic() + timeout
    last = "no attempt made"
    attempts = 0
    while True:
        dead = [p for p in pids if not _alive(p)]
        if dead:
            print(f"{name}: {died.format(dead=dead)} died ({last})", file=sys.stderr)
            return 2
        attempts += 1
        ok, last = await attempt(deadline - time.monotonic())
        if ok:
            if not quiet:
                print(f"{ready} after {attempts} attempt(s): {last}")
            return 0
        if time.monotonic() >= deadline:
            print(f"{name}: not ready after {timeout:.0f}s: {last}", file=sys.stderr)
            return 1
        await asyncio.sleep(pause)


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--pid", type=int, default=None, help="broker pid: give up at once if it dies")
    ap.add_argument("--timeout", type=float, default=90.0, help="overall deadline, seconds")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    logging.basicConfig(level=logging.CRITICAL)  # aiokafka is noisy while the broker boots
    return await wait_ready(lambda left: _attempt(args.bootstrap, max(1.0, min(10.0, left))),
                            timeout=args.timeout, pids=[args.pid], quiet=args.quiet)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
