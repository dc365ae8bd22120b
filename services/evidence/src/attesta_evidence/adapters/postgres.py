"""PostgreSQL side of the evidence store and the Merkle log (asyncpg).

Concurrency: a batch takes ``pg_advisory_xact_lock(LOG_APPEND_LOCK)`` for the rest of its
transaction, reads the next index and what is already stored under it, and writes the evidence
rows, the leaves and every perfect subtree they complete, and the new references. So indices
are assigned in commit order, without gaps (a rolled-back transaction used no index), however
many consumers run (group commit: one transaction, one lock, one statement per table for a
whole batch). A batch of redeliveries takes the lock too: it waits for the writer ahead of it
(milliseconds) and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg

from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import (
    IncomingEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow)
from attesta_evidence.service_layer.unit_of_work import EvidenceRepository, LogRepository
from attesta_platform.unit_of_work import PostgresUnitOfWork

# Arbitrary, fixed 64-bit keys: "the evidence log's append lock" and "the tree-head signing
# lock" in this database.
LOG_APPEND_LOCK = 0x6174_7465_7374_6101
TREE_HEAD_LOCK = 0x6174_7465_7374_6102


_EVIDENCE_COLUMNS = "sha256, media_type, size_bytes, first_recorded_at, log_index"


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset without the reset query: this service never changes session state (no SET,
    no LISTEN, no session advisory locks; its locks end with their transaction). asyncpg still
    rolls back any open transaction before calling this. Saves a round trip per request."""


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10,
                      timeout: float = 20.0, **options: Any) -> asyncpg.Pool:
    """The service's pool; ``options`` go to ``asyncpg.create_pool`` (benchmarks pass a
    connection class that times statements)."""
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                                     reset=_keep_session, **options)


class EvidenceUnitOfWork(PostgresUnitOfWork):
    evidence: EvidenceRepository
    log: LogRepository

    def bind(self, conn: asyncpg.Connection) -> None:
        self.evidence = PostgresEvidence(conn)
        self.log = PostgresLog(conn)


def _stored(row: asyncpg.Record) -> StoredEvidence:
    return StoredEvidence(row["sha256"], row["media_type"], row["size_bytes"],
                          row["first_recorded_at"], row["log_index"])


class PostgresEvidence:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.log = PostgresLog(conn)

    async def get(self, sha256: str) -> StoredEvidence | None:
        row = await self.conn.fetchrow(
            f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE sha256 = $1", sha256)
        return _stored(row) if row else None

    async def public_view(self, sha256: str) -> tuple[StoredEvidence, dict[str, int]] | None:
        """In one round trip."""
        row = await self.conn.fetchrow(
            f"SELECT {_EVIDENCE_COLUMNS}, "
            "ARRAY(SELECT kind || ' ' || count(*) FROM evidence_references r "
            "      WHERE r.sha256 = e.sha256 GROUP BY kind ORDER BY kind) AS counts "
            "FROM evidence e WHERE sha256 = $1", sha256)
        if row is None:
            return None
        counts = {kind: int(n) for kind, n in (c.split(" ") for c in row["counts"])}
        return _stored(row), counts

    async def content(self, sha256: str) -> bytes | None:
        data = await self.conn.fetchval("SELECT content FROM evidence WHERE sha256 = $1", sha256)
        return bytes(data) if data is not None else None

    async def references(self, sha256: str, workspace_id: str) -> list[StoredReference]:
        return [StoredReference(r["kind"], r["ref_id"], r["recorded_at"]) for r in await self.conn.fetch(
            "SELECT kind, ref_id, recorded_at FROM evidence_references "
            "WHERE sha256 = $1 AND workspace_id = $2 ORDER BY recorded_at, id", sha256, workspace_id)]

    async def leaves(self, start: int, end: int) -> list[StoredEvidence]:
        rows = await self.conn.fetch(
            f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE log_index >= $1 AND log_index < $2 "
            "ORDER BY log_index", start, end)
        return [_stored(r) for r in rows]

    async def record_many(self, items: Sequence[IncomingEvidence]) -> list[RecordOutcome]:
        """Under the append lock, one query reads what the batch finds stored (each item's
        evidence and whether its reference exists), the next log index and the recording
        time; then the new evidence rows, log nodes and references go in by COPY, which the
        lock makes safe: no other writer can add the same keys meanwhile. Call inside the unit
        of work that stages the outbox events."""
        if not items:
            return []
        conn = self.conn
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOG_APPEND_LOCK)
        keys = [_reference_key(i) for i in items]
        rows = await conn.fetch(_BATCH_STATE, *map(list, zip(*keys, strict=True)))
        start, at = rows[0]["next_index"], rows[0]["at"]
        known = {r["sha256"]: _stored(r) for r in rows if r["log_index"] is not None}
        stored_refs = {key for key, r in zip(keys, rows, strict=True) if r["reference_stored"]}
        fresh = {i.sha256: i for i in items if i.sha256 not in known}  # first of each content
        if fresh:
            # One recording time per batch, the database's clock read under the lock: times
            # grow with the log in commit order.
            stored = [StoredEvidence(i.sha256, i.media_type, len(i.content), at, start + n)
                      for n, i in enumerate(fresh.values())]
            await conn.copy_records_to_table(
                "evidence", columns=("sha256", "content", "media_type", "size_bytes",
                                     "first_recorded_at", "log_index"),
                records=[(e.sha256, i.content, e.media_type, e.size_bytes, at, e.log_index)
                         for e, i in zip(stored, fresh.values(), strict=True)])
            known.update((e.sha256, e) for e in stored)
            await self.log.append_leaves(start, [merkle.leaf_hash(e.entry) for e in stored])
        new_refs = list(dict.fromkeys(k for k in keys if k not in stored_refs))
        if new_refs:
            await conn.copy_records_to_table(
                "evidence_references", columns=("sha256", "kind", "workspace_id", "ref_id"),
                records=new_refs)
        outcomes = []
        unseen_content, unseen_refs = set(fresh), set(new_refs)
        for item, key in zip(items, keys, strict=True):
            # A repeat inside the batch finds its content and reference stored by the first.
            outcomes.append(RecordOutcome(known[item.sha256], item.sha256 in unseen_content,
                                          key in unseen_refs))
            unseen_content.discard(item.sha256)
            unseen_refs.discard(key)
        return outcomes


def _reference_key(item: IncomingEvidence) -> tuple[str, str, str, str]:
    ref = item.reference
    return item.sha256, ref.kind.value, ref.workspace_id, ref.ref_id


# Per item, in order: its stored evidence (NULLs when new) and whether its reference is stored;
# on every row the next log index and the time. Each LATERAL subquery has a LIMIT so the planner
# cannot flatten it into a join, which it would be free to run as a hash join over a sequential
# scan of the whole table: every lookup stays one index probe, however large the tables grow.
_BATCH_STATE = f"""
SELECT e.*, r.reference_stored IS NOT NULL AS reference_stored,
       (SELECT coalesce(max(idx) + 1, 0) FROM log_nodes WHERE level = 0) AS next_index,
       clock_timestamp() AS at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
     AS b(sha256, kind, workspace_id, ref_id, ord)
LEFT JOIN LATERAL (SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE sha256 = b.sha256 LIMIT 1) e
    ON true
LEFT JOIN LATERAL (SELECT true AS reference_stored FROM evidence_references
                   WHERE sha256 = b.sha256 AND kind = b.kind AND workspace_id = b.workspace_id
                   AND ref_id = b.ref_id LIMIT 1) r ON true
ORDER BY b.ord
"""


class PostgresLog:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def size(self) -> int:
        last = await self.conn.fetchval("SELECT max(idx) FROM log_nodes WHERE level = 0")
        return 0 if last is None else last + 1

    async def append_leaves(self, start: int, leaves: Sequence[bytes]) -> None:
        """Write leaves ``start..`` and every perfect subtree they complete, in one statement;
        the left children made before this batch are read in one query."""
        made: dict[merkle.NodeId, bytes] = {}
        plan = [(start + i, merkle.new_perfect_nodes(start + i)) for i in range(len(leaves))]
        produced = {(0, index) for index, _ in plan} | {new for _, done in plan for new, _, _ in done}
        made.update(await self.fetch_nodes([left for _, done in plan for _, left, _ in done
                                            if left not in produced]))
        rows: list[tuple[int, int, bytes]] = []
        for (index, completed), leaf in zip(plan, leaves, strict=True):
            made[(0, index)] = leaf
            rows.append((0, index, leaf))
            right = leaf
            for new, left, _ in completed:
                right = merkle.node_hash(made[left], right)
                made[new] = right
                rows.append((new[0], new[1], right))
        await self.conn.copy_records_to_table("log_nodes", columns=("level", "idx", "hash"),
                                              records=rows)

    async def fetch_nodes(self, ids: Iterable[merkle.NodeId]) -> dict[merkle.NodeId, bytes]:
        wanted = list(set(ids))
        if not wanted:
            return {}
        # One primary-key lookup per wanted node, whatever the planner's statistics say (a join
        # against the unnest would be free to seq-scan the whole table).
        rows = await self.conn.fetch(
            "SELECT w.level, w.idx, (SELECT n.hash FROM log_nodes n "
            "WHERE n.level = w.level AND n.idx = w.idx) AS hash "
            "FROM unnest($1::smallint[], $2::bigint[]) AS w(level, idx)",
            [w[0] for w in wanted], [w[1] for w in wanted])
        found = {(r["level"], r["idx"]): bytes(r["hash"]) for r in rows if r["hash"] is not None}
        missing = set(wanted) - found.keys()
        if missing:
            raise LookupError(f"log nodes missing from the store: {sorted(missing)[:5]}")
        return found

    async def range_hashes(self, ranges: list[merkle.Range]) -> list[bytes]:
        """Reading every needed stored subtree hash in one query."""
        nodes = await self.fetch_nodes(merkle.nodes_needed(ranges))
        return [merkle.range_hash(s, e, nodes) for s, e in ranges]

    async def latest_head(self) -> TreeHeadRow | None:
        row = await self.conn.fetchrow(
            "SELECT tree_size, root_hash, timestamp_ms, signature, key_id FROM tree_heads "
            "ORDER BY tree_size DESC, timestamp_ms DESC LIMIT 1")
        if row is None:
            return None
        return TreeHeadRow(row["tree_size"], bytes(row["root_hash"]), row["timestamp_ms"],
                           row["signature"], row["key_id"])

    async def add_head(self, head: TreeHeadRow) -> bool:
        return bool(await self.conn.fetchval(
            "INSERT INTO tree_heads (tree_size, root_hash, timestamp_ms, signature, key_id) "
            "VALUES ($1, $2, $3, $4, $5) "
            "ON CONFLICT ON CONSTRAINT tree_heads_once_per_size_and_key DO NOTHING RETURNING true",
            head.tree_size, head.root_hash, head.timestamp_ms, head.signature, head.key_id))

    async def lock_signing(self) -> None:
        await self.conn.execute("SELECT pg_advisory_xact_lock($1)", TREE_HEAD_LOCK)
