"""Envelope handling: a record's bytes to a checked ``Envelope`` (or a permanent
``UndecodableMessage``) and back. Pure: no client, no I/O; the consume path and the publisher
both use it (``attesta_platform.messaging`` re-exports it for the services)."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from attesta_contracts import Envelope, Topic, topic as lookup_topic, utc_now


@dataclass(frozen=True)
class Delivery:
    """Where a consumed message came from."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


def delivery_of(record: Any) -> Delivery:
    return Delivery(record.topic, record.partition, record.offset, record.key, record.value or b"")


class UndecodableMessage(Exception):
    """The bytes are not a valid envelope for the topic's payload (permanent)."""


def encode(envelope: Envelope[Any]) -> bytes:
    # pydantic-core writes the JSON itself: no intermediate dict of the whole envelope.
    return envelope.model_dump_json().encode()


@functools.cache
def envelope_type(payload: type[BaseModel]) -> type[Envelope[Any]]:
    """``Envelope[payload]``, parametrised once per payload class: pydantic's own lookup of a
    parametrised generic costs more than the rest of building a small envelope."""
    # valid-type: mypy reads Envelope[...] as a type, and the payload class is a runtime value.
    return Envelope[payload]  # type: ignore[valid-type]


def make_envelope(topic_name: str, payload: BaseModel, *, producer: str, correlation_id: str,
                  causation_id: str | None = None, event_id: uuid.UUID | None = None) -> Envelope[Any]:
    """The envelope of ``payload`` on ``topic_name`` (its contract checked)."""
    spec = lookup_topic(topic_name)
    if not isinstance(payload, spec.payload):
        raise TypeError(f"{topic_name} carries {spec.payload.__name__}, not {type(payload).__name__}")
    return envelope_type(spec.payload)(
        event_id=event_id or uuid.uuid4(),
        event_type=spec.event_type,
        schema_version=spec.schema_version,
        occurred_at=utc_now(),
        correlation_id=correlation_id,
        causation_id=causation_id,
        producer=producer,
        payload=payload,
    )


def envelope_bytes(topic_name: str, payload: BaseModel, **fields: Any) -> bytes:
    """``encode(make_envelope(...))``: the bytes a producer (or an outbox row) carries."""
    return encode(make_envelope(topic_name, payload, **fields))


def decode(spec: Topic, value: bytes) -> Envelope[Any]:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UndecodableMessage(f"value is not UTF-8: {exc}") from None
    try:
        envelope = envelope_type(spec.payload).model_validate_json(text)
    except ValidationError as exc:
        errs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise UndecodableMessage(f"invalid {spec.event_type} envelope: {errs}") from None
    if envelope.event_type != spec.event_type:
        raise UndecodableMessage(
            f"event_type {envelope.event_type!r} does not belong on {spec.name} ({spec.event_type})"
        )
    if envelope.schema_version > spec.schema_version:
        raise UndecodableMessage(
            f"schema_version {envelope.schema_version} is newer than this consumer's "
            f"{spec.schema_version}"
        )
    return envelope
