from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class KbCard(BaseModel):
    """A verified KB card. ``source`` and ``metadata`` are kept as ingested: the answer service
    validates them at enrichment time (a degraded card must not break ingest)."""

    model_config = ConfigDict(extra="ignore")

    card_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
    title: str = Field(min_length=1, max_length=500)
    text: str = Field(min_length=1, max_length=100_000)
    source: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class KbCardPublished(BaseModel):
    """Latest version of a card. ``content_sha256`` lets consumers skip unchanged re-ingests;
    ``deleted`` marks a retraction (the compacted topic also gets a tombstone)."""

    card: KbCard
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    deleted: bool = False
