"""The local LLM's configuration (environment ``ATTESTA_LLM_LOCAL_*``), validated at start-up.

Health and readiness answer on the shared side door (``ATTESTA_HEALTH_HOST:ATTESTA_HEALTH_PORT``,
like retrieval and answer); the OpenAI-compatible API on ``llm_local_host:llm_local_port``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from attesta_llm.domain.model import QWEN25_CODER_1_5B_Q4_K_M
from attesta_platform.settings import ServiceSettings


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "attesta"


class LocalLLMSettings(ServiceSettings):
    llm_local_host: str = "127.0.0.1"
    llm_local_port: int = Field(default=8086, ge=1, le=65535)
    # One thread by default: on two shared cores, two threads generated several times slower
    # (they wait on each other whenever the other core is busy). docs/local-llm.md has numbers.
    llm_local_threads: int = Field(default=1, ge=1, le=256)
    # Tokens of context; split between the slots (one prompt plus its answer must fit in a slot).
    llm_local_ctx: int = Field(default=4096, ge=256, le=32768)
    # Requests decoded at once (llama.cpp's slots); more wait in llama.cpp's queue.
    llm_local_parallel: int = Field(default=1, ge=1, le=16)
    # Unset: the pinned model, assembled once from its package wheels into the cache.
    llm_local_model_path: Path | None = None
    # The hash the model file must have before it is loaded (set it with a model of your own).
    llm_local_model_sha256: str = Field(default=QWEN25_CODER_1_5B_Q4_K_M.sha256,
                                        pattern=r"^[0-9a-f]{64}$")
    # When set, llama.cpp answers only requests with "Authorization: Bearer <key>" (the clients'
    # ATTESTA_LLM_API_KEY / ATTESTA_ANSWER_LLM_API_KEY).
    llm_local_api_key: str = ""
    cache_dir: Path = Field(default_factory=_default_cache_dir, validation_alias="ATTESTA_CACHE_DIR")

    def base_url(self) -> str:
        """What the clients' ``*_LLM_BASE_URL`` should be."""
        host = f"[{self.llm_local_host}]" if ":" in self.llm_local_host else self.llm_local_host
        return f"http://{host}:{self.llm_local_port}/v1"
