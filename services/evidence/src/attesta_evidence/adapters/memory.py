"""In-memory repositories that behave like the PostgreSQL ones (the fakes of the service
layer's unit tests; ``tests/test_stores.py`` runs one suite against both). Units of work that
share an ``EvidenceState`` are one database for tests that use them one after another."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import (
    IncomingEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow)
from attesta_evidence.service_layer.unit_of_work import EvidenceRepository, LogRepository
from attesta_platform.unit_of_work import InMemoryUnitOfWork, MemoryState


@dataclass
class EvidenceState(MemoryState):
    evidence: dict[str, tuple[StoredEvidence, bytes]] = field(default_factory=dict)
    # (sha256, kind, workspace_id, ref_id) -> recorded_at, in insertion order
    references: dict[tuple[str, str, str, str], datetime] = field(default_factory=dict)
    tree: merkle.MemoryTree = field(default_factory=merkle.MemoryTree)  # the stored subtrees
    heads: list[TreeHeadRow] = field(default_factory=list)


class InMemoryEvidence:
    def __init__(self, state: EvidenceState) -> None:
        self.state = state

    async def record_many(self, items: Sequence[IncomingEvidence]) -> list[RecordOutcome]:
        outcomes = []
        for item in items:
            new_content = item.sha256 not in self.state.evidence
            if new_content:
                stored = StoredEvidence(item.sha256, item.media_type, len(item.content),
                                        datetime.now(UTC), self.state.tree.size)
                self.state.evidence[item.sha256] = (stored, item.content)
                self.state.tree.append_leaf_hash(merkle.leaf_hash(stored.entry))
            ref = (item.sha256, item.reference.kind.value, item.reference.workspace_id,
                   item.reference.ref_id)
            new_reference = ref not in self.state.references
            self.state.references.setdefault(ref, datetime.now(UTC))
            outcomes.append(RecordOutcome(self.state.evidence[item.sha256][0], new_content,
                                          new_reference))
        return outcomes

    async def get(self, sha256: str) -> StoredEvidence | None:
        found = self.state.evidence.get(sha256)
        return found[0] if found else None

    async def public_view(self, sha256: str) -> tuple[StoredEvidence, dict[str, int]] | None:
        stored = await self.get(sha256)
        if stored is None:
            return None
        counts: dict[str, int] = {}
        for sha, kind, _, _ in self.state.references:
            if sha == sha256:
                counts[kind] = counts.get(kind, 0) + 1
        return stored, dict(sorted(counts.items()))

    async def content(self, sha256: str) -> bytes | None:
        found = self.state.evidence.get(sha256)
        return found[1] if found else None

    async def references(self, sha256: str, workspace_id: str) -> list[StoredReference]:
        return [StoredReference(kind, ref_id, at)
                for (sha, kind, ws, ref_id), at in self.state.references.items()
                if sha == sha256 and ws == workspace_id]

    async def leaves(self, start: int, end: int) -> list[StoredEvidence]:
        return sorted((e for e, _ in self.state.evidence.values() if start <= e.log_index < end),
                      key=lambda e: e.log_index)


class InMemoryLog:
    def __init__(self, state: EvidenceState) -> None:
        self.state = state

    async def size(self) -> int:
        return self.state.tree.size

    async def range_hashes(self, ranges: list[merkle.Range]) -> list[bytes]:
        nodes = self.state.tree.nodes
        missing = merkle.nodes_needed(ranges) - nodes.keys()
        if missing:
            raise LookupError(f"log nodes missing from the store: {sorted(missing)[:5]}")
        return [merkle.range_hash(s, e, nodes) for s, e in ranges]

    async def latest_head(self) -> TreeHeadRow | None:
        return max(self.state.heads, key=lambda h: (h.tree_size, h.timestamp_ms), default=None)

    async def add_head(self, head: TreeHeadRow) -> bool:
        if any((h.tree_size, h.key_id) == (head.tree_size, head.key_id) for h in self.state.heads):
            return False
        self.state.heads.append(head)
        return True

    async def lock_signing(self) -> None:
        """Nothing to wait for: a fake serves one task at a time."""


class InMemoryEvidenceUnitOfWork(InMemoryUnitOfWork):
    state: EvidenceState
    evidence: EvidenceRepository
    log: LogRepository

    def __init__(self, state: EvidenceState | None = None) -> None:
        super().__init__(state or EvidenceState())

    def bind(self) -> None:
        self.evidence = InMemoryEvidence(self.state)
        self.log = InMemoryLog(self.state)
