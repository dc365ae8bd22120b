"""Everything the evidence service can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``tlog``: the transparency log; ``events``: who stages the outbox events, its
name in each envelope); ``bootstrap.py`` binds them once. The use cases live in ``intake``,
``log`` and ``queries``; the handlers below raise the domain errors (``errors``) where those
answer "nothing".
"""

from __future__ import annotations

from typing import Any

from attesta_evidence.domain import commands as c
from attesta_evidence.domain.model import (
    InvalidEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow, utf8_bytes)
from attesta_evidence.service_layer import queries
from attesta_evidence.service_layer.errors import InvalidContent, NotFound, OutOfRange
from attesta_evidence.service_layer.intake import Producer, record_evidence_batch
from attesta_evidence.service_layer.log import TransparencyLog
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
from attesta_platform.bus import Handler, Message


async def record_evidence(cmd: c.RecordEvidence, uow: UnitOfWork, events: Producer
                          ) -> list[RecordOutcome]:
    return await record_evidence_batch(uow, events, cmd.items)


async def sign_tree_head(cmd: c.SignTreeHead, tlog: TransparencyLog) -> TreeHeadRow:
    return await tlog.sign_latest()


async def get_tree_head(query: c.GetTreeHead, tlog: TransparencyLog) -> TreeHeadRow:
    return await tlog.fresh()


async def get_consistency_proof(query: c.GetConsistencyProof, tlog: TransparencyLog
                                ) -> queries.ConsistencyProofHashes:
    return await tlog.consistency(query.first, query.second)


async def get_inclusion_proof(query: c.GetInclusionProof, tlog: TransparencyLog
                              ) -> queries.InclusionProofHashes:
    return await tlog.inclusion(query.leaf_index, query.tree_size)


async def list_leaves(query: c.ListLeaves, uow: UnitOfWork, tlog: TransparencyLog
                      ) -> queries.LeavesPage:
    head = await tlog.latest()
    start, end = query.start, query.end
    if not 0 <= start <= end <= head.tree_size:
        raise OutOfRange(f"need 0 <= start <= end <= {head.tree_size} (the latest signed size); "
                         f"got start={start}, end={end}")
    end = min(end, start + query.limit)
    return queries.LeavesPage(start, end, head.tree_size, await queries.leaves(uow, start, end))


async def get_public_key(query: c.GetPublicKey, tlog: TransparencyLog) -> queries.LogKey:
    return queries.LogKey(tlog.key_id, tlog.public_key)


async def get_public_evidence(query: c.GetPublicEvidence, uow: UnitOfWork, tlog: TransparencyLog
                              ) -> queries.PublicView:
    view = await queries.public_view(uow, tlog, query.sha256)
    if view is None:
        raise NotFound(f"no evidence with sha256 {query.sha256}")
    return view


async def check_content(query: c.CheckContent, uow: UnitOfWork) -> queries.ContentCheck:
    try:
        given = utf8_bytes(query.content)
    except InvalidEvidence as exc:
        raise InvalidContent(str(exc)) from None
    checked = await queries.check_content(uow, query.sha256, given)
    if checked is None:
        raise NotFound(f"no evidence with sha256 {query.sha256}")
    return checked


async def get_workspace_evidence(query: c.GetWorkspaceEvidence, uow: UnitOfWork
                                 ) -> tuple[StoredEvidence, list[StoredReference]]:
    found = await queries.workspace_view(uow, query.sha256, query.workspace_id)
    if found is None:  # the same answer either way: no cross-workspace probing
        raise NotFound(f"no evidence {query.sha256} referenced by this workspace")
    return found


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
