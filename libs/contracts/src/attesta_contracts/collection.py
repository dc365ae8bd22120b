"""Events of the collector (services/collector): what it could not collect.

Collected answers are runs on ``runs.recorded.v1`` (the classifier and the evidence store read
them unchanged); a collection that failed after its retries is announced here, with its reason.
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
