from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, Field


class CitationClass(StrEnum):
    STRONG = "STRONG"
    DESCRIPTIVE = "DESCRIPTIVE"
    ECHO = "ECHO"
    CONFABULATED = "CONFABULATED"
    ABSENT = "ABSENT"


class DecidedBy(StrEnum):
    DETERMINISTIC = "deterministic"
    JUDGE = "judge"
    HUMAN = "human"  # a person in the review queue (issue #28); ``reviewer`` names who


class Trigger(StrEnum):
    LIVE = "live"
    REVERIFICATION = "reverification"
    BACKFILL = "backfill"
    MANUAL = "manual"
    REVIEW = "review"  # decided by a person working through the review queue


class ClassificationRecorded(BaseModel):
    classification_id: str
    run_id: str
    brand_id: str
    workspace_id: str
    citation_class: CitationClass
    decided_by: DecidedBy
    judge_model: str | None = None
    ground_truth_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    fact_ids: list[str] = Field(default_factory=list)
    reason: str
    trigger: Trigger
    heuristic_version: str
    prompt_version: str | None = None
    evidence_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    actor: str | None = None  # who asked, for manual reclassification
    trigger_reason: str | None = None  # why a manual/reverification run was asked for
    classified_at: AwareDatetime
    # Additive (issue #28): a person's label (decided_by "human") names its reviewer (the API
    # key's name) and carries their note; absent on machine labels.
    reviewer: str | None = None
    note: str | None = None


class ClassificationRefused(BaseModel):
    run_id: str
    brand_id: str
    workspace_id: str
    reason: str
    refused_at: AwareDatetime
