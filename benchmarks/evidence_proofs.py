"""Proof generation time of the evidence log at 10k, 100k and 1M leaves: O(log n).

A temporary evidence database (migrated with the service's own code) gets a log of the largest
size, its subtree hashes bulk-loaded with COPY exactly as the appender stores them (level 0 = leaf
hashes, level L = every perfect subtree of 2^L leaves). Then, for each tree size, the service's
own ``TransparencyLog.inclusion`` / ``.consistency`` (one PostgreSQL round trip for the stored
hashes, O(log n) of them, plus O(log n) hashing) is timed over random leaves, side by side with
the floor a store without subtree hashes has: read every leaf hash of the tree and recompute the
proof (O(n)). Every proof is verified, so the timing is of correct proofs.

    .venv/bin/python benchmarks/evidence_proofs.py [--sizes 10000,100000,1000000] [--samples 200]

Needs the infrastructure of `.state/env` (PostgreSQL). The 1M build takes about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from functools import partial

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.domain import merkle
from attesta_evidence.service_layer.log import TransparencyLog
from attesta_testing.evidence import migrated_database
from attesta_testing.infra import postgres_admin_url


def build_levels(n: int) -> list[list[bytes]]:
    """Every perfect subtree hash of an n-leaf tree, level by level (leaf i = b'leaf %d')."""
    level = [merkle.leaf_hash(b"leaf %d" % i) for i in range(n)]
    levels = [level]
    while len(level) > 1:
        level = [merkle.node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        levels.append(level)
    return levels


async def load(admin_url: str, levels: list[list[bytes]]) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        for lvl, hashes in enumerate(levels):
            await conn.copy_records_to_table(
                "log_nodes", columns=["level", "idx", "hash"],
                records=((lvl, i, h) for i, h in enumerate(hashes)))
        await conn.execute("ANALYZE log_nodes")
    finally:
        await conn.close()


def ms(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples) * 1000, samples[int(len(samples) * 0.99) - 1] * 1000


async def naive_inclusion(pool: asyncpg.Pool, index: int, size: int) -> list[bytes]:
    """The floor: no stored subtrees, so read the tree's leaf hashes and recompute."""
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT hash FROM log_nodes WHERE level = 0 AND idx < $1 "
                                "ORDER BY idx", size)
    tree = merkle.MemoryTree()
    for r in rows:
        tree.append_leaf_hash(bytes(r["hash"]))
    return tree.inclusion_proof(index, size)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--naive-samples", type=int, default=5)
    ap.add_argument("--naive-max", type=int, default=100_000,
                    help="skip the O(n) floor above this size (it only gets slower)")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rng = random.Random(7)

    async with migrated_database(postgres_admin_url(), prefix="bench_proofs") as db:
        t0 = time.perf_counter()
        levels = build_levels(sizes[-1])
        t1 = time.perf_counter()
        await load(db.admin_url, levels)
        t2 = time.perf_counter()
        rows = sum(len(x) for x in levels)
        print(f"built {sizes[-1]} leaves ({rows} stored subtree hashes): hashing "
              f"{t1 - t0:.1f}s, COPY {t2 - t1:.1f}s")
        pool = await asyncpg.create_pool(db.app_url, min_size=1, max_size=4)
        tlog = TransparencyLog(partial(EvidenceUnitOfWork, pool), Ed25519PrivateKey.generate())
        head = await tlog.sign_latest()
        assert head.tree_size == sizes[-1]
        print(f"\n{'leaves':>9} {'log2 n':>6} {'path':>4} | {'inclusion p50/p99 ms':>21} | "
              f"{'consistency p50/p99 ms':>23} | {'recompute-from-leaves p50 ms':>29} | ratio")
        for n in sizes:
            root = (await tlog.consistency(n, n))[1]
            inc, con, naive = [], [], []
            path_len = 0
            for _ in range(args.samples):
                i = rng.randrange(n)
                s = time.perf_counter()
                leaf, path = await tlog.inclusion(i, n)
                inc.append(time.perf_counter() - s)
                assert merkle.verify_inclusion(i, n, leaf, path, root)
                path_len = max(path_len, len(path))
                m = rng.randrange(1, n)
                s = time.perf_counter()
                r1, r2, proof = await tlog.consistency(m, n)
                con.append(time.perf_counter() - s)
                assert merkle.verify_consistency(m, n, r1, r2, proof)
            if n <= args.naive_max:
                for _ in range(args.naive_samples):
                    i = rng.randrange(n)
                    s = time.perf_counter()
                    proof = await naive_inclusion(pool, i, n)
                    naive.append(time.perf_counter() - s)
                    assert merkle.verify_inclusion(i, n, levels[0][i], proof, root)
            i50, i99 = ms(inc)
            c50, c99 = ms(con)
            n50 = statistics.median(naive) * 1000 if naive else float("nan")
            ratio = f"{n50 / i50:6.0f}x" if naive else "   (skipped)"
            print(f"{n:>9} {n.bit_length() - 1:>6} {path_len:>4} | {i50:>9.2f} / {i99:>9.2f} | "
                  f"{c50:>10.2f} / {c99:>10.2f} | {n50:>29.1f} | {ratio}")
        await pool.close()
    print("\nsamples per size:", args.samples, "(random leaves; every proof verified)")


if __name__ == "__main__":
    asyncio.run(main())
