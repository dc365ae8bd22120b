"""Intake: a run, a fetched ground-truth source or an AI engine's raw response (collected by
the collector) as evidence to record, and the ``evidence.recorded.v1`` event staged with it
(transactional outbox; the relay publishes it). ``handlers.record_evidence`` stores a batch.

Idempotent by content addressing and a unique reference: a redelivered event finds its bytes
and its reference already stored, changes nothing and stages no event. What was written is
counted on ``/metrics`` (``adapters.telemetry.INTAKE``) once the transaction committed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from attesta_contracts import derived_id
from attesta_contracts.collection import EngineResponseCaptured
from attesta_contracts.evidence import EvidenceRefKind
from attesta_contracts.groundtruth import GroundTruthSourceFetched
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import EVIDENCE_RECORDED
from attesta_evidence.domain.commands import Intake
from attesta_evidence.domain.model import RUN_MEDIA_TYPE, IncomingEvidence, RecordOutcome, Reference
from attesta_platform import outbox


class Producer(Protocol):
    """Who stages the events (``Messaging`` is one): its name goes in each envelope."""

    @property
    def producer(self) -> str: ...


def evidence_from_run(run: RunRecorded, max_bytes: int) -> IncomingEvidence:
    """The run's evidence is the answer's exact UTF-8 bytes."""
    return IncomingEvidence.build(run.answer, run.answer_sha256, RUN_MEDIA_TYPE,
                                  Reference(EvidenceRefKind.RUN, run.run_id, run.workspace_id),
                                  max_bytes)


def evidence_from_source(src: GroundTruthSourceFetched, max_bytes: int) -> IncomingEvidence:
    ref_id = f"{src.brand_id} {src.url}"  # the contract's spelling of a source reference
    return IncomingEvidence.build(src.content, src.sha256, src.media_type,
                                  Reference(EvidenceRefKind.GROUND_TRUTH_SOURCE, ref_id,
                                            src.workspace_id), max_bytes)


def evidence_from_engine_response(raw: EngineResponseCaptured, max_bytes: int) -> IncomingEvidence:
    """The engine's raw body, byte for byte, referenced by the run recorded from it."""
    return IncomingEvidence.build(raw.content, raw.sha256, raw.media_type,
                                  Reference(EvidenceRefKind.ENGINE_RESPONSE, raw.run_id,
                                            raw.workspace_id), max_bytes)


def recorded_event(item: Intake, outcome: RecordOutcome, producer: str,
                   occurred_at: datetime) -> outbox.OutboxRow:
    """``evidence.recorded.v1`` for a new reference, serialised straight from the stored row
    (``tests/test_stores.py`` parses every staged event with the contract's model)."""
    ref, stored = item.incoming.reference, outcome.evidence
    payload = {"sha256": stored.sha256, "media_type": stored.media_type,
               "size_bytes": stored.size_bytes, "first_recorded_at": stored.first_recorded_at,
               "reference": {"kind": ref.kind.value, "ref_id": ref.ref_id},
               "new_content": outcome.new_content, "log_index": stored.log_index,
               "workspace_id": ref.workspace_id}
    # Same reference, same event id: a downstream inbox drops a re-staged copy.
    event_id = derived_id(EVIDENCE_RECORDED, stored.sha256, ref.kind.value, ref.workspace_id,
                          ref.ref_id)
    return outbox.staged_json(EVIDENCE_RECORDED, stored.sha256, payload, event_id=event_id,
                              occurred_at=occurred_at, producer=producer,
                              correlation_id=item.correlation_id,
                              causation_id=item.causation_id)


def intake_outcome(outcome: RecordOutcome) -> str:
    """``stored`` (new bytes), ``duplicate`` (known bytes, new reference) or ``unchanged``."""
    if outcome.new_content:
        return "stored"
    return "duplicate" if outcome.new_reference else "unchanged"
