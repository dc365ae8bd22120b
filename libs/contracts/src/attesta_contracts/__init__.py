"""Attesta's event and API contracts: pydantic v2 models, topic names and schema versions."""

from attesta_contracts.envelope import Envelope, derived_id, utc_now
from attesta_contracts.topics import Topic, all_topics, topic

__all__ = ["Envelope", "Topic", "all_topics", "derived_id", "topic", "utc_now"]
