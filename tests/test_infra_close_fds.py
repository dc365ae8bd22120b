"""scripts/close-fds, which scripts/infra runs through: a daemon started under `flock LOCK ...`
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


def test_scripts_infra_runs_through_close_fds():
    assert 'exec "$here/close-fds" ' in (CLOSE_FDS.parent / "infra").read_text()
