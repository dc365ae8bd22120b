from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field


class GroundTruthFact(BaseModel):
    fact_id: str
    brand_id: str
    type: str  # e.g. "organization", "product", "heading", "definition", "paragraph", "manual"
    text: str
    source_url: str
    fetched_at: AwareDatetime
    attribution: str
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class GroundTruthSourceFetched(BaseModel):
    """A raw document a refresh fetched, so the evidence service can store its exact bytes."""

    brand_id: str
    workspace_id: str
    url: str
    fetched_at: AwareDatetime
    media_type: str
    content: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class GroundTruthRefreshed(BaseModel):
    brand_id: str
    workspace_id: str
    refresh_id: str
    ground_truth_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    active_fact_ids: list[str]
    added_fact_ids: list[str] = Field(default_factory=list)
    superseded_fact_ids: list[str] = Field(default_factory=list)
    refreshed_at: AwareDatetime
