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
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "scripts" / "infra"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


setup = _load("attesta_cluster_setup", ROOT / "deploy" / "kafka" / "cluster_setup.py")


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

    def up(self) -> subprocess.CompletedProcess[str]:
        """Start what is not running (a killed node) and wait until every replica is in sync."""
        return self._infra("up", timeout=300)

    def down(self) -> subprocess.CompletedProcess[str]:
        return self._infra("down", timeout=120)


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
