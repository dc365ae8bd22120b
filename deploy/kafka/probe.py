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


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--pid", type=int, default=None, help="broker pid: give up at once if it dies")
    ap.add_argument("--timeout", type=float, default=90.0, help="overall deadline, seconds")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    logging.basicConfig(level=logging.CRITICAL)  # aiokafka is noisy while the broker boots
    deadline = time.monotonic() + args.timeout
    last = "no attempt made"
    attempt = 0
    while True:
        if not _alive(args.pid):
            print(f"kafka probe: broker process {args.pid} died ({last})", file=sys.stderr)
            return 2
        attempt += 1
        left = deadline - time.monotonic()
        ok, last = await _attempt(args.bootstrap, max(1.0, min(10.0, left)))
        if ok:
            if not args.quiet:
                print(f"kafka ready after {attempt} attempt(s): {last}")
            return 0
        if time.monotonic() >= deadline:
            print(f"kafka probe: not ready after {args.timeout:.0f}s: {last}", file=sys.stderr)
            return 1
        await asyncio.sleep(0.5)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
