"""PostgreSQL side of the evidence store and the Merkle log (asyncpg).

Concurrency: a new leaf takes ``pg_advisory_xact_lock(LOG_APPEND_LOCK)`` for the rest of its
transaction, reads the next index under it, and writes the evidence row, the leaf and every
perfect subtree the leaf completes. So indices are assigned one at a time, in commit order,
without gaps (a rolled-back transaction used no index), however many consumers run.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    """Store the bytes once (appending them to the log) and the reference once. Call inside a
    transaction; the caller stages the outbox event in the same one."""
    stored = await get_evidence(conn, incoming.sha256)
    new_content = False
    if stored is None:
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOG_APPEND_LOCK)
        stored = await get_evidence(conn, incoming.sha256)  # a writer may have won meanwhile
        if stored is None:
            index = await log_size(conn)
            row = await conn.fetchrow(
                f"INSERT INTO evidence (sha256, content, media_type, size_bytes, log_index) "
                f"VALUES ($1, $2, $3, $4, $5) RETURNING {_EVIDENCE_COLUMNS}",
                incoming.sha256, incoming.content, incoming.media_type, len(incoming.content), index)
            stored = _stored(row)
            await append_leaf(conn, index, merkle.leaf_hash(stored.entry))
            new_content = True
    ref = incoming.reference
    inserted = await conn.fetchval(
        "INSERT INTO evidence_references (sha256, kind, ref_id, workspace_id) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT ON CONSTRAINT evidence_references_once DO NOTHING "
        "RETURNING true", stored.sha256, ref.kind.value, ref.ref_id, ref.workspace_id)
    return RecordOutcome(stored, new_content, bool(inserted))


async def log_size(conn: asyncpg.Connection) -> int:
    last = await conn.fetchval("SELECT max(idx) FROM log_nodes WHERE level = 0")
    return 0 if last is None else last + 1


async def append_leaf(conn: asyncpg.Connection, index: int, leaf: bytes) -> None:
    """Write leaf ``index`` and the perfect subtrees it completes (O(log n) rows)."""
    completed = merkle.new_perfect_nodes(index)
    lefts = await fetch_nodes(conn, [left for _, left, _ in completed])
    rows: list[tuple[int, int, bytes]] = [(0, index, leaf)]
    right = leaf
    for new, left, _ in completed:
        right = merkle.node_hash(lefts[left], right)
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
