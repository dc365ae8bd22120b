"""One contract for the evidence repositories and unit of work, run against the in-memory fakes
(``adapters/memory.py``) and against PostgreSQL (a fresh migrated database), so the fakes the
service-layer unit tests use behave like production. Then the service layer on the fakes."""

from __future__ import annotations

import hashlib
from functools import partial

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_contracts import Envelope, derived_id
from attesta_contracts.evidence import EvidenceRecorded, EvidenceReference, EvidenceRefKind
from attesta_evidence.adapters.memory import EvidenceState, InMemoryEvidenceUnitOfWork
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import IncomingEvidence, Reference, TreeHeadRow
from attesta_evidence.domain.commands import (
    CheckContent, GetPublicEvidence, GetWorkspaceEvidence, Intake, RecordEvidence)
from attesta_evidence.service_layer.errors import NotFound
from attesta_evidence.service_layer.handlers import (
    check_content, get_public_evidence, get_workspace_evidence, record_evidence)
from attesta_evidence.service_layer.log import OutOfRange, TransparencyLog
from attesta_platform.messaging import Messaging, make_envelope


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def new_uow(request):
    """A factory of units of work on one fresh store."""
    if request.param == "memory":
        return partial(InMemoryEvidenceUnitOfWork, EvidenceState())
    from attesta_evidence.adapters.postgres import EvidenceUnitOfWork

    return partial(EvidenceUnitOfWork, request.getfixturevalue("app_pool"))


def item(text: str, ref: str = "run-1", ws: str = "ws-1",
         kind: EvidenceRefKind = EvidenceRefKind.RUN) -> IncomingEvidence:
    return IncomingEvidence.build(text, hashlib.sha256(text.encode()).hexdigest(),
                                  "text/plain; charset=utf-8", Reference(kind, ref, ws), 1 << 20)


async def test_content_is_stored_once_in_log_order_and_references_once(new_uow):
    async with new_uow() as uow:
        first = await uow.evidence.record_many([item("a"), item("b"), item("a", ref="run-2"),
                                                item("a")])
        await uow.commit()
    assert [(o.evidence.log_index, o.new_content, o.new_reference) for o in first] == [
        (0, True, True), (1, True, True), (0, False, True), (0, False, False)]
    async with new_uow() as uow:
        again = await uow.evidence.record_many([item("b"), item("c", ref="r", ws="ws-2")])
        await uow.commit()
    assert [(o.evidence.log_index, o.new_content, o.new_reference) for o in again] == [
        (1, False, False), (2, True, True)]
    async with new_uow().read() as uow:
        sha_a = first[0].evidence.sha256
        assert await uow.evidence.content(sha_a) == b"a"
        stored, counts = await uow.evidence.public_view(sha_a)
        assert stored == first[0].evidence and counts == {"run": 2}
        assert [r.ref_id for r in await uow.evidence.references(sha_a, "ws-1")] == ["run-1", "run-2"]
        assert await uow.evidence.references(sha_a, "ws-2") == []
        assert [e.log_index for e in await uow.evidence.leaves(1, 10)] == [1, 2]
        assert await uow.evidence.get("0" * 64) is None and await uow.evidence.content("0" * 64) is None
        assert await uow.log.size() == 3


async def test_a_batch_left_without_commit_uses_no_log_index(new_uow):
    async with new_uow() as uow:
        await uow.evidence.record_many([item("gone")])
    async with new_uow() as uow:
        [kept] = await uow.evidence.record_many([item("kept")])
        await uow.commit()
    assert kept.evidence.log_index == 0 and kept.new_content


async def test_range_hashes_are_the_merkle_tree_of_the_entries(new_uow):
    texts = [f"entry {i}" for i in range(7)]
    async with new_uow() as uow:
        outcomes = await uow.evidence.record_many([item(t, ref=t) for t in texts])
        await uow.commit()
    tree = merkle.MemoryTree.from_entries(o.evidence.entry for o in outcomes)
    async with new_uow().read() as uow:
        assert await uow.log.range_hashes([(0, 7), (0, 4), (2, 3)]) == [
            tree.root(), tree.root(4), merkle.leaf_hash(outcomes[2].evidence.entry)]
        with pytest.raises(LookupError):
            await uow.log.range_hashes([(0, 8)])


async def test_tree_heads_once_per_size_and_key_latest_first(new_uow):
    heads = [TreeHeadRow(1, b"r" * 32, 10, "sig", "k1"), TreeHeadRow(2, b"s" * 32, 5, "sig", "k1"),
             TreeHeadRow(2, b"s" * 32, 7, "sig", "k2")]
    async with new_uow() as uow:
        assert await uow.log.latest_head() is None
        await uow.log.lock_signing()
        assert [await uow.log.add_head(h) for h in heads] == [True, True, True]
        assert not await uow.log.add_head(TreeHeadRow(1, b"x" * 32, 99, "sig", "k1"))
        await uow.commit()
    async with new_uow().read() as uow:
        assert await uow.log.latest_head() == heads[2]


async def test_the_outbox_is_part_of_the_unit_of_work(new_uow):
    import uuid

    from attesta_platform.outbox import OutboxRow

    row = OutboxRow("t.v1", "k", uuid.uuid4(), b"{}")
    async with new_uow() as uow:
        await uow.outbox.add([row])
    async with new_uow() as uow:  # the first rolled back: the event id is free
        await uow.outbox.add_new([row])
        await uow.commit()


async def test_every_staged_event_is_the_contracts_envelope_of_its_new_reference(new_uow):
    """The intake writes evidence.recorded.v1 bytes straight from the stored rows: parsed with
    the contract's model they are the event of each new reference, and as JSON they are what
    the pydantic envelope of the same event serialises to (datetimes spelled alike)."""
    batch = [Intake(item(f"text {i % 3}", ref=f"run-{i % 2}", ws=f"ws-{i % 2}"), f"corr-{i}",
                    None if i % 2 else f"cause-{i}") for i in range(12)]
    batch.append(Intake(item("text 0", ref="brand https://b.example/",
                             kind=EvidenceRefKind.GROUND_TRUTH_SOURCE), "corr-src", None))
    outcomes = await record_evidence(RecordEvidence(tuple(batch)), new_uow(),
                                     Messaging("127.0.0.1:1", "t"))
    again = await record_evidence(RecordEvidence(tuple(batch[:3])), new_uow(),
                                  Messaging("127.0.0.1:1", "t"))
    assert not any(o.new_reference for o in again)  # a redelivery stages nothing
    uow = new_uow()
    if isinstance(uow, InMemoryEvidenceUnitOfWork):
        staged = [r.value for r in uow.state.outbox]
    else:
        async with uow.read():
            staged = [bytes(v) for v in await uow.connection.fetchval(
                "SELECT array_agg(value ORDER BY id) FROM messaging_outbox")]
    expected = []
    for intake, outcome in zip(batch, outcomes, strict=True):
        if not outcome.new_reference:
            continue
        ref, stored = intake.incoming.reference, outcome.evidence
        payload = EvidenceRecorded(
            sha256=stored.sha256, media_type=stored.media_type, size_bytes=stored.size_bytes,
            first_recorded_at=stored.first_recorded_at,
            reference=EvidenceReference(kind=ref.kind, ref_id=ref.ref_id),
            new_content=outcome.new_content, log_index=stored.log_index,
            workspace_id=ref.workspace_id)
        expected.append(make_envelope(
            "evidence.recorded.v1", payload, producer="t", correlation_id=intake.correlation_id,
            causation_id=intake.causation_id,
            event_id=derived_id("evidence.recorded.v1", stored.sha256, ref.kind.value,
                                ref.workspace_id, ref.ref_id)))
    assert len(staged) == len(expected) == 7  # 6 (text, run) pairs + the source
    for value, want in zip(staged, expected, strict=True):
        parsed = Envelope[EvidenceRecorded].model_validate_json(value)
        assert parsed.model_copy(update={"occurred_at": want.occurred_at}) == want
        as_json = orjson.loads(value)
        assert as_json.pop("occurred_at").endswith("Z")
        assert as_json == {k: v for k, v in want.model_dump(mode="json").items()
                           if k != "occurred_at"}


# -- the service layer on the fakes ------------------------------------------------------------
@pytest.mark.unit
async def test_intake_stages_one_event_per_new_reference_and_proofs_verify():
    state = EvidenceState()
    new_uow = partial(InMemoryEvidenceUnitOfWork, state)
    events = Messaging("127.0.0.1:1", "t")  # builds envelopes only; nothing is sent
    batch = [Intake(item("the answer", ref=f"run-{i % 2}"), "c", None) for i in range(3)]
    outcomes = await record_evidence(RecordEvidence(tuple(batch)), new_uow(), events)
    assert [o.new_reference for o in outcomes] == [True, True, False]
    assert [r.topic for r in state.outbox] == ["evidence.recorded.v1"] * 2
    tlog = TransparencyLog(new_uow, Ed25519PrivateKey.generate())
    sha = outcomes[0].evidence.sha256
    view = await get_public_evidence(GetPublicEvidence(sha), new_uow(), tlog)
    assert view is not None and view.reference_counts == {"run": 2}
    assert merkle.verify_inclusion(0, view.head.tree_size, view.leaf_hash, view.audit_path,
                                   view.head.root_hash)
    checked = await check_content(CheckContent(sha, "the answer"), new_uow())
    assert checked is not None and checked.match
    with pytest.raises(NotFound):  # no view for a workspace that holds no reference
        await get_workspace_evidence(GetWorkspaceEvidence(sha, "ws-other"), new_uow())
    with pytest.raises(OutOfRange):
        await tlog.inclusion(0, 5)
