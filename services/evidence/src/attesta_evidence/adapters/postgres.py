"""PostgreSQL side of the evidence store and the Merkle log (asyncpg).

Concurrency: a batch with new content takes ``pg_advisory_xact_lock(LOG_APPEND_LOCK)`` for the
rest of its transaction, reads the next index under it, and writes the evidence rows, the
leaves and every perfect subtree they complete. So indices are assigned in commit order, without
gaps (a rolled-back transaction used no index), however many consumers run (group commit: one
transaction, one lock, one statement per table for a whole batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import IncomingEvidence, leaf_entry

# An arbitrary, fixed 64-bit key: "the evidence log's append lock" in this database.
LOG_APPEND_LOCK = 0x6174_7465_7374_6101


@dataclass(frozen=True)
class StoredEvidence:
    sha256: str
    media_type: str
    size_bytes: int
    first_recorded_at: datetime
    log_index: int

    @property
    def entry(self) -> bytes:
        return leaf_entry(self.sha256, self.size_bytes, self.media_type, self.first_recorded_at)


@dataclass(frozen=True)
class RecordOutcome:
    evidence: StoredEvidence
    new_content: bool
    new_reference: bool


@dataclass(frozen=True)
class TreeHeadRow:
    tree_size: int
    root_hash: bytes
    timestamp_ms: int
    signature: str
    key_id: str


_EVIDENCE_COLUMNS = "sha256, media_type, size_bytes, first_recorded_at, log_index"


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset without the reset query: this service never changes session state (no SET,
    no LISTEN, no session advisory locks; its locks end with their transaction). asyncpg still
    rolls back any open transaction before calling this. Saves a round trip per request."""


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10,
                      timeout: float = 20.0) -> asyncpg.Pool:
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                                     reset=_keep_session)


def _stored(row: asyncpg.Record) -> StoredEvidence:
    return StoredEvidence(row["sha256"], row["media_type"], row["size_bytes"],
                          row["first_recorded_at"], row["log_index"])


async def get_evidence(conn: asyncpg.Connection, sha256: str) -> StoredEvidence | None:
    row = await conn.fetchrow(f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE sha256 = $1", sha256)
    return _stored(row) if row else None


async def get_public_view(conn: asyncpg.Connection, sha256: str
                          ) -> tuple[StoredEvidence, dict[str, int]] | None:
    """The evidence and its reference counts by kind, in one round trip."""
    row = await conn.fetchrow(
        f"SELECT {_EVIDENCE_COLUMNS}, "
        "ARRAY(SELECT kind || ' ' || count(*) FROM evidence_references r "
        "      WHERE r.sha256 = e.sha256 GROUP BY kind ORDER BY kind) AS counts "
        "FROM evidence e WHERE sha256 = $1", sha256)
    if row is None:
        return None
    counts = {kind: int(n) for kind, n in (c.split(" ") for c in row["counts"])}
    return _stored(row), counts


async def get_content(conn: asyncpg.Connection, sha256: str) -> bytes | None:
    data = await conn.fetchval("SELECT content FROM evidence WHERE sha256 = $1", sha256)
    return bytes(data) if data is not None else None


async def record(conn: asyncpg.Connection, incoming: IncomingEvidence) -> RecordOutcome:
    """``record_many`` of one item."""
    return (await record_many(conn, [incoming]))[0]


async def _evidence_of(conn: asyncpg.Connection, shas: list[str]) -> dict[str, StoredEvidence]:
    rows = await conn.fetch(
        f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE sha256 = ANY($1::text[])", shas)
    return {r["sha256"]: _stored(r) for r in rows}


async def record_many(conn: asyncpg.Connection, items: Sequence[IncomingEvidence]
                      ) -> list[RecordOutcome]:
    """Store each content once (appending new ones to the log, in list order, gap-free under
    the append lock taken once for the batch) and each reference once; one statement per
    table. Call inside a transaction; the caller stages the outbox events in the same one.
    Outcomes are in list order; a repeat inside the batch is ``unchanged``."""
    shas = list(dict.fromkeys(i.sha256 for i in items))
    known = await _evidence_of(conn, shas)
    new_content: set[str] = set()
    if len(known) < len(shas):
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOG_APPEND_LOCK)
        known.update(await _evidence_of(conn, [s for s in shas if s not in known]))  # a writer may have won
        fresh = {}
        for item in items:
            if item.sha256 not in known and item.sha256 not in fresh:
                fresh[item.sha256] = item
        if fresh:
            start = await log_size(conn)
            order = list(fresh.values())
            rows = await conn.fetch(
                f"INSERT INTO evidence (sha256, content, media_type, size_bytes, log_index) "
                f"SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bigint[], "
                f"$5::bigint[]) RETURNING {_EVIDENCE_COLUMNS}",
                [i.sha256 for i in order], [i.content for i in order],
                [i.media_type for i in order], [len(i.content) for i in order],
                list(range(start, start + len(order))))
            known.update({r["sha256"]: _stored(r) for r in rows})
            await append_leaves(conn, start, [merkle.leaf_hash(known[i.sha256].entry) for i in order])
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


async def log_size(conn: asyncpg.Connection) -> int:
    last = await conn.fetchval("SELECT max(idx) FROM log_nodes WHERE level = 0")
    return 0 if last is None else last + 1


async def append_leaves(conn: asyncpg.Connection, start: int, leaves: Sequence[bytes]) -> None:
    """Write leaves ``start..`` and every perfect subtree they complete, in one statement; the
    left children made before this batch are read in one query."""
    made: dict[merkle.NodeId, bytes] = {}
    plan = [(start + i, merkle.new_perfect_nodes(start + i)) for i in range(len(leaves))]
    produced = {(0, index) for index, _ in plan} | {new for _, done in plan for new, _, _ in done}
    made.update(await fetch_nodes(conn, [left for _, done in plan for _, left, _ in done
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
    await conn.execute(
        "INSERT INTO log_nodes (level, idx, hash) "
        "SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])",
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])


async def fetch_nodes(conn: asyncpg.Connection, ids: Iterable[merkle.NodeId]
                      ) -> dict[merkle.NodeId, bytes]:
    wanted = list(set(ids))
    if not wanted:
        return {}
    # One primary-key lookup per wanted node, whatever the planner's statistics say (a join
    # against the unnest would be free to seq-scan the whole table).
    rows = await conn.fetch(
        "SELECT w.level, w.idx, (SELECT n.hash FROM log_nodes n "
        "WHERE n.level = w.level AND n.idx = w.idx) AS hash "
        "FROM unnest($1::smallint[], $2::bigint[]) AS w(level, idx)",
        [w[0] for w in wanted], [w[1] for w in wanted])
    found = {(r["level"], r["idx"]): bytes(r["hash"]) for r in rows if r["hash"] is not None}
    missing = set(wanted) - found.keys()
    if missing:
        raise LookupError(f"log nodes missing from the store: {sorted(missing)[:5]}")
    return found


async def range_hashes(conn: asyncpg.Connection, ranges: list[merkle.Range]) -> list[bytes]:
    """MTH of each range, reading every needed stored subtree hash in one query."""
    nodes = await fetch_nodes(conn, merkle.nodes_needed(ranges))
    return [merkle.range_hash(s, e, nodes) for s, e in ranges]


async def latest_tree_head(conn: asyncpg.Connection) -> TreeHeadRow | None:
    row = await conn.fetchrow(
        "SELECT tree_size, root_hash, timestamp_ms, signature, key_id FROM tree_heads "
        "ORDER BY tree_size DESC, timestamp_ms DESC LIMIT 1")
    if row is None:
        return None
    return TreeHeadRow(row["tree_size"], bytes(row["root_hash"]), row["timestamp_ms"],
                       row["signature"], row["key_id"])


async def insert_tree_head(conn: asyncpg.Connection, head: TreeHeadRow) -> bool:
    return bool(await conn.fetchval(
        "INSERT INTO tree_heads (tree_size, root_hash, timestamp_ms, signature, key_id) "
        "VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT ON CONSTRAINT tree_heads_once_per_size_and_key DO NOTHING RETURNING true",
        head.tree_size, head.root_hash, head.timestamp_ms, head.signature, head.key_id))


async def reference_counts(conn: asyncpg.Connection, sha256: str) -> dict[str, int]:
    rows = await conn.fetch(
        "SELECT kind, count(*) AS n FROM evidence_references WHERE sha256 = $1 GROUP BY kind "
        "ORDER BY kind", sha256)
    return {r["kind"]: r["n"] for r in rows}


async def workspace_references(conn: asyncpg.Connection, sha256: str, workspace_id: str
                               ) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT kind, ref_id, recorded_at FROM evidence_references "
        "WHERE sha256 = $1 AND workspace_id = $2 ORDER BY recorded_at, id", sha256, workspace_id)


async def leaves(conn: asyncpg.Connection, start: int, end: int) -> list[StoredEvidence]:
    rows = await conn.fetch(
        f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE log_index >= $1 AND log_index < $2 "
        "ORDER BY log_index", start, end)
    return [_stored(r) for r in rows]
