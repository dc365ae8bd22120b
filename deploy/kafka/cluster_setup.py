"""Readiness and set-up of the local three-broker cluster (run by `scripts/infra`, cluster mode).

As the admin principal, through the project's own client factory (``KafkaOptions``, SASL_SSL +
SCRAM-SHA-512, the local CA): wait until all three brokers are registered, create every
declared topic up front (its partitions, replication factor 3, ``min.insync.replicas=2``,
``cleanup.policy=compact`` where the registry says so), apply the ACLs generated from the
declared roles (``acls.py``) and wait until every partition has its three replicas in sync.

Exit codes: 0 ready, 1 not ready before the deadline, 2 a broker process died.

    python deploy/kafka/cluster_setup.py --env .state/kafka-cluster/env [--pid N ...] [--timeout 120]
    python deploy/kafka/cluster_setup.py --env ... --check   # brokers and topics only, no changes
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from aiokafka.admin import NewTopic

from attesta_contracts.topics import all_topics
from attesta_platform.kafka import KafkaOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
import acls  # noqa: E402 - the generator next to this file
from probe import wait_ready  # noqa: E402 - the single node's probe, next to this file

BROKERS = 3
REPLICAS = 3
MIN_INSYNC = "2"


def read_env(path: Path) -> dict[str, str]:
    """``export K=V`` lines of an env file written by scripts/infra."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            out[key] = shlex.split(value)[0] if value else ""
    return out


def options_from_env(env: dict[str, str]) -> KafkaOptions:
    return KafkaOptions(env["KAFKA_BOOTSTRAP_SERVERS"],
                        security_protocol=env["ATTESTA_KAFKA_SECURITY_PROTOCOL"],
                        sasl_mechanism=env["ATTESTA_KAFKA_SASL_MECHANISM"],
                        sasl_username=env["ATTESTA_KAFKA_SASL_USERNAME"],
                        sasl_password=env["ATTESTA_KAFKA_SASL_PASSWORD"],
                        ssl_cafile=env["ATTESTA_KAFKA_SSL_CAFILE"],
                        partitions=int(os.environ.get("ATTESTA_KAFKA_PARTITIONS", "3")),
                        replication_factor=REPLICAS)


def new_topics(partitions: int) -> list[NewTopic]:
    out = []
    for t in all_topics().values():
        configs = {"min.insync.replicas": MIN_INSYNC}
        if t.compacted:
            configs["cleanup.policy"] = "compact"
        out.append(NewTopic(t.name, num_partitions=partitions, replication_factor=REPLICAS,
                            topic_configs=configs))
    return out


async def _attempt(options: KafkaOptions, check_only: bool) -> tuple[bool, str]:
    admin = options.admin()
    try:
        await asyncio.wait_for(admin.start(), 10)
        return await _ready(admin, options, check_only)
    except Exception as exc:  # noqa: BLE001 - any failure just means "not yet"
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(admin.close(), 5)


async def _ready(admin: Any, options: KafkaOptions, check_only: bool) -> tuple[bool, str]:
    """Brokers registered, topics created, ACLs applied, every replica in sync?"""
    cluster = await asyncio.wait_for(admin.describe_cluster(), 10)
    brokers = cluster.get("brokers") or []
    if len(brokers) < BROKERS:
        return False, f"{len(brokers)} of {BROKERS} brokers registered"
    wanted = new_topics(options.partitions)
    if not check_only:
        resp = await asyncio.wait_for(admin.create_topics(wanted, timeout_ms=10000), 15)
        bad = [(t[0], t[1]) for t in resp.topic_errors if t[1] not in (0, 36)]
        if bad:
            return False, f"create topics: {bad}"
        await asyncio.wait_for(acls.apply(admin, acls.all_acls()), 30)
    names = [t.name for t in wanted]
    described: list[dict[str, Any]] = await asyncio.wait_for(admin.describe_topics(names), 10)
    short = [f"{d['topic']}/{p['partition']}" for d in described for p in d["partitions"]
             if len(p["isr"]) < REPLICAS]
    missing = [d["topic"] for d in described if d["error_code"] != 0]
    if missing or short:
        return False, f"topics missing {missing[:3]}, partitions short of ISR {short[:3]}"
    return True, (f"brokers={sorted(b['node_id'] for b in brokers)} "
                  f"controller={cluster.get('controller_id')}; {len(names)} topics x "
                  f"{options.partitions} partitions, RF {REPLICAS}, all in sync; "
                  f"{len(acls.all_acls())} ACLs applied")


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True, type=Path, help="the admin principal's env file")
    ap.add_argument("--pid", type=int, action="append", default=[], help="broker pids: fail fast")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--check", action="store_true", help="only check; create nothing")
    args = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # aiokafka is noisy while brokers boot
    options = options_from_env(read_env(args.env))
    return await wait_ready(lambda left: _attempt(options, args.check), timeout=args.timeout,
                            pids=args.pid, pause=1, name="kafka-cluster", ready="kafka-cluster ready",
                            died="broker process(es) {dead}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
