"""scripts/close-fds, which deploy/infra.sh starts every daemon through: a daemon started under `flock LOCK ...`
must not keep LOCK once the command has returned (Kafka, PostgreSQL and Redis did, for ever).
A harmless daemon (`sleep`) stands in for them: the real ones start only under the lead's hand."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CLOSE_FDS = Path(__file__).resolve().parents[1] / "scripts" / "close-fds"
# Leaves a daemon behind (its own session, no std streams of ours) and prints its pid.
START_DAEMON = "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"


def _lock_free_after(lock: Path, *launcher: str) -> bool:
    """Starts the daemon under `flock lock`, through ``launcher``; once that command has
    returned, whether another process can take the lock at once."""
    started = subprocess.run(["flock", str(lock), *launcher, "bash", "-c", START_DAEMON],
                             capture_output=True, text=True, timeout=30, check=True)
    try:
        return subprocess.run(["flock", "-n", str(lock), "true"], timeout=30).returncode == 0
    finally:
        os.kill(int(started.stdout), signal.SIGTERM)


def test_a_daemon_started_through_close_fds_does_not_hold_the_callers_lock(tmp_path):
    assert _lock_free_after(tmp_path / "lock", str(CLOSE_FDS))
    # Without it the daemon holds the lock: what the launcher is for.
    assert not _lock_free_after(tmp_path / "lock")


def test_every_daemon_infra_starts_goes_through_close_fds():
    """start_bg (Kafka, Redis, the cluster's nodes) and the postmaster's start: each line that
    detaches a daemon with setsid launches it through close-fds."""
    deploy = CLOSE_FDS.parents[1] / "deploy"
    launches = [line.strip() for script in (deploy / "infra.sh", deploy / "kafka" / "cluster.sh")
                for line in script.read_text().splitlines()
                if line.strip().startswith("setsid ")]
    assert len(launches) == 2, launches
    assert all(line.startswith('setsid "$REPO/scripts/close-fds" ') for line in launches), launches
