"""The model file on disk: assembled once from its package wheels into the cache
(``<cache>/models/<sha256>.gguf``), and checked against its SHA-256 before every load.

Nothing is downloaded: the parts are files inside installed packages (``scripts/install.sh``
installs them from ``requirements/llm-model.txt``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

from attesta_llm.domain.model import (
    ModelArtifact,
    ModelFileError,
    ModelHashMismatch,
    ModelPartsMissing,
)

_CHUNK = 8 * 1024 * 1024


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verified(path: Path, expected_sha256: str) -> Path:
    """``path`` if its bytes hash to ``expected_sha256``; ``ModelHashMismatch`` otherwise."""
    if not path.is_file():
        raise ModelFileError(f"model file {path} does not exist")
    actual = file_sha256(path)
    if actual != expected_sha256:
        raise ModelHashMismatch(str(path), expected_sha256, actual)
    return path


def part_files(artifact: ModelArtifact) -> list[Path]:
    """Each part package's one data file, in order (found without importing the packages)."""
    files, missing = [], []
    for name in artifact.part_packages:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            missing.append(name)
            continue
        data = sorted((Path(spec.origin).parent / "data").glob("*"))
        if len(data) != 1:
            raise ModelFileError(f"package {name} should hold one data file, has {len(data)}")
        files.append(data[0])
    if missing:
        raise ModelPartsMissing(artifact, missing)
    return files


def assemble(artifact: ModelArtifact, models_dir: Path, expected_sha256: str) -> Path:
    """The model file in ``models_dir``, concatenated from its parts on first use, hashed while
    written and moved into place only when the hash matches (a partial or wrong file never
    takes the final name). A cached file that no longer matches is rebuilt once."""
    target = models_dir / f"{expected_sha256}.gguf"
    if target.is_file():
        try:
            return verified(target, expected_sha256)
        except ModelHashMismatch:
            target.unlink()  # damaged on disk: the parts are still installed, rebuild it
    parts = part_files(artifact)
    models_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{expected_sha256[:12]}-", suffix=".tmp", dir=models_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != expected_sha256:
            raise ModelHashMismatch(f"{artifact.name} assembled from {len(parts)} packages",
                                    expected_sha256, actual)
        tmp.chmod(0o644)  # mkstemp's 0600 would hide it from a service running as another user
        os.replace(tmp, target)  # atomic: concurrent assemblers write the same bytes
    finally:
        tmp.unlink(missing_ok=True)
    return target


def resolve_model(artifact: ModelArtifact, *, explicit_path: Path | None, expected_sha256: str,
                  cache_dir: Path) -> Path:
    """The file to load: the operator's own (``explicit_path``) or the artifact's, assembled
    into ``cache_dir/models``; either way checked against ``expected_sha256`` first."""
    if explicit_path is not None:
        return verified(explicit_path, expected_sha256)
    return assemble(artifact, cache_dir / "models", expected_sha256)
