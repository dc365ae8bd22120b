"""The evidence store on a real PostgreSQL: every refusal the database enforces, content
addressing, duplicate intake, gap-free log order under concurrent writers, and proofs read from
the stored subtree hashes."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from functools import partial

import asyncpg
import pytest

from attesta_contracts.evidence import EvidenceRefKind
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import IncomingEvidence, Reference
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_evidence.service_layer.log import OutOfRange, TransparencyLog
from attesta_platform.messaging import Messaging

pytestmark = pytest.mark.integration

TABLES = ("evidence", "evidence_references", "log_nodes", "tree_heads")


def incoming(text: str, ref: str = "run-1", ws: str = "ws-1",
             kind: EvidenceRefKind = EvidenceRefKind.RUN) -> IncomingEvidence:
    data = text.encode()
    return IncomingEvidence.build(text, hashlib.sha256(data).hexdigest(),
                                  "text/plain; charset=utf-8", Reference(kind, ref, ws), 1 << 20)


def events() -> Messaging:
    # Only its envelope() is used: events are staged in the outbox, never sent from here.
    return Messaging("127.0.0.1:1", "evidence-test")


async def record(pool, item: IncomingEvidence):
    return (await record_evidence(RecordEvidence((Intake(item, "c", None),)),
                                  EvidenceUnitOfWork(pool), events()))[0]


async def test_app_role_may_only_select_and_insert(evidence_db, app_pool, log_key):
    await record(app_pool, incoming("hello"))
    await TransparencyLog(partial(EvidenceUnitOfWork, app_pool), log_key).sign_latest()
    async with app_pool.acquire() as conn:
        statements = {
            "evidence": ["UPDATE evidence SET media_type = 'text/html'", "DELETE FROM evidence"],
            "evidence_references": ["UPDATE evidence_references SET ref_id = 'x'",
                                    "DELETE FROM evidence_references"],
            "log_nodes": ["UPDATE log_nodes SET hash = hash", "DELETE FROM log_nodes"],
            "tree_heads": ["UPDATE tree_heads SET signature = 'x'", "DELETE FROM tree_heads"],
        }
        for table in TABLES:
            for sql in [*statements[table], f"TRUNCATE {table} CASCADE",
                        f"ALTER TABLE {table} DISABLE TRIGGER ALL", f"DROP TABLE {table} CASCADE"]:
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(sql)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CREATE TABLE sneaky (x int)")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("SET session_replication_role = replica")
        assert await conn.fetchval("SELECT count(*) FROM evidence") == 1


async def test_triggers_refuse_update_delete_truncate_even_to_the_owner(evidence_db, app_pool,
                                                                       log_key):
    await record(app_pool, incoming("hello"))
    await TransparencyLog(partial(EvidenceUnitOfWork, app_pool), log_key).sign_latest()
    conn = await asyncpg.connect(evidence_db.admin_url)  # superuser, owner of the tables
    try:
        updates = {"evidence": "media_type = 'text/html'", "evidence_references": "ref_id = 'x'",
                   "log_nodes": "hash = hash", "tree_heads": "signature = 'x'"}
        for table in TABLES:
            for sql in (f"UPDATE {table} SET {updates[table]}", f"DELETE FROM {table}",
                        f"TRUNCATE {table} CASCADE"):
                with pytest.raises(asyncpg.RaiseError, match="append-only"):
                    await conn.execute(sql)
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") >= 1
    finally:
        await conn.close()


async def test_key_must_be_the_sha256_of_the_content(app_pool):
    good = hashlib.sha256(b"abc").hexdigest()
    insert = ("INSERT INTO evidence (sha256, content, media_type, size_bytes, log_index) "
              "VALUES ($1, $2, $3, $4, $5)")
    async with app_pool.acquire() as conn:
        cases = [
            (hashlib.sha256(b"abd").hexdigest(), b"abc", "text/plain", 3, 0, "key_is_sha256"),
            (good.upper(), b"abc", "text/plain", 3, 0, "key_is_sha256"),
            (good, b"abc", "text/plain", 4, 0, "size_is_content_length"),
            (good, b"abc", "text/plain\nx", 3, 0, "media_type_one_line"),
            (good, b"abc", "text/plain", 3, -1, "log_index_non_negative"),
        ]
        for sha, content, media, size, index, constraint in cases:
            with pytest.raises(asyncpg.CheckViolationError, match=constraint):
                await conn.execute(insert, sha, content, media, size, index)
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await conn.execute("INSERT INTO evidence_references (sha256, kind, ref_id, workspace_id)"
                               " VALUES ($1, 'run', 'r', 'w')", good)
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute("INSERT INTO log_nodes (level, idx, hash) VALUES (0, 0, $1)", b"short")


async def test_same_content_twice_is_one_record_with_both_references(app_pool):
    first = await record(app_pool, incoming("the answer", ref="run-a"))
    second = await record(app_pool, incoming("the answer", ref="run-b"))
    again = await record(app_pool, incoming("the answer", ref="run-b"))  # redelivery
    source = await record(app_pool, incoming("the answer", ref="brand-1 https://x.example/",
                                             kind=EvidenceRefKind.GROUND_TRUTH_SOURCE))
    assert (first.new_content, first.new_reference) == (True, True)
    assert (second.new_content, second.new_reference) == (False, True)
    assert (again.new_content, again.new_reference) == (False, False)
    assert source.new_reference and not source.new_content
    assert first.evidence == second.evidence == again.evidence
    async with EvidenceUnitOfWork(app_pool).read() as uow:
        assert await uow.connection.fetchval("SELECT count(*) FROM evidence") == 1
        assert (await uow.evidence.public_view(first.evidence.sha256))[1] == {
            "ground_truth_source": 1, "run": 2}
        assert await uow.log.size() == 1
        # one staged event per new reference, none for the redelivery
        assert await uow.connection.fetchval("SELECT count(*) FROM messaging_outbox") == 3
        stored = await uow.evidence.content(first.evidence.sha256)
    assert stored == b"the answer"


async def test_concurrent_writers_get_gap_free_deterministic_leaves(app_pool, log_key):
    texts = [f"answer number {i} \N{SNOWMAN}" for i in range(60)]
    dupes = [incoming("shared answer", ref=f"run-dup-{i}") for i in range(8)]
    results = await asyncio.gather(*(record(app_pool, incoming(t, ref=f"r{i}"))
                                     for i, t in enumerate(texts)),
                                   *(record(app_pool, d) for d in dupes))
    indices = sorted(r.evidence.log_index for r in results if r.new_content)
    assert indices == list(range(61))  # 60 distinct + the shared one, no gaps, no repeats
    assert sum(r.new_content for r in results[60:]) == 1
    async with EvidenceUnitOfWork(app_pool).read() as uow:
        leaves = await uow.evidence.leaves(0, 1000)
    assert [e.log_index for e in leaves] == list(range(61))
    tree = merkle.MemoryTree.from_entries(e.entry for e in leaves)
    tlog = TransparencyLog(partial(EvidenceUnitOfWork, app_pool), log_key)
    head = await tlog.sign_latest()
    assert head.tree_size == 61 and head.root_hash == tree.root()
    for index in (0, 1, 30, 59, 60):
        leaf, path = await tlog.inclusion(index, 61)
        assert leaf == merkle.leaf_hash(leaves[index].entry)
        assert path == tree.inclusion_proof(index, 61)
    for first in (1, 2, 7, 32, 60, 61):
        r1, r2, proof = await tlog.consistency(first, 61)
        assert (r1, r2) == (tree.root(first), tree.root(61))
        assert proof == tree.consistency_proof(first, 61)
    with pytest.raises(OutOfRange):
        await tlog.inclusion(61, 61)
    with pytest.raises(OutOfRange):
        await tlog.consistency(0, 61)
    with pytest.raises(OutOfRange):
        await tlog.consistency(5, 62)


async def test_group_commit_batches_interleaved_with_single_records_keep_one_gap_free_log(
        app_pool, log_key):
    """Batches (one transaction each; a repeated content and a repeated reference inside a
    batch) run concurrently with single records: the log is gap-free, every stored node
    matches an in-memory tree, each new reference stages one event."""
    def batch(tag: str, n: int) -> list[Intake]:
        items = [incoming(f"{tag} answer {i}", ref=f"{tag}-{i}") for i in range(n)]
        items += [incoming(f"{tag} answer 0", ref=f"{tag}-again"),  # known content, new ref
                  incoming(f"{tag} answer 1", ref=f"{tag}-1")]  # exact repeat
        return [Intake(i, "c", None) for i in items]

    results = await asyncio.gather(
        *(record_evidence(RecordEvidence(tuple(batch(f"b{k}", 25))), EvidenceUnitOfWork(app_pool),
                          events()) for k in range(4)),
        *(record(app_pool, incoming(f"single {i}", ref=f"s{i}")) for i in range(10)))
    batches, singles = results[:4], results[4:]
    for outcomes in batches:
        assert [o.new_content for o in outcomes] == [True] * 25 + [False, False]
        assert [o.new_reference for o in outcomes] == [True] * 26 + [False]
        assert outcomes[25].evidence == outcomes[0].evidence
    assert all(o.new_content for o in singles)
    async with EvidenceUnitOfWork(app_pool).read() as uow:
        leaves = await uow.evidence.leaves(0, 1000)
        staged = await uow.connection.fetchval("SELECT count(*) FROM messaging_outbox")
    assert [e.log_index for e in leaves] == list(range(110))
    assert staged == 4 * 26 + 10
    tree = merkle.MemoryTree.from_entries(e.entry for e in leaves)
    tlog = TransparencyLog(partial(EvidenceUnitOfWork, app_pool), log_key)
    head = await tlog.sign_latest()
    assert head.tree_size == 110 and head.root_hash == tree.root()
    for index in (0, 24, 25, 63, 109):
        leaf, path = await tlog.inclusion(index, 110)
        assert path == tree.inclusion_proof(index, 110)


async def test_tree_heads_are_signed_once_per_size_and_never_go_back_in_time(app_pool, log_key):
    ticks = iter([5_000, 4_000, 3_000])
    tlog = TransparencyLog(partial(EvidenceUnitOfWork, app_pool), log_key, clock_ms=lambda: next(ticks))
    empty = await tlog.sign_latest()
    assert (empty.tree_size, empty.root_hash) == (0, merkle.EMPTY_ROOT)
    assert await tlog.sign_latest() == empty  # nothing new: no new head
    await record(app_pool, incoming("one"))
    head = await tlog.head_covering(0)
    assert head.tree_size == 1 and head.timestamp_ms == 5_000  # clock went back: kept monotonic
    first_recorded = datetime.now(UTC)
    async with EvidenceUnitOfWork(app_pool).read() as uow:
        stored = (await uow.evidence.leaves(0, 1))[0]
    assert stored.first_recorded_at <= first_recorded
