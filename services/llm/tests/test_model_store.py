"""The model file is the concatenation of its part packages, hashed before it is used: a
wrong part or a damaged cache never loads (small fake parts on sys.path stand in for the 22
wheels)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from attesta_llm.adapters.model_store import assemble, resolve_model
from attesta_llm.domain.model import (
    ModelArtifact,
    ModelHashMismatch,
    ModelPartsMissing,
)

pytestmark = pytest.mark.unit

PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


@pytest.fixture
def artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelArtifact:
    site = tmp_path / "site"
    names = []
    for i, data in enumerate(PARTS, start=1):
        name = f"attesta_fake_model_part{i}_{tmp_path.name[-8:].replace('-', '_')}"
        (site / name / "data").mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
        (site / name / "data" / f"part{i:02}.bin").write_bytes(data)
        names.append(name)
    monkeypatch.syspath_prepend(str(site))
    return ModelArtifact(name="fake", sha256=hashlib.sha256(b"".join(PARTS)).hexdigest(),
                         size_bytes=len(b"".join(PARTS)), part_packages=tuple(names),
                         upstream="test", licence="test")


def test_the_parts_are_concatenated_in_order_once_and_named_by_their_hash(artifact, tmp_path):
    models = tmp_path / "cache" / "models"
    path = assemble(artifact, models, artifact.sha256)
    assert path == models / f"{artifact.sha256}.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert path.stat().st_mode & 0o777 == 0o644  # readable by a service running as another user
    mtime = path.stat().st_mtime_ns
    assert assemble(artifact, models, artifact.sha256) == path  # the cached file is reused
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in models.iterdir()] == [path.name]  # no temporary file left


def test_parts_that_do_not_hash_to_the_pin_never_take_the_final_name(artifact, tmp_path):
    models = tmp_path / "models"
    wrong = "ab" * 32
    with pytest.raises(ModelHashMismatch) as refused:
        assemble(artifact, models, wrong)
    assert refused.value.expected == wrong and refused.value.actual == artifact.sha256
    assert f"expected {wrong}" in str(refused.value) and artifact.sha256 in str(refused.value)
    assert list(models.iterdir()) == []


def test_a_damaged_cached_file_is_rebuilt_from_the_parts(artifact, tmp_path):
    models = tmp_path / "models"
    path = assemble(artifact, models, artifact.sha256)
    path.write_bytes(b"bit rot")
    assert assemble(artifact, models, artifact.sha256).read_bytes() == b"".join(PARTS)


def test_missing_part_packages_are_named(artifact, tmp_path):
    incomplete = ModelArtifact(**{**artifact.__dict__,
                                  "part_packages": (*artifact.part_packages, "attesta_no_such_part")})
    with pytest.raises(ModelPartsMissing) as missing:
        assemble(incomplete, tmp_path / "models", artifact.sha256)
    assert missing.value.missing == ["attesta_no_such_part"]
    assert "scripts/install.sh" in str(missing.value)


def test_an_operators_own_file_is_checked_against_the_configured_hash(artifact, tmp_path):
    own = tmp_path / "own.gguf"
    own.write_bytes(b"an operator's model")
    good = hashlib.sha256(own.read_bytes()).hexdigest()
    assert resolve_model(artifact, explicit_path=own, expected_sha256=good,
                         cache_dir=tmp_path / "cache") == own
    with pytest.raises(ModelHashMismatch):
        resolve_model(artifact, explicit_path=own, expected_sha256=artifact.sha256,
                      cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # nothing assembled for an explicit file
