"""What the fault harness's tests share: scripts/faults.py and benchmarks/cluster_pipeline.py
loaded as modules (neither folder is a package), and one way to run the harness and read its
result."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.faults.loading import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def faults() -> ModuleType:
    # the name benchmarks/cluster_pipeline.py loads it under, so both see one module
    return load_script("attesta_faults_harness", ROOT / "scripts" / "faults.py")


@pytest.fixture(scope="session")
def bench(faults: ModuleType) -> ModuleType:
    return load_script("attesta_cluster_pipeline_bench", ROOT / "benchmarks" / "cluster_pipeline.py")


@dataclass(frozen=True)
class HarnessRun:
    result: dict[str, Any]
    summary: str  # the output's tail, for assertion messages
    returncode: int


@pytest.fixture
def run_harness(tmp_path: Path) -> Callable[..., HarnessRun]:
    """``run_harness("--duration", "60", ...)``: scripts/faults.py as its own process with
    ``--json``; on a timeout it gets SIGTERM, which stops its services and its private
    infrastructure. Fails unless it wrote a result without an error."""

    def run(*args: str, timeout: float = 1400, grace: float = 180) -> HarnessRun:
        out = tmp_path / "faults.json"
        proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "faults.py"), *args,
                                 "--json", str(out)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            stdout, stderr = proc.communicate(timeout=grace)
        assert out.exists(), f"the harness wrote no result:\n{stdout[-4000:]}\n{stderr[-4000:]}"
        run = HarnessRun(json.loads(out.read_text()), f"{stdout[-6000:]}\n{stderr[-3000:]}",
                         proc.returncode)
        assert "error" not in run.result, run.summary
        return run

    return run
