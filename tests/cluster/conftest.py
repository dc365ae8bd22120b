"""The three-broker SASL_SSL cluster for tests/cluster (`scripts/infra kafka-cluster up`).

The session fixture starts a cluster of its own, apart from anything else on the machine: its
own folder (``$STATE/kafka-cluster-test``: CA, credentials and formatted storage are kept for
the next run) and its own ports (``ATTESTA_TEST_CLUSTER_PORT``, default 29192: clients
29192/29194/29196, controllers one above each), not the single node's 19092 nor the 29092 of a
cluster started by ``scripts/infra up --cluster``. It stops it again at the end of the session,
even when a test fails. Clients are built by the project's own factory (``KafkaOptions``) from
the env files set-up writes, one per principal: ``env`` (admin) and ``env.<service>``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.loading import load_script

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "scripts" / "infra"


setup = load_script("attesta_cluster_setup", ROOT / "deploy" / "kafka" / "cluster_setup.py")


@dataclass(frozen=True)
class Cluster:
    dir: Path
    port: int

    def _infra(self, command: str, timeout: float) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "ATTESTA_KAFKA_CLUSTER_DIR": str(self.dir),
               "ATTESTA_KAFKA_CLUSTER_PORT": str(self.port)}
        return subprocess.run([str(INFRA), "kafka-cluster", command], capture_output=True,
                              text=True, timeout=timeout, check=False, env=env)

    def env(self, principal: str = "admin") -> dict[str, str]:
        name = "env" if principal == "admin" else f"env.{principal}"
        result: dict[str, str] = setup.read_env(self.dir / name)
        return result

    def options(self, principal: str = "admin", **overrides: Any) -> Any:
        return dataclasses.replace(setup.options_from_env(self.env(principal)), **overrides)

    def broker_pid(self, node_id: int) -> int:
        return int((self.dir / f"node-{node_id}" / "kafka.pid").read_text().split()[0])

    def running(self, node_id: int) -> bool:
        try:
            os.kill(self.broker_pid(node_id), 0)
        except (OSError, ValueError):
            return False
        return True

    def stop(self, node_id: int, sig: int = signal.SIGTERM, bound_s: float = 90.0) -> float:
        """Stop one node (SIGTERM: a controlled shutdown that hands its leaderships over first)
        and wait for its process to end; returns the seconds it took."""
        pid, t0 = self.broker_pid(node_id), time.monotonic()
        os.kill(pid, sig)
        while time.monotonic() - t0 < bound_s:
            try:
                os.waitpid(pid, os.WNOHANG)  # reaps it when it is our child; harmless otherwise
            except ChildProcessError:
                pass
            if not os.path.exists(f"/proc/{pid}") or _zombie(pid):
                return time.monotonic() - t0
            time.sleep(0.1)
        raise AssertionError(f"node {node_id} (pid {pid}) still running {bound_s:.0f}s after signal {sig}")

    def active_controller(self) -> int:
        """The KRaft quorum's leader as the running nodes last recorded it (each node keeps the
        leader and epoch it knows in its metadata log's quorum-state file; the highest epoch wins).
        The admin API's "controller" is a random broker under KRaft, so it cannot say this."""
        known = []
        for node in (1, 2, 3):
            path = self.dir / f"node-{node}" / "data" / "__cluster_metadata-0" / "quorum-state"
            if self.running(node) and path.exists():
                state = json.loads(path.read_text())
                if state.get("leaderId", -1) >= 0:
                    known.append((state["leaderEpoch"], state["leaderId"]))
        assert known, "no running node knows a quorum leader"
        return max(known)[1]

    def up(self) -> subprocess.CompletedProcess[str]:
        """Start what is not running (a killed node) and wait until every replica is in sync."""
        return self._infra("up", timeout=300)

    def down(self) -> subprocess.CompletedProcess[str]:
        return self._infra("down", timeout=120)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    state = Path(os.environ.get("ATTESTA_STATE_DIR", ROOT / ".state"))
    handle = Cluster(state / "kafka-cluster-test", int(os.environ.get("ATTESTA_TEST_CLUSTER_PORT", "29192")))
    try:
        started = handle.up()
        assert started.returncode == 0, started.stdout + started.stderr
        yield handle
    finally:
        stopped = handle.down()
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
