"""The one readiness loop of the single broker's probe and the cluster set-up
(deploy/kafka/probe.py ``wait_ready``): ready, not ready by the deadline, a broker process dead,
with the messages and exit codes scripts/infra acts on (0, 1, 2)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PROBE = Path(__file__).resolve().parents[1] / "kafka" / "probe.py"
_spec = importlib.util.spec_from_file_location("attesta_kafka_probe", PROBE)
assert _spec and _spec.loader
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def _attempts(answers: list[tuple[bool, str]], seen: list[float]):
    async def attempt(left: float) -> tuple[bool, str]:
        seen.append(left)
        return answers.pop(0)
    return attempt


async def test_ready_after_the_attempts_it_takes(capsys):
    seen: list[float] = []
    rc = await probe.wait_ready(_attempts([(False, "no broker"), (True, "brokers=[1]")], seen),
                                timeout=30, pause=0, pids=[None])
    assert rc == 0 and len(seen) == 2 and all(0 < left <= 30 for left in seen)
    assert capsys.readouterr().out == "kafka ready after 2 attempt(s): brokers=[1]\n"


async def test_not_ready_by_the_deadline_says_what_the_last_attempt_said(capsys):
    rc = await probe.wait_ready(_attempts([(False, "2 of 3 brokers registered")], []),
                                timeout=0, name="kafka-cluster")
    assert rc == 1
    assert capsys.readouterr().err == "kafka-cluster: not ready after 0s: 2 of 3 brokers registered\n"


async def test_a_dead_broker_stops_the_wait_at_once(capsys):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    seen: list[float] = []
    rc = await probe.wait_ready(_attempts([(False, "x")], seen), timeout=30, pids=[gone.pid])
    assert rc == 2 and seen == []
    assert capsys.readouterr().err == f"kafka probe: broker process {gone.pid} died (no attempt made)\n"
    rc = await probe.wait_ready(_attempts([], []), timeout=30, pids=[gone.pid], name="kafka-cluster",
                                died="broker process(es) {dead}")
    assert rc == 2
    assert capsys.readouterr().err == (
        f"kafka-cluster: broker process(es) [{gone.pid}] died (no attempt made)\n")
