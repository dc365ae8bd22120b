from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

ASSISTANT_ENGINE = "attesta-assistant"


class RunRecorded(BaseModel):
    """A prompt put to an AI engine and its answer. The run's evidence is the answer's exact
    UTF-8 bytes; ``answer_sha256`` is their SHA-256."""

    run_id: str = Field(min_length=1, max_length=100)
    workspace_id: str = Field(min_length=1, max_length=100)
    engine: str = Field(min_length=1, max_length=100)
    model: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=20_000)
    answer: str = Field(max_length=200_000)
    answer_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    brand_ids: list[str] = Field(default_factory=list)  # empty: every brand of the workspace
    requested_at: AwareDatetime
    answered_at: AwareDatetime
    source: str = "external"  # "assistant" for our own chat answers
