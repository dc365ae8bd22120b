"""Everything the evidence service can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``tlog``: the transparency log; ``events``: who stages the outbox events, its
name in each envelope); ``bootstrap.py`` binds them once. ``intake`` turns contract payloads
into evidence and ``queries`` holds the read models; the domain errors (``errors``) answer
"nothing" and "not that". Nothing here returns content publicly: a content check compares
bytes on the server.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from attesta_contracts import utc_now
from attesta_evidence.adapters.telemetry import INTAKE
from attesta_evidence.domain import commands as c
from attesta_evidence.domain.model import (
    InvalidEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow, sha256_hex,
    utf8_bytes)
from attesta_evidence.service_layer.errors import InvalidContent, NotFound, OutOfRange
from attesta_evidence.service_layer.intake import Producer, intake_outcome, recorded_event
from attesta_evidence.service_layer.log import TransparencyLog
from attesta_evidence.service_layer.queries import (
    ConsistencyProofHashes, ContentCheck, InclusionProofHashes, LeavesPage, LogKey, PublicView)
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
from attesta_platform.bus import Handler, Message


async def record_evidence(cmd: c.RecordEvidence, uow: UnitOfWork, events: Producer
                          ) -> list[RecordOutcome]:
    """Group commit: the whole batch in one transaction (evidence rows, log leaves and
    subtrees, references, one outbox event per new reference), outcomes in list order.
    Idempotent: a redelivered item finds its bytes and reference stored and stages nothing."""
    batch = cmd.items
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


async def sign_tree_head(cmd: c.SignTreeHead, tlog: TransparencyLog) -> TreeHeadRow:
    return await tlog.sign_latest()


async def get_tree_head(query: c.GetTreeHead, tlog: TransparencyLog) -> TreeHeadRow:
    return await tlog.fresh()


async def get_consistency_proof(query: c.GetConsistencyProof, tlog: TransparencyLog
                                ) -> ConsistencyProofHashes:
    return await tlog.consistency(query.first, query.second)


async def get_inclusion_proof(query: c.GetInclusionProof, tlog: TransparencyLog
                              ) -> InclusionProofHashes:
    return await tlog.inclusion(query.leaf_index, query.tree_size)


async def list_leaves(query: c.ListLeaves, uow: UnitOfWork, tlog: TransparencyLog) -> LeavesPage:
    head = await tlog.latest()
    start, end = query.start, query.end
    if not 0 <= start <= end <= head.tree_size:
        raise OutOfRange(f"need 0 <= start <= end <= {head.tree_size} (the latest signed size); "
                         f"got start={start}, end={end}")
    end = min(end, start + query.limit)
    async with uow.read():
        leaves = await uow.evidence.leaves(start, end)
    return LeavesPage(start, end, head.tree_size, leaves)


async def get_public_key(query: c.GetPublicKey, tlog: TransparencyLog) -> LogKey:
    return LogKey(tlog.key_id, tlog.public_key)


async def get_public_evidence(query: c.GetPublicEvidence, uow: UnitOfWork, tlog: TransparencyLog
                              ) -> PublicView:
    async with uow.read():
        found = await uow.evidence.public_view(query.sha256)
    if found is None:
        raise NotFound(f"no evidence with sha256 {query.sha256}")
    stored, counts = found
    # After the block above: signing may need a connection, and holding one meanwhile could
    # exhaust the pool under load.
    head = await tlog.head_covering(stored.log_index)
    leaf, path = await tlog.inclusion_at(stored.log_index, head.tree_size)
    return PublicView(stored, counts, head, leaf, path)


async def check_content(query: c.CheckContent, uow: UnitOfWork) -> ContentCheck:
    try:
        given = utf8_bytes(query.content)
    except InvalidEvidence as exc:
        raise InvalidContent(str(exc)) from None
    computed = sha256_hex(given)
    async with uow.read():
        stored = await uow.evidence.content(query.sha256)
        if stored is None:
            raise NotFound(f"no evidence with sha256 {query.sha256}")
        match = stored == given
        recorded = match or await uow.evidence.get(computed) is not None
    return ContentCheck(match, computed, recorded, len(given))


async def get_workspace_evidence(query: c.GetWorkspaceEvidence, uow: UnitOfWork
                                 ) -> tuple[StoredEvidence, list[StoredReference]]:
    """The evidence with the workspace's own references; NotFound when it holds none (the same
    answer as for unknown evidence: no probing across workspaces)."""
    async with uow.read():
        stored = await uow.evidence.get(query.sha256)
        refs = await uow.evidence.references(query.sha256, query.workspace_id) if stored else []
    if stored is None or not refs:
        raise NotFound(f"no evidence {query.sha256} referenced by this workspace")
    return stored, refs


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.RecordEvidence: record_evidence,
    c.SignTreeHead: sign_tree_head,
    c.GetTreeHead: get_tree_head,
    c.GetConsistencyProof: get_consistency_proof,
    c.GetInclusionProof: get_inclusion_proof,
    c.ListLeaves: list_leaves,
    c.GetPublicKey: get_public_key,
    c.GetPublicEvidence: get_public_evidence,
    c.CheckContent: check_content,
    c.GetWorkspaceEvidence: get_workspace_evidence,
}
