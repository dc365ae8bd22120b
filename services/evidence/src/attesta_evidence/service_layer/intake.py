"""Intake: turn a run, a fetched ground-truth source or an AI engine's raw response (collected
by the collector) into stored evidence, atomically with the
``evidence.recorded.v1`` event (transactional outbox; the relay publishes it).

Idempotent by content addressing and a unique reference: a redelivered event finds its bytes
and its reference already stored, changes nothing and stages no event. What was written is
counted on ``/metrics`` (``adapters.telemetry.INTAKE``) once the transaction committed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from attesta_contracts import derived_id, utc_now
from attesta_contracts.collection import EngineResponseCaptured
from attesta_contracts.evidence import EvidenceRefKind
from attesta_contracts.groundtruth import GroundTruthSourceFetched
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import EVIDENCE_RECORDED
from attesta_evidence.adapters.telemetry import INTAKE
from attesta_evidence.domain.commands import Intake as Intake  # re-exported: tests, benchmarks
from attesta_evidence.domain.model import RUN_MEDIA_TYPE, IncomingEvidence, RecordOutcome, Reference
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
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


async def record_evidence(uow: UnitOfWork, events: Producer, incoming: IncomingEvidence,
                          *, correlation_id: str, causation_id: str | None) -> RecordOutcome:
    """``record_evidence_batch`` of one item (the HTTP API and tools)."""
    return (await record_evidence_batch(uow, events, [Intake(incoming, correlation_id,
                                                              causation_id)]))[0]


async def record_evidence_batch(uow: UnitOfWork, events: Producer,
                                batch: Sequence[Intake]) -> list[RecordOutcome]:
    """Group commit: the whole batch in one transaction (evidence rows, log leaves and
    subtrees, references, one outbox event per new reference), in list order."""
    async with uow:
        outcomes = await uow.evidence.record_many([i.incoming for i in batch])
        occurred_at = utc_now()
        # The event ids are derived from references this transaction inserted, so none can be
        # staged yet: the outbox's fast path (no conflict check) applies.
        await uow.outbox.add_new([
            recorded_event(item, outcome, events.producer, occurred_at)
            for item, outcome in zip(batch, outcomes, strict=True) if outcome.new_reference])
        await uow.commit()
    # Committed: count it (a transaction that failed raised above and counts nothing), one
    # increment per label set and batch.
    tally = Counter((item.incoming.reference.kind.value, intake_outcome(outcome))
                    for item, outcome in zip(batch, outcomes, strict=True))
    for (kind, outcome_name), n in tally.items():
        INTAKE.labels(kind, outcome_name).inc(n)
    return outcomes


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
