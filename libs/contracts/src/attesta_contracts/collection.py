"""Events of the collector (services/collector): what it could not collect, and the raw
engine responses behind what it did.

A schedule slot whose every planned sample was collected or given up is announced once, with the
run ids it produced (the classifier evaluates alert rules after it).

Collected answers are runs on ``runs.recorded.v1`` (the classifier and the evidence store read
them unchanged); a collection that failed after its retries is announced here, with its reason;
the engine's raw response body of a collected run goes to the evidence log from here.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field


class CollectionFailed(BaseModel):
    """One sample (schedule, prompt, engine, slot, sample) that could not be collected."""

    collection_id: str = Field(min_length=1, max_length=100)
    workspace_id: str = Field(min_length=1, max_length=100)
    schedule_id: str
    prompt_id: str
    engine_id: str
    slot: AwareDatetime
    sample: int = Field(ge=0)
    attempts: int = Field(ge=1)
    reason: str = Field(max_length=4000)
    failed_at: AwareDatetime


class EngineResponseCaptured(BaseModel):
    """The raw body an OpenAI-compatible engine returned for a collected run, byte for byte
    (``content`` is its UTF-8 text; ``sha256`` of those bytes is the run's
    ``raw_response_sha256``). The evidence service stores it as ``engine_response`` evidence
    referenced by the run id, so anyone holding the body can check it against the public log."""

    run_id: str = Field(min_length=1, max_length=100)
    collection_id: str = Field(min_length=1, max_length=100)
    workspace_id: str = Field(min_length=1, max_length=100)
    media_type: str = "application/json"
    content: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    captured_at: AwareDatetime


class SlotCompleted(BaseModel):
    """One (schedule, slot) is over: every planned sample was collected or given up. Published
    once per slot (event id derived from the slot); ``run_ids`` are the runs its collected
    samples produced (for our assistant, the answer service's run ids)."""

    workspace_id: str = Field(min_length=1, max_length=100)
    schedule_id: str = Field(min_length=1, max_length=200)
    slot: AwareDatetime
    planned: int = Field(ge=0)
    collected: int = Field(ge=0)
    failed: int = Field(ge=0)
    run_ids: list[str] = Field(default_factory=list, max_length=100_000)
    completed_at: AwareDatetime
