from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, Field


class EvidenceRefKind(StrEnum):
    RUN = "run"
    GROUND_TRUTH_SOURCE = "ground_truth_source"
    ENGINE_RESPONSE = "engine_response"  # an AI engine's raw response body (the collector's)


class EvidenceReference(BaseModel):
    kind: EvidenceRefKind
    ref_id: str  # run id (kinds run, engine_response), or "<brand_id> <source url>"


class EvidenceRecorded(BaseModel):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    media_type: str
    size_bytes: int = Field(ge=0)
    first_recorded_at: AwareDatetime
    reference: EvidenceReference
    new_content: bool  # False when the bytes were already stored and only a reference was added
    log_index: int | None = Field(default=None, ge=0)  # leaf index in the Merkle log
    # The workspace whose run / ground-truth fetch the reference came from (internal topic only;
    # never shown on public routes). Absent on events from producers that predate it.
    workspace_id: str | None = None
