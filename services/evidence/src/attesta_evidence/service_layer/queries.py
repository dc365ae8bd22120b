"""What the evidence API's queries return (their handlers are in ``handlers.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from attesta_evidence.domain.model import StoredEvidence, TreeHeadRow


@dataclass(frozen=True)
class PublicView:
    evidence: StoredEvidence
    reference_counts: dict[str, int]
    head: TreeHeadRow  # a signed head that includes the evidence
    leaf_hash: bytes
    audit_path: list[bytes]


@dataclass(frozen=True)
class ContentCheck:
    match: bool  # the stored bytes themselves equal the given ones, not only their hash
    computed_sha256: str
    computed_recorded: bool  # the given bytes are stored evidence too (under their own hash)
    computed_size_bytes: int


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
