"""What the HTTP API reads: public views of stored evidence and the workspace's own view.

Nothing here returns content publicly; a content check compares bytes on the server."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from attesta_evidence.domain.model import StoredEvidence, StoredReference, TreeHeadRow, sha256_hex
from attesta_evidence.service_layer.log import TransparencyLog
from attesta_evidence.service_layer.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class PublicView:
    evidence: StoredEvidence
    reference_counts: dict[str, int]
    head: TreeHeadRow  # a signed head that includes the evidence
    leaf_hash: bytes
    audit_path: list[bytes]


async def public_view(uow: UnitOfWork, tlog: TransparencyLog, sha256: str) -> PublicView | None:
    async with uow.read():
        found = await uow.evidence.public_view(sha256)
    if found is None:
        return None
    stored, counts = found
    # After the block above: signing may need a connection, and holding one meanwhile could
    # exhaust the pool under load.
    head = await tlog.head_covering(stored.log_index)
    leaf, path = await tlog.inclusion_at(stored.log_index, head.tree_size)
    return PublicView(stored, counts, head, leaf, path)


@dataclass(frozen=True)
class ContentCheck:
    match: bool  # the stored bytes themselves equal the given ones, not only their hash
    computed_sha256: str
    computed_recorded: bool  # the given bytes are stored evidence too (under their own hash)
    computed_size_bytes: int


async def check_content(uow: UnitOfWork, sha256: str, given: bytes) -> ContentCheck | None:
    """None when nothing is stored under ``sha256``."""
    computed = sha256_hex(given)
    async with uow.read():
        stored = await uow.evidence.content(sha256)
        if stored is None:
            return None
        match = stored == given
        recorded = match or await uow.evidence.get(computed) is not None
    return ContentCheck(match, computed, recorded, len(given))


InclusionProofHashes = tuple[bytes, list[bytes]]  # (leaf hash, audit path)
ConsistencyProofHashes = tuple[bytes, bytes, list[bytes]]  # (first root, second root, proof)


@dataclass(frozen=True)
class LeavesPage:
    start: int
    end: int  # at most the page limit past start
    tree_size: int  # of the latest signed head the range was checked against
    leaves: list[StoredEvidence]


@dataclass(frozen=True)
class LogKey:
    key_id: str
    public_key: Ed25519PublicKey


async def leaves(uow: UnitOfWork, start: int, end: int) -> list[StoredEvidence]:
    async with uow.read():
        return await uow.evidence.leaves(start, end)


async def workspace_view(uow: UnitOfWork, sha256: str, workspace_id: str
                         ) -> tuple[StoredEvidence, list[StoredReference]] | None:
    """The evidence with the workspace's own references; None when it holds none (the same
    answer as for unknown evidence: no probing across workspaces)."""
    async with uow.read():
        stored = await uow.evidence.get(sha256)
        refs = await uow.evidence.references(sha256, workspace_id) if stored else []
    return (stored, refs) if stored is not None and refs else None
