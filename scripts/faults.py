"""Fault harness: the whole system under load while its processes and infrastructure fail.

    .venv/bin/python scripts/faults.py --duration 180 --seed 7 --faults kill,pg,redis,kafka,poison

1. Starts a PRIVATE Kafka/PostgreSQL/Redis with deploy/infra.sh (own state folder and ports,
   never the shared ones), runs the migrations and demo data the way scripts/up.sh does, and
   starts every service with ``attesta run <service>`` on free ports of 127.0.0.1.
2. Drives steady load through the gateway: chat questions, ``POST /v1/runs`` with an
   Idempotency-Key and client retries, ground-truth refreshes; saves every signed tree head.
3. Injects faults one at a time on a seeded random schedule: kill -9 of a service then a
   restart (``kill``), PostgreSQL fast shutdown for 5-20 s (``pg``), Redis stopped then started
   (``redis``), the Kafka broker killed with -9 then restarted on its data (``kafka``), a poison
   message on each input topic (``poison``).
4. Stops the load, lets the system drain, and counts (the oracle): every acknowledged run exists
   once with one live classification per (run, brand), its evidence stored and included in the
   log; no chat answered twice; every saved tree head consistent with the final one and every
   leaf rebuilding the signed root; dead letters exactly the poison messages; consumer lag back
   to zero.

On the cluster (``--kafka cluster --instances 2``): the private Kafka is three brokers on
SASL_SSL + SCRAM-SHA-512 with ACLs (``deploy/infra.sh up --cluster``, its own folder and ports),
every service connects as its own principal (``kafka-cluster/env.<service>``), every consumer
service runs as N processes in one consumer group (retrieval with an index folder each), the
oracle reads as the admin principal, and the fault kinds add the Kafka nodes: kill -9 of the
node leading the busiest partitions (``leader``), kill -9 of the active KRaft controller
(``controller``), a node stopped with SIGTERM for 5-20 s then started (``broker``), every node
stopped and started in turn (``rolling``), two of the three nodes stopped for 5-15 s so that
``min.insync.replicas=2`` refuses every acks=all write (``isr``); ``kill`` takes one instance down
for 5-15 s while the other keeps consuming. See docs/scaling.md and docs/reliability.md.

Only processes whose pids this script recorded are ever signalled. Exit 0 when nothing was lost
or doubled and every log check held, 1 otherwise. ``--json`` writes the full result,
``--report FILE`` (re)writes the table between its markers in FILE (docs/reliability.md: the
single node's and the cluster's, each with markers of its own; ``--report-section`` names others).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
INFRA = ROOT / "deploy" / "infra.sh"
SERVICES = ("classifier", "evidence", "retrieval", "answer", "gateway", "collector")
KINDS = ("kill", "pg", "redis", "kafka", "poison")
# On the three-node cluster the single broker's kill becomes the node faults.
CLUSTER_KINDS = ("kill", "pg", "redis", "poison", "leader", "controller", "broker", "rolling",
                 "isr")
# Services whose consumers share one group, so a second process shares their partitions. The
# gateway's reply consumer is a group of its own per instance (every instance reads every reply)
# and the gateway is the load's one address: it runs once.
SCALED = ("classifier", "evidence", "retrieval", "answer", "collector")
NODES = (1, 2, 3)
# Input topics and the services that consume them (docs/asyncapi.md, restricted to the services
# this harness runs): a poison message must be dead-lettered once by each of them.
INPUT_TOPICS = {
    "chat.requested.v1": ("retrieval",),
    "retrieval.completed.v1": ("answer",),
    "chat.answered.v1": ("gateway", "collector"),
    "runs.recorded.v1": ("classifier", "evidence"),
    "groundtruth.source-fetched.v1": ("evidence",),
    "kb.cards.v1": ("retrieval",),
    "collection.response-captured.v1": ("evidence",),
}
DEAD_LETTERED = "messaging.dead-lettered.v1"
CHAT_ANSWERED = "chat.answered.v1"
RUNS_RECORDED = "runs.recorded.v1"
# The ``isr`` fault's witness: a topic of the harness's own (RF 3, min.insync.replicas=2, no
# consumer) that one acks=all write is sent to before the fault and one while two nodes are down.
ISR_PROBE = "faults.isr-probe"
# The collector's load: a schedule due every minute and a yearly one whose slots the load plans
# on demand (POST /v1/schedules/{id}/run with a slot of its own), both asking a local fake
# OpenAI-compatible engine (attesta_collector.fake_engine) on 127.0.0.1.
MINUTELY, ON_DEMAND, FAKE_ENGINE = "faults-minutely", "faults-on-demand", "faults-fake"
COLLECTION_SAMPLES = 2
PROMPTS = 3  # one per demo brand, for the first three: 6 samples per slot
QUESTIONS = ("What is the usual adult dose of Velnorex?", "Who makes Velnorex?",
             "What are the side effects of Velnorex?", "How should Velnorex be stored?")
SHARED_PORTS = {19092, 19093, 15432, 16379, 8080, 8081, 8082, 8083, 8084, 8085, 8090,
                # the cluster of `scripts/infra up --cluster` and the one of tests/cluster
                *range(29092, 29098), *range(29192, 29198)}


def log(msg: str) -> None:
    print(f"[faults {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port(avoid: set[int], pair: bool = False, span: int = 1) -> int:
    """A free port on 127.0.0.1 (and the next one too when ``pair``: Kafka's controller; the
    next ``span - 1`` ones: the cluster's three client and three controller ports)."""
    span = max(span, 2 if pair else 1)
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        wanted = list(range(port, port + span))
        if any(p in avoid or p in SHARED_PORTS for p in wanted):
            continue
        ok = True
        for p in wanted[1:]:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            avoid.update(wanted)
            return port
    raise RuntimeError("no free port")


# ------------------------------------------------------------------------------- infrastructure
def read_env(path: Path) -> dict[str, str]:
    """The ``export K=V`` lines of an env file deploy/infra.sh wrote."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"export (\w+)=(.*)$", line)
        if m:
            out[m.group(1)] = shlex.split(m.group(2))[0] if m.group(2) else ""
    return out


class Infra:
    """deploy/infra.sh on a private state folder and private ports. Faults act only on the
    processes recorded in that folder's pid files (identity re-checked before each signal).
    ``cluster``: three Kafka nodes (SASL_SSL, SCRAM, ACLs) instead of the single node.
    ``plaintext`` (cluster only, for benchmarks/cluster_pipeline.py's measurement of TLS + SCRAM):
    the nodes also listen on PLAINTEXT (``ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT``) and the
    services connect there as User:ANONYMOUS; set-up, the oracle and the CLI stay admin on
    SASL_SSL. The fault harness never sets it."""

    def __init__(self, state: Path, ports: set[int], cluster: bool = False,
                 plaintext: bool = False) -> None:
        if plaintext and not cluster:
            raise ValueError("a PLAINTEXT listener is a cluster setting")
        self.state, self.cluster, self.plaintext = state, cluster, plaintext
        self.kafka_port = free_port(ports, pair=True)
        self.pg_port = free_port(ports)
        self.redis_port = free_port(ports)
        # node n: client port base + 2(n-1), its controller one above (deploy/kafka/cluster.sh)
        self.cluster_port = free_port(ports, span=2 * len(NODES)) if cluster else 0
        self.plaintext_port = free_port(ports, span=len(NODES)) if plaintext else 0
        self.cluster_dir = state / "kafka-cluster"
        self.env: dict[str, str] = {}

    def _infra_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("KAFKA_BOOTSTRAP_SERVERS", "ATTESTA_PG_ADMIN_URL", "REDIS_URL")
               and not k.startswith("ATTESTA_KAFKA_")}
        env.update(ATTESTA_STATE_DIR=str(self.state), ATTESTA_KAFKA_PORT=str(self.kafka_port),
                   ATTESTA_PG_PORT=str(self.pg_port), ATTESTA_REDIS_PORT=str(self.redis_port),
                   ATTESTA_PYTHON=sys.executable,
                   ATTESTA_KAFKA_MODE="cluster" if self.cluster else "single")
        if self.cluster:
            env.update(ATTESTA_KAFKA_CLUSTER_PORT=str(self.cluster_port),
                       ATTESTA_KAFKA_CLUSTER_DIR=str(self.cluster_dir))
        if self.plaintext:
            env["ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT"] = str(self.plaintext_port)
        return env

    def up(self, timeout: float = 300) -> None:
        out = subprocess.run(["bash", str(INFRA), "up"], env=self._infra_env(), cwd=ROOT,
                             capture_output=True, text=True, timeout=timeout, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"infra up failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
        self.env.update(read_env(self.state / "env"))
        own = [str(self.pg_port), str(self.redis_port)]
        own += [str(self.cluster_port + 2 * (n - 1)) for n in NODES] if self.cluster \
            else [str(self.kafka_port)]
        for k in ("KAFKA_BOOTSTRAP_SERVERS", "ATTESTA_PG_ADMIN_URL", "REDIS_URL"):
            # the whole point: never the shared infrastructure
            v = self.env[k]
            assert any(p in v for p in own), f"{k}={v} is not private"

    def principal_env(self, service: str) -> dict[str, str]:
        """A service's own Kafka principal on the cluster (nothing on the single node; the
        PLAINTEXT listener's settings, User:ANONYMOUS, with ``plaintext``)."""
        if not self.cluster or service not in SERVICES:  # the CLI: admin; sites, engine: none
            return {}
        return read_env(self.cluster_dir / ("env.plaintext" if self.plaintext
                                            else f"env.{service}"))

    def options(self):
        """The oracle's Kafka client settings: the admin principal on the cluster."""
        # imported here like the oracle's other clients: the script's set-up needs only httpx
        from attesta_platform.kafka import KafkaOptions

        e = self.env
        if not self.cluster:
            return KafkaOptions(e["KAFKA_BOOTSTRAP_SERVERS"])
        return KafkaOptions(e["KAFKA_BOOTSTRAP_SERVERS"],
                            security_protocol=e["ATTESTA_KAFKA_SECURITY_PROTOCOL"],
                            sasl_mechanism=e["ATTESTA_KAFKA_SASL_MECHANISM"],
                            sasl_username=e["ATTESTA_KAFKA_SASL_USERNAME"],
                            sasl_password=e["ATTESTA_KAFKA_SASL_PASSWORD"],
                            ssl_cafile=e["ATTESTA_KAFKA_SSL_CAFILE"], replication_factor=3)

    # -- the cluster's nodes
    def node_pid(self, node: int) -> int | None:
        # the marker's trailing space: node 1 is not node 10 (deploy/kafka/cluster.sh)
        return self._recorded(self.cluster_dir / f"node-{node}" / "kafka.pid",
                              f"-Dattesta.infra=kafka-cluster-{node} ")

    def signal_node(self, node: int, sig: int) -> float:
        """Signal one node and wait until its process is gone; returns the seconds it took."""
        pid = self.node_pid(node)
        assert pid, f"our Kafka node {node} is not running"
        t0 = time.monotonic()
        os.kill(pid, sig)
        _wait_gone(pid, 90)
        return time.monotonic() - t0

    def active_controller(self) -> int:
        """The KRaft quorum's leader as the running nodes last wrote it (the highest epoch wins;
        the admin API's "controller" is a random broker under KRaft: tests/cluster/conftest.py)."""
        known = []
        for node in NODES:
            path = self.cluster_dir / f"node-{node}" / "data" / "__cluster_metadata-0" / \
                "quorum-state"
            with contextlib.suppress(OSError, ValueError):
                state = json.loads(path.read_text())
                if self.node_pid(node) and state.get("leaderId", -1) >= 0:
                    known.append((state["leaderEpoch"], state["leaderId"]))
        assert known, "no running node knows a quorum leader"
        return max(known)[1]

    def busiest_leader(self) -> tuple[int, list[str]]:
        """The node leading most of the three partitions written to most in the last 2 s (all
        time when nothing was written), and those partitions."""
        return asyncio.run(_busiest_leader(self.options()))

    def isr_probe(self, create: bool = False) -> tuple[bool | None, str]:
        """One acks=all write to ISR_PROBE as the admin: (acknowledged?, what happened and the
        partition's leader and ISR); (None, why) when the probe itself could not run.
        ``create``: first make the topic, while the cluster is whole."""
        try:
            return asyncio.run(_isr_probe(self.options(), create))
        except Exception as exc:  # noqa: BLE001 - a witness that failed is no verdict
            return None, f"probe failed: {exc!r}"

    def down(self) -> None:
        subprocess.run(["bash", str(INFRA), "down"], env=self._infra_env(), cwd=ROOT,
                       capture_output=True, text=True, timeout=180, check=False)

    def _recorded(self, pidfile: Path, marker: str) -> int | None:
        try:
            pid, start = pidfile.read_text().split()[:2]
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            return None
        if stat.rsplit(") ", 1)[1].split()[19] != start or marker not in cmd:
            return None
        return int(pid)

    def kafka_pid(self) -> int | None:
        """The single node's broker process (None when it is not running)."""
        return self._recorded(self.state / "kafka" / "kafka.pid", "-Dattesta.infra=kafka")

    def broker_pids(self) -> list[int]:
        """Every running Kafka broker process this infrastructure started (one or three)."""
        pids = [self.node_pid(n) for n in NODES] if self.cluster else [self.kafka_pid()]
        return [p for p in pids if p]

    def kill_kafka(self) -> None:
        pid = self.kafka_pid()
        assert pid, "our Kafka broker is not running"
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 30)

    def stop_redis(self) -> None:
        pid = self._recorded(self.state / "redis" / "redis.pid", f"127.0.0.1:{self.redis_port}")
        assert pid, "our Redis is not running"
        os.kill(pid, signal.SIGTERM)
        _wait_gone(pid, 20)

    def stop_pg(self) -> None:
        data = self.state / "postgres" / "data"
        subprocess.run(["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl",
                        "stop", "-D", str(data), "-m", "fast", "-w", "-t", "60", "-s"],
                       check=True, timeout=90)


async def _busiest_leader(options) -> tuple[int, list[str]]:
    from aiokafka import TopicPartition

    admin = options.admin()
    reader = options.consumer("faults-oracle", None)
    await admin.start()
    await reader.start()
    try:
        names = [t for t in await admin.list_topics() if not t.startswith("__")]
        leaders = {(d["topic"], p["partition"]): p["leader"]
                   for d in await admin.describe_topics(names) for p in d["partitions"]}
        parts = [TopicPartition(t, p) for t, p in leaders]
        before = await reader.end_offsets(parts)
        await asyncio.sleep(2)
        after = await reader.end_offsets(parts)
    finally:
        await reader.stop()
        await admin.close()
    recent = {tp: after[tp] - before[tp] for tp in parts}
    weight = recent if any(recent.values()) else after
    top = sorted(parts, key=lambda tp: weight[tp], reverse=True)[:3]
    votes = _count(leaders[(tp.topic, tp.partition)] for tp in top)
    node = max(votes, key=lambda n: (votes[n], n == leaders[(top[0].topic, top[0].partition)]))
    return node, [f"{tp.topic}/{tp.partition}" for tp in top]


async def _isr_probe(options, create: bool, timeout_s: float = 4.0) -> tuple[bool, str]:
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import NewTopic

    admin = options.admin()
    await admin.start()
    try:
        if create:
            resp = await admin.create_topics([NewTopic(ISR_PROBE, 1, len(NODES), topic_configs={
                "min.insync.replicas": "2"})])
            codes = [code for _t, code, *_r in resp.topic_errors if code not in (0, 36)]
            if codes:  # 36: made by an earlier isr fault
                raise RuntimeError(f"cannot create {ISR_PROBE}: error codes {codes}")
        # as the broker that answers sees it (with two nodes down: the one left)
        part = next((p for d in await admin.describe_topics([ISR_PROBE]) for p in d["partitions"]),
                    {})
    finally:
        await admin.close()
    # acks=all like the services' producer, but not idempotent and with a short request timeout,
    # so a refused write comes back as an error within seconds instead of being retried
    producer = AIOKafkaProducer(**options.connection(), client_id="faults-isr-probe", acks="all",
                                request_timeout_ms=int(timeout_s * 1000))
    state = f"(leader {part.get('leader')}, ISR {sorted(part.get('isr', []))})"
    try:
        await producer.start()  # a failure to connect is no verdict: it goes up (isr_probe)
        try:
            await asyncio.wait_for(producer.send_and_wait(ISR_PROBE, b"probe"), timeout_s + 3)
            return True, f"acknowledged {state}"
        except Exception as exc:  # noqa: BLE001 - the refusal is the result
            return False, f"not acknowledged: {type(exc).__name__} {state}"
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.stop(), timeout_s + 3)


def _wait_gone(pid: int, secs: float) -> None:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.1)


# ------------------------------------------------------------------------------- services
def base(key: str) -> str:
    """The service of a process key: ``classifier`` and ``classifier#2`` run the classifier."""
    return key.split("#")[0]


class Services:
    """``attesta run <service>`` processes on free ports; each pid is the Popen we started.
    With ``instances`` > 1 each consumer service of SCALED runs that many processes, keyed
    ``classifier``, ``classifier#2``, ...: one consumer group, a health port each."""

    def __init__(self, infra: Infra, state: Path, ports: set[int], instances: int = 1) -> None:
        self.state, self.logs = state, state / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.infra = infra
        self.keys = [name if i == 1 else f"{name}#{i}" for name in SERVICES
                     for i in range(1, (instances if name in SCALED else 1) + 1)]
        self.port = {name: free_port(ports) for name in (*self.keys, "sites", "engine")}
        self.procs: dict[str, subprocess.Popen] = {}
        self.token = base64.urlsafe_b64encode(os.urandom(36)).decode()
        self.key_file = state / "evidence" / "log-signing-key.pem"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ATTESTA_")}
        self.env.update(infra.env)
        self.env.update(
            ATTESTA_LOG_JSON="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
            ATTESTA_INTERNAL_TOKEN=self.token,
            # the operator allow-list: the brand sites and the fake engine, no other local port
            ATTESTA_FETCH_ALLOW=f"127.0.0.1:{self.port['sites']},127.0.0.1:{self.port['engine']}",
            ATTESTA_JUDGE="offline", ATTESTA_EVIDENCE_SIGNING_KEY_FILE=str(self.key_file),
            ATTESTA_COLLECTOR_SECRETS_KEK_FILE=str(state / "collector" / "secrets-kek"),
            ATTESTA_RETRIEVAL_STATE_DIR=str(state / "retrieval"),
            # defaults name the shared PostgreSQL port: every URL is spelled out here
            ATTESTA_EVIDENCE_DATABASE_URL=db_url(infra.env["ATTESTA_PG_ADMIN_URL"],
                                                 "attesta_evidence",
                                                 "attesta_evidence:attesta-evidence-dev-only"),
            ATTESTA_COLLECTOR_DATABASE_URL=db_url(infra.env["ATTESTA_PG_ADMIN_URL"],
                                                  "attesta_collector",
                                                  "attesta_collector:attesta-collector-dev-only"))
        self.engine_url = f"http://127.0.0.1:{self.port['engine']}/v1"
        self.gateway = f"http://127.0.0.1:{self.port['gateway']}"

    def siblings(self, key: str) -> list[str]:
        """The other processes of the same service."""
        return [k for k in self.keys if base(k) == base(key) and k != key]

    def state_dir(self, key: str) -> Path:
        """Retrieval's index folder: one per process (an embedded Chroma folder has one writer)."""
        return self.state / ("retrieval" if "#" not in key else f"retrieval-{key.split('#')[1]}")

    def service_env(self, name: str) -> dict[str, str]:
        # a service's own Kafka principal on the cluster (the CLI keeps the admin's)
        env = {**self.env, **self.infra.principal_env(base(name)), **self._extra(name)}
        shared = [f"{k}={v}" for k, v in env.items()
                  if any(f":{port}" in v for port in SHARED_PORTS)]
        if shared:  # never touch the shared infrastructure or the usual service ports
            raise RuntimeError(f"{name}: environment names a shared port: {shared}")
        return env

    def _extra(self, key: str) -> dict[str, str]:
        # other services call the first instance's HTTP API; each instance has its own port
        p, own = self.port, str(self.port.get(key, 0))
        extra = {
            "classifier": {"ATTESTA_CLASSIFIER_HTTP_PORT": own},
            # evidence is ready once it owns a partition of every intake topic, so its
            # instances x consumers per topic may not exceed the partitions (3): one each
            "evidence": {"ATTESTA_EVIDENCE_HTTP_PORT": own,
                         **({"ATTESTA_EVIDENCE_INTAKE_CONSUMERS": "1"}
                            if self.siblings(key) else {})},
            "retrieval": {"ATTESTA_HEALTH_PORT": own,
                          "ATTESTA_RETRIEVAL_STATE_DIR": str(self.state_dir(key))},
            "answer": {"ATTESTA_HEALTH_PORT": own},
            "collector": {"ATTESTA_COLLECTOR_HTTP_PORT": own,
                          "ATTESTA_CLASSIFIER_URL": f"http://127.0.0.1:{p['classifier']}",
                          "ATTESTA_COLLECTOR_PLAN_INTERVAL_S": "2"},
            "gateway": {
                "ATTESTA_HTTP_PORT": str(p["gateway"]),
                "ATTESTA_CLASSIFIER_URL": f"http://127.0.0.1:{p['classifier']}",
                "ATTESTA_EVIDENCE_URL": f"http://127.0.0.1:{p['evidence']}",
                "ATTESTA_COLLECTOR_URL": f"http://127.0.0.1:{p['collector']}",
                # a stable instance id: its reply consumer group survives a restart
                "ATTESTA_INSTANCE_ID": "faults-gateway",
                "ATTESTA_CHAT_TIMEOUT_S": "10",
                "ATTESTA_RATE_LIMIT_PER_KEY": "1000000",
                "ATTESTA_RATE_LIMIT_LOCAL_PER_KEY": "1000000",
                "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "1000000",
                "ATTESTA_RATE_LIMIT_CHAT_PER_CLIENT": "1000000",
                "ATTESTA_RATE_LIMIT_AUTH_FAILURES_PER_CLIENT": "1000000",
                "ATTESTA_REDIS_TIMEOUT_S": "2"},
        }.get(base(key), {})
        return extra

    def ready_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port[name]}/readyz"

    def cli(self, *args: str, timeout: float = 600) -> str:
        out = subprocess.run([sys.executable, "-m", "attesta_platform.cli", *args],
                             env=self.service_env("cli"),
                             cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                             check=False)
        if out.returncode != 0:
            raise RuntimeError(f"attesta {' '.join(args)} failed:\n{out.stdout[-2000:]}\n"
                               f"{out.stderr[-3000:]}")
        return out.stdout

    def seed_kb(self) -> None:
        """``attesta retrieval seed-kb`` (with the cluster's admin principal on the cluster: the
        command builds its clients from the settings, TLS and SCRAM included)."""
        self.cli("retrieval", "seed-kb", "--quiet")

    def start(self, name: str) -> None:
        with open(self.logs / f"{name}.log", "ab") as out:
            if name == "sites":
                cmd = [sys.executable, "-m", "attesta_kb_tools.sites", "--port", str(self.port["sites"])]
            elif name == "engine":  # the fake engine the collector asks; 200 ms per answer so a
                # kill -9 of the collector lands mid-call
                cmd = [sys.executable, "-m", "attesta_collector.fake_engine", "--port",
                       str(self.port["engine"]), "--latency-ms", "200",
                       "--brands", str(self.state / "engine-brands.json")]
            else:
                cmd = [sys.executable, "-m", "attesta_platform.cli", "run", base(name)]
            self.procs[name] = subprocess.Popen(cmd, env=self.service_env(name), cwd=ROOT,
                                                stdout=out, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def wait_ready(self, name: str, timeout: float) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            proc = self.procs[name]
            if proc.poll() is not None:  # exited (e.g. Kafka down at start): start it again
                time.sleep(1)
                self.start(name)
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.ready_url(name), timeout=2).status_code == 200:
                    return time.monotonic() - t0
            time.sleep(0.3)
        raise TimeoutError(f"{name} not ready in {timeout:g} s; log tail:\n"
                           f"{(self.logs / f'{name}.log').read_text(errors='replace')[-2500:]}")

    def all_ready(self) -> bool:
        for name in self.keys:
            try:
                if httpx.get(self.ready_url(name), timeout=2).status_code != 200:
                    return False
            except httpx.HTTPError:
                return False
        return True

    def kill9(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)  # our own child: its pid came from Popen
            proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def setup_collection(svc: Services, api_key: str, brands: list[dict]) -> int:
    """The fake engine (told about the demo brands, so its answers name and link them), a prompt
    per brand, the engine and both schedules, all through the gateway; returns the prompts."""
    spec = [{"name": b["name"], "domain": b["domains"][0], "product": "products",
             "fact": "a tracked brand"} for b in brands if b["domains"]]
    (svc.state / "engine-brands.json").write_text(json.dumps(spec))
    svc.start("engine")
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", svc.port["engine"]), timeout=1):
            break
        if time.monotonic() > deadline or svc.procs["engine"].poll() is not None:
            raise RuntimeError("the fake engine did not start")
        time.sleep(0.2)
    prompts = [{"prompt_set": "faults", "text": f"What does {b['name']} make?",
                "brand_ids": [b["brand_id"]]} for b in brands[:PROMPTS]]
    with httpx.Client(base_url=svc.gateway, timeout=30,
                      headers={"authorization": f"Bearer {api_key}"}) as c:
        calls = [
            ("/v1/prompts/import", {"content": "".join(json.dumps(p) + "\n" for p in prompts),
                                    "headers": {"content-type": "application/x-ndjson"}}),
            ("/v1/engines", {"json": {
                "engine_id": FAKE_ENGINE, "name": "faults-fake-engine", "base_url": svc.engine_url,
                "model": "fake-faults", "concurrency": 4, "timeout_s": 10,
                "retry": {"attempts": 3, "initial_backoff_s": 0.2, "max_backoff_s": 2}}}),
            ("/v1/schedules", {"json": {
                "schedule_id": MINUTELY, "prompt_sets": ["faults"], "engine_ids": [FAKE_ENGINE],
                "cron": "* * * * *", "samples": COLLECTION_SAMPLES, "missed_slots": "collect",
                "max_catch_up_slots": 1000}}),
            # inactive: the planner never plans it; the load plans its slots on demand
            ("/v1/schedules", {"json": {
                "schedule_id": ON_DEMAND, "prompt_sets": ["faults"], "engine_ids": [FAKE_ENGINE],
                "cron": "0 0 1 1 *", "samples": COLLECTION_SAMPLES, "active": False}}),
        ]
        for path, kw in calls:
            r = c.post(path, **kw)
            if r.status_code not in (200, 201):
                raise RuntimeError(f"POST {path} -> {r.status_code}: {r.text[:500]}")
        if r.status_code == 200 and r.json().get("accepted") != len(prompts):
            raise RuntimeError(f"prompt import: {r.text[:500]}")
    return len(prompts)


def retire_schedule(svc: Services, api_key: str, schedule_id: str) -> float:
    """Stop a schedule's planning (the load is over); returns the wall time it took effect."""
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=svc.gateway, timeout=20,
                      headers={"authorization": f"Bearer {api_key}"}) as c:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                r = c.post(f"/v1/schedules/{schedule_id}/retire")
                if r.status_code == 200:
                    return time.time()
            if time.monotonic() > deadline:
                raise RuntimeError(f"could not retire schedule {schedule_id}")
            time.sleep(1)


# ------------------------------------------------------------------------------- load
@dataclass
class Op:
    kind: str  # chat | run | refresh | collect (a slot planned on demand) | collection (a sample)
    t_start: float
    t_end: float = 0.0
    status: int | None = None  # final HTTP status (None: transport error)
    outcome: str = ""  # acked | timeout | failed | gave_up
    reason: str = ""
    attempts: int = 0
    key: str = ""  # idempotency key / chat nonce
    run_id: str | None = None
    sha: str | None = None
    request_id: str | None = None
    acked_run_ids: set[str] = field(default_factory=set)


class Load:
    def __init__(self, gateway: str, api_key: str, brands: list[dict], rng: random.Random,
                 rates: dict[str, float], workers: dict[str, int] | None = None) -> None:
        self.gateway, self.api_key, self.brands = gateway, api_key, brands
        self.rng, self.rates = rng, rates
        # threads per kind, each at its kind's rate (default one: the fault harness's load);
        # benchmarks/cluster_pipeline.py offers more runs than one client thread can send
        self.workers = workers or {}
        self.ops: list[Op] = []
        self.heads: list[dict] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.slots = itertools.count()
        self.load_average: list[float] = []  # the machine's, sampled while the load runs

    def _client(self, timeout: float = 20) -> httpx.Client:
        return httpx.Client(base_url=self.gateway, timeout=timeout,
                            headers={"authorization": f"Bearer {self.api_key}"})

    def _loop(self, fn, period: float) -> None:
        rng = random.Random(self.rng.random())
        with self._client() as c:
            while not self.stop.is_set():
                t0 = time.monotonic()
                try:
                    fn(c, rng)
                except Exception as exc:  # noqa: BLE001 - a load thread must keep going
                    log(f"load error in {fn.__name__}: {exc!r}")
                self.stop.wait(max(0.0, period * rng.uniform(0.5, 1.5) - (time.monotonic() - t0)))

    def start(self) -> None:
        for fn, rate in ((self.chat, self.rates["chat"]), (self.run, self.rates["run"]),
                         (self.refresh, self.rates["refresh"]), (self.collect, self.rates["collect"]),
                         (self.save_head, 1 / 3), (self.sample_load_average, 1 / 10)):
            for _ in range(self.workers.get(fn.__name__, 1) if rate > 0 else 0):
                t = threading.Thread(target=self._loop, args=(fn, 1 / rate), daemon=True)
                t.start()
                self.threads.append(t)

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=90)

    def _record(self, op: Op) -> Op:
        with self.lock:
            self.ops.append(op)
        return op

    def chat(self, c: httpx.Client, rng: random.Random) -> None:
        # No retry: a chat is a question a person waits for; the answer or a reason comes back.
        op = self._record(Op("chat", time.monotonic(), key=uuid.uuid4().hex[:12], attempts=1))
        try:
            # With the workspace's key: an anonymous chat is a run of no customer workspace
            # (the internal assistant-public one), so it would have no brand to classify.
            r = httpx.post(f"{self.gateway}/v1/chat", timeout=30,
                           headers={"authorization": f"Bearer {self.api_key}"},
                           json={"question": f"{rng.choice(QUESTIONS)} (ref {op.key})"})
        except httpx.HTTPError as exc:
            op.t_end, op.outcome, op.reason = time.monotonic(), "failed", f"transport: {exc!r}"
            return
        op.t_end, op.status = time.monotonic(), r.status_code
        if r.status_code == 200:
            body = r.json()
            op.outcome, op.request_id = "acked", body["request_id"]
            op.run_id, op.sha = body.get("run_id"), body.get("answer_sha256")
            if op.run_id:
                op.acked_run_ids.add(op.run_id)
        else:
            err = _error(r)
            op.outcome = "timeout" if r.status_code == 504 else "failed"
            op.reason = f"{r.status_code} {err}"
            m = re.search(r"request ([0-9a-f-]{8,})", err)
            op.request_id = m.group(1) if m else None

    def _with_retries(self, c: httpx.Client, op: Op, method: str, path: str, body=None,
                      budget_s: float = 90) -> httpx.Response | None:
        """The client retries with the SAME idempotency key until a 2xx or a 4xx it must not
        retry, within a time budget; ``op`` keeps every run id a 2xx ever named."""
        delay = 0.5
        last = None
        while time.monotonic() - op.t_start < budget_s:
            op.attempts += 1
            try:
                r = c.request(method, path, json=body, headers={"idempotency-key": op.key})
                op.status = r.status_code
                if 200 <= r.status_code < 300:
                    return r
                last = f"{r.status_code} {_error(r)}"
                if r.status_code not in (408, 409, 425, 429) and r.status_code < 500:
                    op.reason = last
                    return r
            except httpx.HTTPError as exc:
                op.status, last = None, f"transport: {exc!r}"
            op.reason = last or ""
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 5)
        return None

    def run(self, c: httpx.Client, rng: random.Random) -> None:
        brand = rng.choice(self.brands)
        nonce = uuid.uuid4().hex
        link = rng.random() < 0.5
        answer = (f"{brand['name']} is described at https://{brand['domains'][0]}/about "
                  if link and brand["domains"] else f"{brand['name']} is a company. ")
        body = {"engine": "faults-engine", "model": "faults-model",
                "prompt": f"Tell me about {brand['name']}", "answer": answer + f"[{nonce}]",
                "brand_ids": [brand["brand_id"]]}
        op = self._record(Op("run", time.monotonic(), key=str(uuid.uuid4())))
        op.sha = hashlib.sha256(body["answer"].encode()).hexdigest()
        r = self._with_retries(c, op, "POST", "/v1/runs", body)
        op.t_end = time.monotonic()
        if r is not None and r.status_code == 202:
            op.outcome, op.run_id = "acked", r.json()["run_id"]
            op.acked_run_ids.add(op.run_id)
            assert r.json()["answer_sha256"] == op.sha
        else:
            op.outcome = "gave_up" if r is None else "failed"

    def refresh(self, c: httpx.Client, rng: random.Random) -> None:
        brand = rng.choice(self.brands)
        op = self._record(Op("refresh", time.monotonic(), key=str(uuid.uuid4())))
        r = self._with_retries(c, op, "POST", f"/v1/brands/{brand['brand_id']}/ground-truth/refresh")
        op.t_end = time.monotonic()
        op.outcome = "acked" if r is not None and r.status_code == 200 else \
            ("gave_up" if r is None else "failed")

    def collect(self, c: httpx.Client, rng: random.Random) -> None:
        """Plan one slot of the on-demand schedule now: a slot no other request names (minutes
        from 2020-01-01), so each acknowledged request is its own set of samples; retried with
        the same slot, which plans nothing twice."""
        slot = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(minutes=next(self.slots))
        op = self._record(Op("collect", time.monotonic(), key=slot.isoformat(),
                             run_id=f"{ON_DEMAND}@{slot.isoformat()}"))
        r = self._with_retries(c, op, "POST", f"/v1/schedules/{ON_DEMAND}/run",
                               {"slot": op.key})
        op.t_end = time.monotonic()
        op.outcome = "acked" if r is not None and r.status_code == 202 else \
            ("gave_up" if r is None else "failed")

    def sample_load_average(self, c: httpx.Client, rng: random.Random) -> None:
        self.load_average.append(round(os.getloadavg()[0], 1))

    def save_head(self, c: httpx.Client, rng: random.Random) -> None:
        with contextlib.suppress(httpx.HTTPError):
            r = c.get("/v1/public/log/tree-head", timeout=5)
            if r.status_code == 200 and (not self.heads or self.heads[-1] != r.json()):
                self.heads.append(r.json())


def _error(r: httpx.Response) -> str:
    try:
        e = r.json().get("error") or {}
        return f"{e.get('code')}: {e.get('reason') or e.get('message') or ''}"[:300]
    except (ValueError, AttributeError):
        return r.text[:200]


# ------------------------------------------------------------------------------- faults
@dataclass
class Fault:
    kind: str
    target: str
    t_start: float
    t_restart: float = 0.0
    t_ready: float | None = None
    down_s: float = 0.0
    note: str = ""
    refused: bool | None = None  # isr: was the write sent with two nodes down refused?


class Injector:
    def __init__(self, infra: Infra, svc: Services, rng: random.Random, kinds: list[str]) -> None:
        self.infra, self.svc, self.rng, self.kinds = infra, svc, rng, kinds
        self.faults: list[Fault] = []
        self.poison: list[dict] = []
        self.deck: list[tuple[str, str]] = []

    def _next(self) -> tuple[str, str]:
        # Seeded shuffled decks of (kind, target): the first holds one fault of each kind (a
        # random service for kill), so even a short run covers every kind; later decks hold
        # every service's kill too, so every (kind, target) comes up before any repeats.
        # (a cluster node is picked when its fault comes up: the leader and controller move)
        target = {"pg": "postgres", "redis": "redis", "kafka": "kafka", "poison": "topics",
                  "leader": "node", "controller": "node", "broker": "node", "rolling": "nodes",
                  "isr": "nodes"}
        keys = self.svc.keys
        if not self.deck:
            if not self.faults:
                self.deck = [(k, self.rng.choice(keys) if k == "kill" else target[k])
                             for k in self.kinds]
            else:
                for kind in self.kinds:
                    self.deck += [("kill", s) for s in keys] if kind == "kill" \
                        else [(kind, target[kind])]
            self.rng.shuffle(self.deck)
        return self.deck.pop()

    def inject(self) -> Fault:
        kind, target = self._next()
        f = Fault(kind, target, time.monotonic())
        log(f"fault {len(self.faults) + 1}: {kind} {target}")
        if kind == "kill":
            self.svc.kill9(target)
            # with a second instance in the group, long enough for the group to hand the
            # killed one's partitions over and the other to go on consuming them
            f.down_s = self.rng.uniform(5, 15) if self.svc.siblings(target) \
                else self.rng.uniform(0.5, 3)
            time.sleep(f.down_s)
            f.t_restart = time.monotonic()
            self.svc.start(target)
        elif kind == "pg":
            self.infra.stop_pg()
            f.down_s = self.rng.uniform(5, 20)
            time.sleep(f.down_s)
            f.t_restart = time.monotonic()
            self.infra.up()
        elif kind == "redis":
            self.infra.stop_redis()
            f.down_s = self.rng.uniform(3, 10)
            time.sleep(f.down_s)
            f.t_restart = time.monotonic()
            self.infra.up()
        elif kind == "kafka":
            self.infra.kill_kafka()
            time.sleep(self.rng.uniform(1, 5))
            f.t_restart = time.monotonic()
            self.infra.up()
        elif kind == "poison":
            self.poison += asyncio.run(publish_poison(self.infra.options(), len(self.poison)))
            f.t_restart = time.monotonic()
        elif kind in ("leader", "controller", "broker"):
            if kind == "leader":
                node, parts = self.infra.busiest_leader()
                f.note += f"leads {', '.join(parts)}. "
            else:
                node = self.infra.active_controller() if kind == "controller" \
                    else self.rng.choice(NODES)
            f.target = f"node {node}"
            took = self.infra.signal_node(node, signal.SIGTERM if kind == "broker"
                                          else signal.SIGKILL)
            f.down_s = self.rng.uniform(5, 20) if kind == "broker" else self.rng.uniform(1, 5)
            if kind == "broker":
                f.note += f"stopped in {took:.1f} s. "
            time.sleep(f.down_s)
            f.t_restart = time.monotonic()
            self.infra.up()  # starts the node, returns when every replica is in sync again
        elif kind == "rolling":
            for node in NODES:  # one at a time, each back in sync before the next stops
                took = self.infra.signal_node(node, signal.SIGTERM)
                f.t_restart = time.monotonic()
                self.infra.up()
                f.note += f"node {node} stopped in {took:.1f} s, in sync " \
                          f"{time.monotonic() - f.t_restart:.1f} s after its start. "
        elif kind == "isr":
            # Two of three nodes stopped with SIGTERM, one after the other: the second's
            # controlled shutdown is the quorum's last decision (two voters are still there), so
            # its leaderships move to the third node with an ISR of that node alone, below
            # min.insync.replicas=2: every acks=all write is refused (NOT_ENOUGH_REPLICAS). The
            # KRaft quorum then has one voter of three and decides nothing (no ISR change, no
            # group rebalance that needs a commit) until a second node is back; producers wait
            # and retry, relays keep their outbox rows.
            before_ok, before = self.infra.isr_probe(create=True)
            stopped = sorted(self.rng.sample(NODES, 2))
            f.target = f"nodes {stopped[0]}+{stopped[1]}"
            for node in stopped:
                took = self.infra.signal_node(node, signal.SIGTERM)
                f.note += f"node {node} stopped in {took:.1f} s. "
            t_both = time.monotonic()
            acked, during = self.infra.isr_probe()
            # a witness that could not write with the cluster whole proves nothing either way
            f.refused = not acked if before_ok and acked is not None else None
            f.note += f"a probe write (acks=all) before: {before}; with two nodes down: {during}. "
            f.down_s = self.rng.uniform(5, 15)
            time.sleep(max(0.0, f.down_s - (time.monotonic() - t_both)))
            f.t_restart = time.monotonic()
            self.infra.up()  # starts both; returns when every replica is in sync again
            f.note += f"quorum and every replica back {time.monotonic() - f.t_restart:.1f} s " \
                      "after the starts began. "
        # The next fault waits for the system to be whole again (bounded): faults do not overlap.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            for name in self.svc.keys:  # one that gave up (exit 3: Kafka unreachable) restarts
                if self.svc.procs[name].poll() is not None:
                    f.note += f"{name} exited {self.svc.procs[name].returncode}; restarted. "
                    self.svc.start(name)
            if self.svc.all_ready():
                f.t_ready = time.monotonic()
                break
            time.sleep(0.5)
        self.faults.append(f)
        return f


async def publish_poison(options, n: int) -> list[dict]:
    out = []
    producer = options.producer("faults-poison")  # acks=all, idempotent
    await producer.start()
    try:
        for topic in INPUT_TOPICS:
            marker = f"faults-poison-{n}-{uuid.uuid4().hex}"
            value = f"{{not json: {marker}".encode()
            md = await producer.send_and_wait(topic, value, key=marker.encode())
            out.append({"topic": topic, "marker": marker, "partition": md.partition,
                        "offset": md.offset})
    finally:
        await producer.stop()
    return out


# ------------------------------------------------------------------------------- oracle
async def read_topic(options, topic: str) -> list[tuple[int, int, bytes | None, bytes]]:
    from aiokafka import TopicPartition

    # read_committed (the factory's): the producers are idempotent, not transactional, so
    # everything acknowledged is visible
    c = options.consumer("faults-oracle", None)
    await c.start()
    try:
        parts = [TopicPartition(topic, p) for p in await _partitions(options, topic)]
        if not parts:
            return []
        c.assign(parts)
        ends = await c.end_offsets(parts)
        # explicit seeks: seek_to_beginning is lazy and position() could race it to the end
        for tp, first in (await c.beginning_offsets(parts)).items():
            c.seek(tp, first)
        out = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            positions = [await c.position(tp) for tp in parts]
            if all(pos >= ends[tp] for pos, tp in zip(positions, parts, strict=True)):
                break
            batch = await c.getmany(timeout_ms=1000, max_records=1000)
            for tp, msgs in batch.items():
                out += [(tp.partition, m.offset, m.key, m.value) for m in msgs]
        return out
    finally:
        await c.stop()


async def _partitions(options, topic: str) -> list[int]:
    admin = options.admin()
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return [p["partition"] for d in described if d["topic"] == topic and not d.get("error_code")
            for p in d.get("partitions", [])]


async def consumer_lag(options) -> dict[str, int]:
    admin = options.admin()
    await admin.start()
    c = options.consumer("faults-oracle", None)
    await c.start()
    try:
        lag = {}
        for group, _proto in await admin.list_consumer_groups():
            offsets = await admin.list_consumer_group_offsets(group)
            if not offsets:
                continue
            ends = await c.end_offsets(list(offsets))
            lag[group] = sum(max(0, ends[tp] - om.offset) for tp, om in offsets.items()
                             if om.offset >= 0)
        return lag
    finally:
        await c.stop()
        await admin.close()


def db_url(admin_url: str, db: str, user: str | None = None) -> str:
    parts = urlsplit(admin_url)
    if user:
        parts = parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port}")
    return urlunsplit(parts._replace(path=f"/{db}"))


def check_collections(co, options, load: Load, collection: dict, lost: set[str],
                      doubled: set[str], problems: list[str]) -> dict:
    """Every sample the schedules planned is collected exactly once: each acknowledged
    on-demand slot and every minute of the minutely schedule planned with all its samples, each
    sample ``collected`` with its collection id as run id, and that run published on
    runs.recorded.v1 under one event id and one answer (redeliveries of that event are fine).
    Each collected sample joins the acknowledged runs, so the run checks (stored, classified
    once, evidence included) cover it too."""
    per_slot = collection["prompts"] * COLLECTION_SAMPLES
    to_mono = collection["wall_minus_monotonic"]
    rows = co.execute("SELECT collection_id, schedule_id, slot, status, run_id, answer_sha256, "
                      "last_error, claims, created_at, finished_at FROM collections "
                      "WHERE workspace_id = 'demo'").fetchall()
    by_slot: dict[tuple[str, datetime], int] = {}
    for r in rows:
        by_slot[(r[1], r[2])] = by_slot.get((r[1], r[2]), 0) + 1
    acked_slots = 0
    for op in load.ops:
        if op.kind == "collect" and op.outcome == "acked":
            acked_slots += 1
            got = by_slot.get((ON_DEMAND, datetime.fromisoformat(op.key)), 0)
            if got != per_slot:
                lost.add(op.run_id)
                problems.append(f"on-demand slot {op.key} acknowledged: {got} samples planned, "
                                f"{per_slot} expected")
    planned = [r[0] for r in co.execute(
        "SELECT slot FROM planned_slots WHERE workspace_id = 'demo' AND schedule_id = %s "
        "ORDER BY slot", (MINUTELY,))]
    gaps = [(a, b) for a, b in zip(planned, planned[1:], strict=False)
            if b - a != timedelta(minutes=1)]
    # the planner looks every 2 s: the minute that began just before the retirement may be
    # unplanned, the one before it may not
    retired = datetime.fromtimestamp(collection["retired_wall"], UTC)
    must_reach = retired.replace(second=0, microsecond=0) - timedelta(minutes=1)
    if not planned or gaps or planned[-1] < must_reach:
        lost.add(f"{MINUTELY}@slots")
        problems.append(f"minutely schedule: slots {planned[:1]}..{planned[-1:]}, gaps {gaps[:3]}, "
                        f"expected every minute up to {must_reach.isoformat()}")
    for slot in planned:
        if by_slot.get((MINUTELY, slot), 0) != per_slot:
            lost.add(f"{MINUTELY}@{slot.isoformat()}")
            problems.append(f"minutely slot {slot.isoformat()}: "
                            f"{by_slot.get((MINUTELY, slot), 0)} samples, {per_slot} expected")
    published: dict[str, list[tuple[str, str]]] = {}
    for _p, _o, _k, value in asyncio.run(read_topic(options, RUNS_RECORDED)):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            env = json.loads(value)
            if str(env["payload"]["run_id"]).startswith("col-"):
                published.setdefault(env["payload"]["run_id"], []).append(
                    (env["event_id"], env["payload"]["answer_sha256"]))
    status: dict[str, int] = {}
    for cid, _sched, _slot, st, run_id, sha, err, _claims, created, finished in rows:
        status[st] = status.get(st, 0) + 1
        op = Op("collection", created.timestamp() - to_mono,
                t_end=finished.timestamp() - to_mono if finished else 0.0,
                outcome="acked", run_id=cid)
        load.ops.append(op)
        if st != "collected" or run_id != cid:
            lost.add(cid)
            problems.append(f"sample {cid}: {st}, run {run_id} ({err})")
            continue
        op.acked_run_ids.add(cid)
        events = published.get(cid, [])
        if not events:
            lost.add(cid)
            problems.append(f"sample {cid}: collected, but its run is not on {RUNS_RECORDED}")
        elif len({e for e, _ in events}) > 1 or len({h for _, h in events}) > 1:
            doubled.add(cid)
            problems.append(f"sample {cid}: published as {len({e for e, _ in events})} events "
                            f"with {len({h for _, h in events})} answers")
        elif events[0][1] != sha:
            problems.append(f"sample {cid}: published answer {events[0][1]}, stored {sha}")
    return {"planned": len(rows), "status": status, "on_demand_slots_acked": acked_slots,
            "minutely_slots": len(planned), "samples_per_slot": per_slot,
            "claimed_more_than_once": sum(r[7] > 1 for r in rows),
            "published_more_than_once": sum(len(v) > 1 for v in published.values())}


def oracle(svc: Services, infra: Infra, load: Load, inj: Injector, t_load_end: float,
           drain_timeout: float, collection: dict) -> dict:
    import psycopg

    options = infra.options()
    res: dict = {"problems": []}
    problems = res["problems"]
    acked_runs = {rid: op for op in load.ops for rid in op.acked_run_ids}
    last_fault = max((f.t_restart for f in inj.faults), default=t_load_end)

    # Drain: every consumer group at the end of its topics, and every acked run decided.
    cl = psycopg.connect(db_url(infra.env["ATTESTA_PG_ADMIN_URL"], "attesta_classifier"),
                         autocommit=True)
    co = psycopg.connect(db_url(infra.env["ATTESTA_PG_ADMIN_URL"], "attesta_collector"),
                         autocommit=True)
    deadline = time.monotonic() + drain_timeout
    lag: dict[str, int] = {}
    pending = -1
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            lag = asyncio.run(consumer_lag(options))
            # pending with a parked judgment is a decision to wait for the judge (the offline
            # judge abstains on weak evidence), not lost work; collected samples are runs too
            pending = cl.execute(
                "SELECT count(*) FROM run_brand_status s WHERE status = 'pending' AND "
                "(run_id = ANY(%s) OR run_id LIKE 'col-%%') AND NOT EXISTS (SELECT 1 FROM "
                "pending_judgments j WHERE j.run_id = s.run_id AND j.brand_id = s.brand_id)",
                (list(acked_runs),)).fetchone()[0]
            unpublished = sum(db.execute("SELECT count(*) FROM messaging_outbox WHERE "
                                         "published_at IS NULL").fetchone()[0] for db in (cl, co))
            # a sample leased by a killed collector waits for its lease to expire
            open_samples = co.execute("SELECT count(*) FROM collections WHERE status IN "
                                      "('pending', 'awaiting_reply')").fetchone()[0]
            if not any(lag.values()) and pending == 0 and unpublished == 0 \
                    and open_samples == 0:
                break
        time.sleep(1)
    drained = time.monotonic()
    res["lag"] = lag
    res["lag_zero_after_load_s"] = round(drained - t_load_end, 1) if not any(lag.values()) else None
    res["lag_zero_after_last_fault_s"] = round(drained - last_fault, 1) \
        if not any(lag.values()) else None
    if any(lag.values()):
        problems.append(f"consumer lag not zero {drain_timeout:g} s after the load stopped: {lag}")

    # Runs: once each, one live classification per (run, brand), history explained by triggers.
    lost: set[str] = set()
    doubled: set[str] = set()
    # Collections: every planned sample collected exactly once, its run recorded once.
    samples = check_collections(co, options, load, collection, lost, doubled, problems)
    res["collections"] = samples
    acked_runs = {rid: op for op in load.ops for rid in op.acked_run_ids}
    rows = cl.execute("SELECT run_id, answer_sha256, answer FROM runs").fetchall()
    by_id = {r[0]: r for r in rows}
    by_sha: dict[str, list[str]] = {}
    for rid, sha, _ in rows:
        by_sha.setdefault(sha, []).append(rid)
    status = {}
    for rid, brand, st in cl.execute("SELECT run_id, brand_id, status FROM run_brand_status"):
        status.setdefault(rid, {})[brand] = st
    parked = {(r[0], r[1]) for r in cl.execute("SELECT run_id, brand_id FROM pending_judgments")}
    history: dict[tuple[str, str], list[tuple]] = {}
    for row in cl.execute("SELECT run_id, brand_id, trigger, ground_truth_hash, "
                          "evidence_sha256, classification_id FROM classification_history"):
        history.setdefault((row[0], row[1]), []).append(row)
    for op in load.ops:
        if len(op.acked_run_ids) > 1:
            doubled.update(op.acked_run_ids)
            problems.append(f"one idempotency key, several run ids: {sorted(op.acked_run_ids)}")
    for rid, op in acked_runs.items():
        if rid not in by_id:
            lost.add(rid)
            problems.append(f"acked run {rid} ({op.kind}) is not stored")
            continue
        sha = by_id[rid][1]
        if op.kind == "run" and len(by_sha.get(sha, [])) > 1:
            doubled.add(rid)
            problems.append(f"run {rid}: its answer is stored as {len(by_sha[sha])} runs")
        brands = status.get(rid, {})
        if not brands:
            lost.add(rid)
            problems.append(f"run {rid}: no (run, brand) status")
        for brand, st in brands.items():
            hist = history.get((rid, brand), [])
            live = [h for h in hist if h[2] == "live"]
            if st == "pending" and (rid, brand) in parked:
                res["parked_for_judge"] = res.get("parked_for_judge", 0) + 1
            elif st == "pending":
                lost.add(rid)
                problems.append(f"run {rid} brand {brand}: still pending after the drain")
            elif st == "classified" and len(live) != 1:
                (doubled if len(live) > 1 else lost).add(rid)
                problems.append(f"run {rid} brand {brand}: {len(live)} live classifications")
            seen = set()
            for h in hist:
                if h[2] not in ("live", "reverification"):
                    problems.append(f"run {rid} brand {brand}: history row with trigger {h[2]} "
                                    "that no request of this run explains")
                if (h[2], h[3]) in seen:  # the same decision twice: a redelivery not absorbed
                    doubled.add(rid)
                    problems.append(f"run {rid} brand {brand}: two {h[2]} rows for one ground "
                                    "truth")
                seen.add((h[2], h[3]))
                if h[4] != sha:
                    problems.append(f"run {rid}: history cites evidence {h[4]}, not {sha}")
    res["runs_acked"] = len(acked_runs)
    res["runs_stored"] = len(rows)

    # Evidence: every acked run's answer stored and included; the log consistent with every
    # tree head saved during the run; every leaf rebuilds the signed root.
    from attesta_evidence.adapters.log_client import LogClient
    from attesta_contracts.api.evidence import SignedTreeHead
    from attesta_evidence.domain.signing import load_public_key
    from attesta_evidence.service_layer import verification as v

    key = load_public_key(Path(str(svc.key_file) + ".pub").read_bytes())
    client = LogClient(svc.gateway)
    quiet = lambda _msg: None  # noqa: E731
    final = client.tree_head()
    res["final_tree_size"] = final.tree_size
    heads_ok = 0
    for h in load.heads:
        try:
            v.verify_consistency(client, key, SignedTreeHead.model_validate(h), final, quiet)
            heads_ok += 1
        except (v.VerificationFailed, Exception) as exc:  # noqa: BLE001
            problems.append(f"saved tree head {h.get('tree_size')} not consistent: {exc}")
    res["tree_heads_saved"], res["tree_heads_consistent"] = len(load.heads), heads_ok
    try:
        v.audit_log(client, key, final, quiet)
        res["all_leaves_verify"] = True
    except Exception as exc:  # noqa: BLE001
        res["all_leaves_verify"] = False
        problems.append(f"log audit failed: {exc}")
    included = 0
    for rid in sorted(acked_runs):
        if rid not in by_id:
            continue
        try:
            v.verify_inclusion(client, key, content=by_id[rid][2].encode(), sha256=None,
                               saved=None, say=quiet)
            included += 1
        except Exception as exc:  # noqa: BLE001
            lost.add(rid)
            problems.append(f"run {rid}: evidence not included: {exc}")
    res["evidence_included"] = included
    # Each collected sample's raw engine response (what the collector stored, byte for byte) is
    # in the log too, referenced by its run.
    raw = co.execute("SELECT c.collection_id, r.body FROM collections c JOIN raw_responses r "
                     "ON r.sha256 = c.raw_sha256 WHERE c.status = 'collected'").fetchall()
    raw_included = 0
    for cid, body in raw:
        try:
            v.verify_inclusion(client, key, content=bytes(body), sha256=None, saved=None,
                               say=quiet)
            raw_included += 1
        except Exception as exc:  # noqa: BLE001
            lost.add(cid)
            problems.append(f"sample {cid}: raw engine response not included: {exc}")
    res["engine_responses"], res["engine_responses_included"] = len(raw), raw_included

    # Chats: one answer event per request at most; every request answered or with a reason.
    answers: dict[str, set[str]] = {}
    for _p, _o, _k, value in asyncio.run(read_topic(options, CHAT_ANSWERED)):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            env = json.loads(value)
            answers.setdefault(env["payload"]["request_id"], set()).add(env["event_id"])
    chats = [op for op in load.ops if op.kind == "chat"]
    unread = [op.request_id for op in chats if op.outcome == "acked" and op.request_id not in answers]
    if unread:  # the reader itself is checked: every answered chat is on the topic
        problems.append(f"{len(unread)} answered chats not found on {CHAT_ANSWERED}: {unread[:3]}")
    chat_doubled = {rid for rid, ids in answers.items() if len(ids) > 1}
    for rid in chat_doubled:
        problems.append(f"chat {rid} answered {len(answers[rid])} times (distinct event ids)")
    no_reason = [op for op in chats if op.outcome != "acked" and not op.reason]
    if no_reason:
        problems.append(f"{len(no_reason)} chats neither answered nor given a reason")
    res["chat"] = {"asked": len(chats),
                   "answered": sum(op.outcome == "acked" for op in chats),
                   "timed_out": sum(op.outcome == "timeout" for op in chats),
                   "failed": sum(op.outcome == "failed" for op in chats),
                   "answered_twice": len(chat_doubled),
                   "reasons": _count(op.reason.split(":")[0] for op in chats if op.reason)}
    for op in chats:
        if op.request_id in chat_doubled and op.run_id:
            doubled.add(op.run_id)

    # Dead letters: exactly the poison messages, once per consuming service.
    dl = []
    for _p, _o, _k, value in asyncio.run(read_topic(options, DEAD_LETTERED)):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            pl = json.loads(value)["payload"]
            dl.append((pl["consumer"], pl["source_topic"], pl["partition"], pl["offset"],
                       base64.b64decode(pl["original_b64"])))
    markers = {p["marker"]: p for p in inj.poison}
    distinct = {d[:4]: d for d in dl}
    per_poison: dict[str, set[str]] = {m: set() for m in markers}
    unexpected = []
    for (consumer, topic, _part, _off), d in distinct.items():
        m = re.search(rb"faults-poison-\d+-[0-9a-f]{32}", d[4])
        if m and m.group().decode() in markers:
            per_poison[m.group().decode()].add(consumer)
        else:
            unexpected.append(f"{consumer} on {topic}: {d[4][:80]!r}")
    missing = {m: (markers[m]["topic"], sorted(c)) for m, c in per_poison.items()
               if len(c) != len(INPUT_TOPICS[markers[m]["topic"]])}
    res["dead_letters"] = {"poison_sent": len(markers), "dead_letters": len(dl),
                           "distinct": len(distinct), "redelivered": len(dl) - len(distinct),
                           "unexpected": unexpected[:20], "poison_not_dead_lettered": missing}
    if unexpected:
        problems.append(f"{len(unexpected)} dead letters that are not poison: {unexpected[:5]}")
    for m, (topic, consumers) in missing.items():
        problems.append(f"poison on {topic} dead-lettered by {consumers or 'nobody'}, expected "
                        f"{list(INPUT_TOPICS[topic])}")

    res["lost"], res["doubled"] = sorted(lost), sorted(doubled)
    return res


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


# ------------------------------------------------------------------------------- report
def table(inj: Injector, load: Load, res: dict, t0: float) -> list[dict]:
    """Per fault kind: injected; runs, chats and collected samples accepted while that fault (or
    its recovery) was the latest one, and of those lost/doubled; recovery time (restart -> the
    first run accepted and the first chat answered that were sent after the restart, and the
    first sample collected after it, whichever comes last); and the latency a client saw in that
    window (POST /v1/runs to its 202 including client retries, chat question to answer)."""
    faults = sorted(inj.faults, key=lambda f: f.t_start)
    bounds = [(f, f.t_start, faults[i + 1].t_start if i + 1 < len(faults) else float("inf"))
              for i, f in enumerate(faults)]
    lost, doubled = set(res["lost"]), set(res["doubled"])
    rows: dict[str, dict] = {}
    ok = [op for op in load.ops if op.outcome == "acked" and op.kind in ("run", "chat",
                                                                         "collection")]
    # an acknowledged on-demand slot missing samples counts as lost where it was acknowledged
    slots = [op for op in load.ops if op.kind == "collect" and op.run_id in lost]

    def new_row(name: str) -> dict:
        return {"fault": name, "injected": 0, "accepted": 0, "lost": 0, "doubled": 0,
                "recovery": [], "run_s": [], "chat_s": []}

    def count(row: dict, start: float, end: float) -> None:
        in_window = [op for op in ok if start <= op.t_start < end]
        row["accepted"] += len(in_window)
        row["lost"] += sum(op.run_id in lost for op in in_window) + \
            sum(start <= op.t_start < end for op in slots)
        row["doubled"] += sum(op.run_id in doubled for op in in_window)
        for kind in ("run", "chat"):
            row[f"{kind}_s"] += [op.t_end - op.t_start for op in in_window if op.kind == kind]

    for f, start, end in bounds:
        if f.kind == "kill":
            n = 1 + len(inj.svc.siblings(f.target))
            name = f"kill -9 {f.target}" if n == 1 else \
                f"kill -9 one {base(f.target)} of {n} (down 5-15 s)"
        else:
            name = {"pg": "PostgreSQL stopped 5-20 s", "redis": "Redis stopped",
                    "kafka": "Kafka broker kill -9", "poison": "poison message per input topic",
                    "leader": "Kafka node leading the busiest partitions kill -9",
                    "controller": "Kafka active controller kill -9",
                    "broker": "Kafka node stopped 5-20 s", "rolling": "Kafka rolling restart",
                    "isr": "Kafka two of three nodes stopped 5-15 s (below min.insync.replicas)",
                    }[f.kind]
        row = rows.setdefault(name, new_row(name))
        row["injected"] += 1
        count(row, start, end)
        firsts = []
        for kind in ("run", "chat"):
            after = [op.t_end for op in ok if op.kind == kind and op.t_start >= f.t_restart]
            if after:
                firsts.append(min(after))
        collected = [op.t_end for op in ok if op.kind == "collection" and op.t_end >= f.t_restart]
        if collected:
            firsts.append(min(collected))
        if len(firsts) == 3:
            row["recovery"].append(max(firsts) - f.t_restart)
    first = new_row("(before the first fault)")
    count(first, float("-inf"), faults[0].t_start if faults else float("inf"))
    out = [first, *sorted(rows.values(), key=lambda r: r["fault"])]
    for r in out:
        rec = r.pop("recovery")
        r["recovery_p50_s"] = round(statistics.median(rec), 1) if rec else None
        r["recovery_max_s"] = round(max(rec), 1) if rec else None
        r["recovered"] = f"{len(rec)}/{r['injected']}"
        for kind in ("run", "chat"):
            lat = sorted(r.pop(f"{kind}_s"))
            r[f"{kind}_p50_s"] = round(statistics.median(lat), 1) if lat else None
            r[f"{kind}_p95_s"] = round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1) \
                if lat else None
    return out


def markdown(result: dict) -> str:
    lines = ["| fault | injected | accepted | lost | doubled | recovery p50 (s) | max (s) | "
             "run 202 p50/p95 (s) | chat answer p50/p95 (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tot = {"injected": 0, "accepted": 0, "lost": 0, "doubled": 0}

    def v(x) -> str:
        return "-" if x is None else f"{x}"

    for r in result["table"]:
        for k in tot:
            tot[k] += r[k]
        lines.append(f"| {r['fault']} | {r['injected']} | {r['accepted']} | {r['lost']} | "
                     f"{r['doubled']} | {v(r['recovery_p50_s'])} | {v(r['recovery_max_s'])} | "
                     f"{v(r['run_p50_s'])} / {v(r['run_p95_s'])} | "
                     f"{v(r['chat_p50_s'])} / {v(r['chat_p95_s'])} |")
    lines.append(f"| **total** | {tot['injected']} | {tot['accepted']} | {tot['lost']} | "
                 f"{tot['doubled']} | | | | |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------- main
class PrivateSystem(contextlib.AbstractContextManager):
    """The lifetime of one private system (the harness's, each of the cluster benchmark's
    modes): ``with PrivateSystem(infra, result, "harness") as system: system.svc = Services(...)``.
    Leaving it, whatever happened, stops the services the body set and the private
    infrastructure. An error is recorded in ``result["error"]`` (the traceback's tail) and does
    not propagate; Ctrl-C and SIGTERM (see main) are recorded and go on up after the clean-up."""

    def __init__(self, infra: Infra, result: dict, label: str) -> None:
        self.infra, self.result, self.label = infra, result, label
        self.svc: Services | None = None

    def __exit__(self, typ, exc, tb) -> bool:
        if exc is not None:
            self.result["error"] = "".join(traceback.format_exception(exc))[-4000:]
            log(f"{self.label}: error: {exc!r}")
        if self.svc is not None:
            self.svc.stop_all()
        self.infra.down()
        return isinstance(exc, Exception)


def prepare_retrieval(state: Path, index: Path):
    """Retrieval uses the chat e2e test's persistent index folder (an embedded Chroma folder has
    one writer: its lock is held for the whole run), so the KB is embedded once per checkout,
    not once per test; returns the open lock file."""
    import fcntl

    index.mkdir(parents=True, exist_ok=True)
    lock = open(index.with_suffix(".lock"), "w")  # noqa: SIM115 - held until the process exits
    fcntl.flock(lock, fcntl.LOCK_EX)
    (state / "retrieval").symlink_to(index)
    return lock


def start_system(svc: Services, retrieval_index: Path) -> tuple[str, list[dict], int]:
    """Everything between the private infrastructure's start and the load, on ``svc``'s
    processes, once the caller holds the retrieval index (``prepare_retrieval``): migrations,
    the log's signing key, the KB, every service ready, the demo data, an API key of the demo
    workspace and the collector's engine and schedules. Returns (API key, demo brands,
    prompts). Also used by benchmarks/cluster_pipeline.py; the caller stops ``svc`` and the
    infrastructure (``svc.stop_all()``, ``infra.down()``) whatever happens."""
    for key in svc.keys:  # further retrieval instances start from a copy of the index
        if base(key) == "retrieval" and key != "retrieval":
            shutil.copytree(retrieval_index, svc.state_dir(key), symlinks=True)
    for s in ("gateway", "classifier", "evidence", "collector"):
        svc.cli(s, "migrate")
    svc.cli("evidence", "keygen")
    svc.seed_kb()
    for name in ("sites", *svc.keys):
        svc.start(name)
    for name in svc.keys:
        log(f"{name} ready in "
            f"{svc.wait_ready(name, 900 if base(name) == 'retrieval' else 180):.1f} s")
    svc.cli("classifier", "seed-demo", "--sites-base",
            f"http://127.0.0.1:{svc.port['sites']}", "--workspace", "demo", "--refresh")
    api_key = svc.cli("gateway", "keys", "create", "--workspace", "demo",
                      "--name", "faults").strip().splitlines()[-1]
    brands = httpx.get(f"{svc.gateway}/v1/brands", timeout=20,
                       headers={"authorization": f"Bearer {api_key}"}).json()["items"]
    n_prompts = setup_collection(svc, api_key, brands)
    return api_key, brands, n_prompts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--duration", type=float, default=180, help="seconds of load with faults")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kafka", choices=("single", "cluster"), default="single",
                    help="one node on PLAINTEXT, or three on SASL_SSL with ACLs")
    ap.add_argument("--instances", type=int, default=1,
                    help=f"processes per consumer service ({', '.join(SCALED)})")
    ap.add_argument("--faults", help=f"single node: a subset of {','.join(KINDS)} (default: "
                    f"all); cluster: of {','.join(CLUSTER_KINDS)} (default: all)")
    ap.add_argument("--max-faults", type=int, default=1000)
    ap.add_argument("--min-faults", type=int, default=0,
                    help="keep injecting past --duration until this many (bounded: 3x duration)")
    ap.add_argument("--gap", type=float, nargs=2, default=(4, 12),
                    help="seconds between the end of one fault's recovery and the next fault")
    ap.add_argument("--chat-rate", type=float, default=0.5, help="chats per second")
    ap.add_argument("--run-rate", type=float, default=1.0, help="POST /v1/runs per second")
    ap.add_argument("--refresh-rate", type=float, default=1 / 20)
    ap.add_argument("--collect-rate", type=float, default=1 / 15,
                    help="slots of the on-demand schedule planned per second (each: "
                         f"{COLLECTION_SAMPLES} samples per prompt)")
    ap.add_argument("--drain-timeout", type=float, default=180)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--report", type=Path, help="write the markdown table section to this file")
    ap.add_argument("--report-section", help="the markers' name in --report (default: faults, "
                    "or faults-cluster with --kafka cluster)")
    ap.add_argument("--keep", action="store_true", help="keep the private state folder")
    ap.add_argument("--retrieval-index", type=Path, default=ROOT / ".state" / "e2e-retrieval")
    args = ap.parse_args(argv)
    # SIGTERM (a test timeout, a CI cancel) unwinds like Ctrl-C: the finally below stops our
    # services and our private infrastructure.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    cluster = args.kafka == "cluster"
    allowed = CLUSTER_KINDS if cluster else KINDS
    kinds = [k for k in (args.faults or ",".join(allowed)).split(",") if k]
    bad = set(kinds) - set(allowed)
    if bad:
        ap.error(f"unknown fault kinds for --kafka {args.kafka}: {sorted(bad)}")
    if args.instances < 1:
        ap.error("--instances must be at least 1")
    rng = random.Random(args.seed)
    state = ROOT / ".state" / "faults" / time.strftime("run-%Y%m%d-%H%M%S")
    if state.parent.exists():  # earlier runs' private state (their processes are gone)
        for old in state.parent.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    state.mkdir(parents=True)
    ports: set[int] = set()
    infra = Infra(state, ports, cluster=cluster)
    t_begin = time.monotonic()
    result: dict = {"seed": args.seed, "duration_s": args.duration, "faults": kinds,
                    "kafka": args.kafka, "instances": args.instances,
                    "command": "scripts/faults.py " + " ".join(shlex.quote(a) for a in
                                                                (argv or sys.argv[1:]))}
    with PrivateSystem(infra, result, "harness") as system:
        kafka = f"a 3-node cluster :{infra.cluster_port}-{infra.cluster_port + 5}" if cluster \
            else f"Kafka :{infra.kafka_port}"
        log(f"private infra in {state}: {kafka}, PostgreSQL :{infra.pg_port}, "
            f"Redis :{infra.redis_port}")
        infra.up()
        svc = system.svc = Services(infra, state, ports, args.instances)
        _lock = prepare_retrieval(state, args.retrieval_index)  # noqa: F841
        api_key, brands, n_prompts = start_system(svc, args.retrieval_index)
        log(f"system up in {time.monotonic() - t_begin:.0f} s; {len(brands)} demo brands; "
            f"load for {args.duration:g} s")
        load = Load(svc.gateway, api_key, brands, rng,
                    {"chat": args.chat_rate, "run": args.run_rate, "refresh": args.refresh_rate,
                     "collect": args.collect_rate})
        inj = Injector(infra, svc, rng, kinds)
        t0 = time.monotonic()
        load.start()
        time.sleep(min(10, args.duration / 10))  # a baseline before the first fault
        # every kind (and --min-faults) at least once (bounded: 3x the duration), then until the
        # duration is up
        while len(inj.faults) < args.max_faults and time.monotonic() - t0 < 3 * args.duration \
                and (time.monotonic() - t0 < args.duration
                     or len(inj.faults) < max(len(kinds), args.min_faults)):
            inj.inject()
            time.sleep(rng.uniform(*args.gap))
        log(f"{len(inj.faults)} faults injected; stopping the load")
        load.join()
        t_load_end = time.monotonic()
        retired = retire_schedule(svc, api_key, MINUTELY)
        res = oracle(svc, infra, load, inj, t_load_end, args.drain_timeout, {
            "prompts": n_prompts, "retired_wall": retired,
            "wall_minus_monotonic": time.time() - time.monotonic()})
        result.update(res)
        result["load_s"] = round(t_load_end - t0, 1)
        result["faults_injected"] = len(inj.faults)
        result["faults_unrecovered"] = [f"{f.kind} {f.target}" for f in inj.faults
                                        if f.t_ready is None]
        result["fault_notes"] = [f"{f.kind} {f.target}: {f.note}" for f in inj.faults if f.note]
        res["problems"] += [f"isr {f.target}: a write was acknowledged with two of three nodes "
                            f"down ({f.note})" for f in inj.faults if f.refused is False]
        result["ops"] = {k: _count(op.outcome for op in load.ops if op.kind == k)
                         for k in ("chat", "run", "refresh", "collect")}
        la = load.load_average
        result["load_average"] = {"min": min(la), "mean": round(statistics.fmean(la), 1),
                                  "max": max(la)} if la else None
        result["table"] = table(inj, load, res, t0)
        result["ok"] = not res["problems"] and not result["faults_unrecovered"]
    result["ok"] = result.get("ok", False) and "error" not in result
    if result["ok"] and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        log(f"state and logs kept in {state}")
    result["wall_s"] = round(time.monotonic() - t_begin, 1)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    if "table" in result:
        print(markdown(result))
    for p in result.get("problems", [])[:40]:
        log(f"PROBLEM: {p}")
    log(f"{'OK' if result['ok'] else 'FAILED'}: lost {len(result.get('lost', []))}, doubled "
        f"{len(result.get('doubled', []))}, problems {len(result.get('problems', []))}"
        + (f", error {result['error']}" if "error" in result else ""))
    if args.report and "table" in result:
        write_report(args.report, result, args.report_section)
    return 0 if result["ok"] else 1


def write_report(path: Path, result: dict, section: str | None = None) -> None:
    # the cluster's table has a section of its own (docs/reliability.md), next to the single
    # node's; a run of some kinds only (the isr run) names a third
    tag = section or ("faults-cluster" if result.get("kafka") == "cluster" else "faults")
    start, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    setup = "three Kafka nodes (SASL_SSL, SCRAM, ACLs)" if result.get("kafka") == "cluster" \
        else "one Kafka node"
    block = "\n".join([
        start, "", f"Command: `{result['command']}` (seed {result['seed']}); {setup}, "
        f"{result.get('instances', 1)} process(es) per consumer service; "
        f"{result['load_s']} s of load, {result['faults_injected']} faults, wall "
        f"{result['wall_s']} s.", "", markdown(result), "",
        f"Chats: {result['chat']}. Operations: {result['ops']}.",
        f"Collections: {result['collections']}; raw engine responses in the log "
        f"{result['engine_responses_included']}/{result['engine_responses']}.",
        f"Machine: {os.cpu_count()} cores, load average (1 min) during the load "
        f"{result['load_average']}.",
        f"Runs acknowledged {result['runs_acked']}, evidence included {result['evidence_included']}; "
        f"tree heads saved {result['tree_heads_saved']}, consistent with the final head "
        f"{result['tree_heads_consistent']}; every leaf rebuilds the root: "
        f"{result['all_leaves_verify']}; dead letters: "
        f"{ {k: len(v) if isinstance(v, list | dict) else v for k, v in result['dead_letters'].items()} }"
        "; consumer lag 0 "
        f"{result['lag_zero_after_load_s']} s after the load stopped "
        f"({result['lag_zero_after_last_fault_s']} s after the last fault).",
        f"Problems ({len(result['problems'])}): {result['problems'][:10] or 'none'}.", "", end])
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text += "\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
