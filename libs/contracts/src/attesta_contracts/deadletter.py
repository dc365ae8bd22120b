from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field


class MessageDeadLettered(BaseModel):
    """A message a consumer gave up on. ``original_b64`` is the exact original value bytes."""

    consumer: str  # consumer group that failed
    source_topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    key_b64: str | None = None
    original_b64: str
    error_type: str
    error: str
    attempts: int = Field(ge=1)
    failed_at: AwareDatetime
