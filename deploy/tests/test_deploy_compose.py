"""docker-compose.yml and deploy/docker/Dockerfile pass the static validator, and the validator
really rejects broken files (so a green result means something)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = REPO / "deploy" / "validate_compose.py"


def _run(compose: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(VALIDATOR), "--compose", str(compose)],
                          capture_output=True, text=True, timeout=120)


def test_repo_compose_file_is_valid() -> None:
    res = _run(REPO / "docker-compose.yml")
    assert res.returncode == 0, res.stdout + res.stderr


def test_validator_rejects_broken_references(tmp_path: Path) -> None:
    text = (REPO / "docker-compose.yml").read_text()
    broken = (text.replace('image: attesta/answer:', 'image: attesta/nosuchservice:')
                  .replace("      evidence:\n        condition: service_healthy", "      evidense:\n        condition: service_healthy"))
    assert broken != text
    # Same folder as the real file, so relative build contexts still resolve.
    bad = REPO / f".compose-validator-test-{tmp_path.name}.yml"
    bad.write_text(broken)
    try:
        res = _run(bad)
    finally:
        bad.unlink()
    assert res.returncode == 1
    assert "nosuchservice" in res.stdout
    assert "evidense" in res.stdout
