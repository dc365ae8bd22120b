"""PostgreSQL side of the evidence store and the Merkle log (asyncpg).

Concurrency: a batch with new content takes ``pg_advisory_xact_lock(LOG_APPEND_LOCK)`` for the
rest of its transaction, reads the next index under it, and writes the evidence rows, the
leaves and every perfect subtree they complete. So indices are assigned in commit order, without
gaps (a rolled-back transaction used no index), however many consumers run (group commit: one
transaction, one lock, one statement per table for a whole batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import asyncpg

from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import (
    IncomingEvidence, RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow)
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
                      timeout: float = 20.0) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                                     reset=_keep_session)



class EvidenceUnitOfWork(PostgresUnitOfWork):
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

    async def _of(self, shas: list[str]) -> dict[str, StoredEvidence]:
        rows = await self.conn.fetch(
            f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE sha256 = ANY($1::text[])", shas)
        return {r["sha256"]: _stored(r) for r in rows}

    async def record_many(self, items: Sequence[IncomingEvidence]) -> list[RecordOutcome]:
        """One statement per table; the append lock is taken once for the batch, only when it
        has new content. Call inside the unit of work that stages the outbox events."""
        conn = self.conn
        shas = list(dict.fromkeys(i.sha256 for i in items))
        known = await self._of(shas)
        new_content: set[str] = set()
        if len(known) < len(shas):
            await conn.execute("SELECT pg_advisory_xact_lock($1)", LOG_APPEND_LOCK)
            known.update(await self._of([s for s in shas if s not in known]))  # a writer may have won
            fresh = {}
            for item in items:
                if item.sha256 not in known and item.sha256 not in fresh:
                    fresh[item.sha256] = item
            if fresh:
                start = await self.log.size()
                order = list(fresh.values())
                rows = await conn.fetch(
                    f"INSERT INTO evidence (sha256, content, media_type, size_bytes, log_index) "
                    f"SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bigint[], "
                    f"$5::bigint[]) RETURNING {_EVIDENCE_COLUMNS}",
                    [i.sha256 for i in order], [i.content for i in order],
                    [i.media_type for i in order], [len(i.content) for i in order],
                    list(range(start, start + len(order))))
                known.update({r["sha256"]: _stored(r) for r in rows})
                await self.log.append_leaves(start, [merkle.leaf_hash(known[i.sha256].entry)
                                                     for i in order])
                new_content = set(fresh)
        rows = await conn.fetch(
            "INSERT INTO evidence_references (sha256, kind, ref_id, workspace_id) "
            "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) "
            "ON CONFLICT ON CONSTRAINT evidence_references_once DO NOTHING "
            "RETURNING sha256, kind, workspace_id, ref_id",
            [i.sha256 for i in items], [i.reference.kind.value for i in items],
            [i.reference.ref_id for i in items], [i.reference.workspace_id for i in items])
        inserted = {(r["sha256"], r["kind"], r["workspace_id"], r["ref_id"]) for r in rows}
        outcomes = []
        for item in items:
            ref = (item.sha256, item.reference.kind.value, item.reference.workspace_id,
                   item.reference.ref_id)
            outcomes.append(RecordOutcome(known[item.sha256], item.sha256 in new_content,
                                          ref in inserted))
            new_content.discard(item.sha256)  # a repeat in the batch: stored by the first
            inserted.discard(ref)
        return outcomes


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
        await self.conn.execute(
            "INSERT INTO log_nodes (level, idx, hash) "
            "SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])",
            [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

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
