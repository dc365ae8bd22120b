"""The envelope every event on every topic carries.

The envelope is the wire shape: a JSON object with the metadata fields below and the event's
body under ``payload``. Internal teams subscribing to a topic parse ``Envelope[<Payload>]``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Generic, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

P = TypeVar("P", bound=BaseModel)

# Namespace for ids derived from other ids (uuid5): a redelivered input yields the same output
# event id, so downstream inboxes drop the duplicate.
DERIVED_ID_NAMESPACE = uuid.UUID("6f1f7a52-3c1e-4c55-9a59-9e0c3c9b8a01")


def derived_id(*parts: object) -> uuid.UUID:
    """A deterministic UUID from its inputs (same inputs, same id)."""
    return uuid.uuid5(DERIVED_ID_NAMESPACE, "|".join(str(p) for p in parts))


def utc_now() -> datetime:
    return datetime.now(UTC)


class Envelope(BaseModel, Generic[P]):
    model_config = ConfigDict(extra="ignore", frozen=True)

    event_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    event_type: str = Field(min_length=1)
    schema_version: int = Field(ge=1)
    occurred_at: AwareDatetime = Field(default_factory=utc_now)
    correlation_id: str = Field(min_length=1)
    causation_id: str | None = None
    producer: str = Field(min_length=1)
    payload: P

    @field_validator("occurred_at")
    @classmethod
    def _to_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)
