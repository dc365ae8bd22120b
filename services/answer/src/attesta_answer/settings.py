"""Settings of the answer service (environment variables, validated at start)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from attesta_platform.llm import DEFAULT_BASE_URL, LLMConfig
from attesta_platform.settings import ServiceSettings


class AnswerSettings(ServiceSettings):
    # ATTESTA_ANSWER_GENERATOR: "offline" (extractive, no network) or "openai" (any
    # OpenAI-compatible chat-completions endpoint; OpenRouter by default).
    answer_generator: Literal["offline", "openai"] = "offline"
    answer_llm_base_url: str = DEFAULT_BASE_URL
    answer_llm_model: str = Field(default="openai/gpt-4o-mini", min_length=1, max_length=200)
    answer_llm_api_key: SecretStr = SecretStr("")
    answer_llm_timeout_s: float = Field(default=8.0, gt=0)  # per attempt
    answer_llm_attempts: int = Field(default=3, ge=1, le=10)
    # All attempts of one answer together; keep it under the gateway's ATTESTA_CHAT_TIMEOUT_S
    # (15 s) minus retrieval, so a failing LLM still gives the user a "failed" reply in time.
    answer_llm_budget_s: float = Field(default=12.0, gt=0)
    # The workspace a run is recorded in when the chat request carried none (an anonymous chat):
    # an internal one of its own, never a customer's (issue #23); empty: no run at all for them.
    assistant_workspace: str = Field(default="assistant-public", max_length=100)
    # Consumer group on retrieval.completed.v1 (tests run their own beside the real system).
    answer_consumer_group: str = Field(default="answer", min_length=1, max_length=200)
    health_port: int = Field(default=8084, ge=0, le=65535)
    # The offline generator's grounding artefact (issue #24); default: the one shipped in the
    # package. Missing or built for other features: the service refuses to start.
    answer_gate_path: Path | None = None
    # The gate's pair reader (feature spec 3, ATTESTA_ANSWER_READER): "auto" uses it when a
    # reader of the recipe the artefact pins is on this machine (and picks it up when
    # `attesta answer train-reader` writes it later), "on" requires it, "off" never loads it.
    # Without torch (the service's image) it is off. Its folder: ATTESTA_ANSWER_READER_DIR,
    # default <ATTESTA_CACHE_DIR or ~/.cache/attesta>/pair-reader/<recipe> (`attesta answer reader-dir`).
    answer_reader: Literal["auto", "on", "off"] = "auto"
    answer_reader_dir: Path | None = None
    # Retrieval results of different chats answered at once (ATTESTA_KAFKA_CONSUMER_CONCURRENCY;
    # the platform's default is 1). Safe here: the handler keeps no state and derives every id
    # from its input, and its time is the LLM's wait, so one at a time would serve the whole
    # assistant one chat per LLM round trip.
    kafka_consumer_concurrency: int = Field(default=16, ge=1)

    @model_validator(mode="after")
    def _llm_config_is_usable(self) -> AnswerSettings:
        if self.answer_generator == "openai":
            if not self.answer_llm_base_url.startswith(("http://", "https://")):
                raise ValueError("ATTESTA_ANSWER_LLM_BASE_URL must be an http(s) URL")
            if (self.answer_llm_base_url.rstrip("/") == DEFAULT_BASE_URL
                    and not self.answer_llm_api_key.get_secret_value()):
                raise ValueError("ATTESTA_ANSWER_LLM_API_KEY is required for OpenRouter "
                                 "(or point ATTESTA_ANSWER_LLM_BASE_URL at another endpoint)")
        return self

    def llm_config(self) -> LLMConfig:
        return LLMConfig(base_url=self.answer_llm_base_url, model=self.answer_llm_model,
                         api_key=self.answer_llm_api_key.get_secret_value(),
                         timeout_s=self.answer_llm_timeout_s, attempts=self.answer_llm_attempts)
