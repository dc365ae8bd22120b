"""Intake: turn a run, a fetched ground-truth source or an AI engine's raw response (collected
by the collector) into stored evidence, atomically with the
``evidence.recorded.v1`` event (transactional outbox; the relay publishes it).

Idempotent by content addressing and a unique reference: a redelivered event finds its bytes
and its reference already stored, changes nothing and stages no event. What was written is
counted on ``/metrics`` (``adapters.telemetry.INTAKE``) once the transaction committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from attesta_contracts import Envelope, derived_id
from attesta_contracts.collection import EngineResponseCaptured
from attesta_contracts.evidence import EvidenceRecorded, EvidenceReference, EvidenceRefKind
from attesta_contracts.groundtruth import GroundTruthSourceFetched
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import EVIDENCE_RECORDED
from attesta_evidence.adapters.telemetry import INTAKE
from attesta_evidence.domain.model import RUN_MEDIA_TYPE, IncomingEvidence, RecordOutcome, Reference
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
from attesta_platform import outbox
from attesta_platform.messaging import encode


class EnvelopeFactory(Protocol):
    def envelope(self, topic_name: str, payload: EvidenceRecorded, *, correlation_id: str,
                 causation_id: str | None = None, event_id=None) -> Envelope: ...


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


@dataclass(frozen=True)
class Intake:
    """One piece of evidence to record, with the ids of the message that brought it."""

    incoming: IncomingEvidence
    correlation_id: str
    causation_id: str | None


async def record_evidence(uow: UnitOfWork, events: EnvelopeFactory, incoming: IncomingEvidence,
                          *, correlation_id: str, causation_id: str | None) -> RecordOutcome:
    """``record_evidence_batch`` of one item (the HTTP API and tools)."""
    return (await record_evidence_batch(uow, events, [Intake(incoming, correlation_id,
                                                              causation_id)]))[0]


async def record_evidence_batch(uow: UnitOfWork, events: EnvelopeFactory,
                                batch: Sequence[Intake]) -> list[RecordOutcome]:
    """Group commit: the whole batch in one transaction (evidence rows, log leaves and
    subtrees, references, one outbox event per new reference), in list order."""
    async with uow:
        outcomes = await uow.evidence.record_many([i.incoming for i in batch])
        rows = []
        for item, outcome in zip(batch, outcomes, strict=True):
            if not outcome.new_reference:
                continue
            ref = item.incoming.reference
            stored = outcome.evidence
            payload = EvidenceRecorded(
                sha256=stored.sha256, media_type=stored.media_type, size_bytes=stored.size_bytes,
                first_recorded_at=stored.first_recorded_at,
                reference=EvidenceReference(kind=ref.kind, ref_id=ref.ref_id),
                new_content=outcome.new_content, log_index=stored.log_index,
                workspace_id=ref.workspace_id)
            env = events.envelope(
                EVIDENCE_RECORDED, payload, correlation_id=item.correlation_id,
                causation_id=item.causation_id,
                # same reference, same event id: downstream inboxes drop a re-staged copy
                event_id=derived_id(EVIDENCE_RECORDED, stored.sha256, ref.kind.value,
                                    ref.workspace_id, ref.ref_id))
            rows.append(outbox.OutboxRow(EVIDENCE_RECORDED, stored.sha256, env.event_id,
                                         encode(env)))
        await uow.outbox.add(rows)
        await uow.commit()
    # Committed: count it (a transaction that failed raised above and counts nothing).
    for item, outcome in zip(batch, outcomes, strict=True):
        INTAKE.labels(item.incoming.reference.kind.value, intake_outcome(outcome)).inc()
    return outcomes


def intake_outcome(outcome: RecordOutcome) -> str:
    """``stored`` (new bytes), ``duplicate`` (known bytes, new reference) or ``unchanged``."""
    if outcome.new_content:
        return "stored"
    return "duplicate" if outcome.new_reference else "unchanged"
