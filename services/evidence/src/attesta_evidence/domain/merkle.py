"""RFC 9162 Merkle tree hashing, proofs and proof verification. Pure: no I/O.

Proofs are built in two steps so a store can answer them with one round trip:
1. ``inclusion_ranges`` / ``consistency_ranges`` say *which* subtree hashes a proof holds, as
   leaf ranges ``[start, end)`` (RFC 9162 §2.1.3.1 PATH and §2.1.4.1 SUBPROOF);
2. every such range splits into at most log2(n) *perfect* subtrees (``perfect_nodes``), the ones
   a store keeps precomputed as ``(level, index)`` (level L, index i covers leaves
   ``[i*2^L, (i+1)*2^L)``). ``range_hash`` folds them back.
So a proof at any tree size costs O(log n) stored hashes and O(log n) hash operations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

Range = tuple[int, int]
NodeId = tuple[int, int]  # (level, index)

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """The largest power of two smaller than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


# -- which subtrees a proof is made of --------------------------------------------------------
def inclusion_ranges(index: int, size: int) -> list[Range]:
    """RFC 9162 PATH(index, D[0:size]) as leaf ranges, bottom-up."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is outside a tree of {size} leaves")
    out: list[Range] = []
    start, end = 0, size
    # Walk top-down, then reverse: the audit path is listed bottom-up.
    while end - start > 1:
        k = split_point(end - start)
        if index < start + k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start = start + k
    out.reverse()
    return out


def consistency_ranges(first: int, second: int) -> list[Range]:
    """RFC 9162 PROOF(first, D[0:second]) as leaf ranges, bottom-up (0 < first <= second)."""
    if not 0 < first <= second:
        raise ValueError(f"no consistency proof from {first} to {second} leaves")
    out: list[Range] = []
    start, end, m, whole = 0, second, first, True
    while True:
        n = end - start
        if m == n:
            if not whole:
                out.append((start, end))
            break
        k = split_point(n)
        if m <= k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start, m, whole = start + k, m - k, False
    out.reverse()
    return out


def perfect_nodes(start: int, end: int) -> list[NodeId]:
    """The perfect subtrees ``[start, end)`` splits into, left to right, as RFC 9162's MTH
    splits it. Valid for the ranges proofs and roots use (``start`` aligned to the subtree)."""
    if end <= start:
        raise ValueError("empty range has no perfect subtrees")
    out: list[NodeId] = []
    while start < end:
        n = end - start
        size = n if n & (n - 1) == 0 else split_point(n)
        level = size.bit_length() - 1
        if start % size:
            raise ValueError(f"range [{start}, {end}) is not a subtree of an RFC 9162 tree")
        out.append((level, start >> level))
        start += size
    return out


def range_hash(start: int, end: int, nodes: Mapping[NodeId, bytes]) -> bytes:
    """MTH(D[start:end]) from stored perfect-subtree hashes (MTH of nothing is SHA-256(''))."""
    if start == end:
        return EMPTY_ROOT
    parts = [nodes[n] for n in perfect_nodes(start, end)]
    acc = parts[-1]
    for part in reversed(parts[:-1]):  # MTH folds right: node(P1, node(P2, ... Pk))
        acc = node_hash(part, acc)
    return acc


def nodes_needed(ranges: Iterable[Range]) -> set[NodeId]:
    needed: set[NodeId] = set()
    for start, end in ranges:
        if end > start:
            needed.update(perfect_nodes(start, end))
    return needed


def new_perfect_nodes(index: int) -> list[tuple[NodeId, NodeId, NodeId]]:
    """Appending leaf ``index`` completes these perfect subtrees: (new node, left, right),
    bottom-up. The left children are already stored (they are left of the new leaf)."""
    out = []
    level, i = 0, index
    while i & 1:  # a right child completes its parent
        out.append(((level + 1, i >> 1), (level, i - 1), (level, i)))
        level, i = level + 1, i >> 1
    return out


# -- verification (what a client runs; the security boundary) ---------------------------------
def verify_inclusion(leaf_index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes],
                     root: bytes) -> bool:
    """RFC 9162 §2.1.3.2, with transparency-dev/merkle's edge conventions."""
    if leaf_index < 0 or leaf_index >= tree_size or len(leaf) != 32:
        return False
    if any(len(p) != 32 for p in proof):
        return False
    fn, sn, r = leaf_index, tree_size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2, with transparency-dev/merkle's edge conventions."""
    if first <= 0 or first > second:
        return False
    if first == second:
        return len(proof) == 0 and first_root == second_root
    if not proof or any(len(p) != 32 for p in proof):
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_root and sr == second_root and sn == 0


# -- an in-memory tree (tests, the verifier's full audit, benchmarks' baseline) ---------------
class MemoryTree:
    """Keeps every perfect subtree hash, the same shape the PostgreSQL store keeps."""

    def __init__(self) -> None:
        self.nodes: dict[NodeId, bytes] = {}
        self.size = 0

    @classmethod
    def from_entries(cls, entries: Iterable[bytes]) -> MemoryTree:
        tree = cls()
        for entry in entries:
            tree.append_leaf_hash(leaf_hash(entry))
        return tree

    def append_leaf_hash(self, h: bytes) -> int:
        index = self.size
        self.nodes[(0, index)] = h
        for new, left, right in new_perfect_nodes(index):
            self.nodes[new] = node_hash(self.nodes[left], self.nodes[right])
        self.size += 1
        return index

    def root(self, size: int | None = None) -> bytes:
        return range_hash(0, self.size if size is None else size, self.nodes)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        size = self.size if size is None else size
        return [range_hash(s, e, self.nodes) for s, e in inclusion_ranges(index, size)]

    def consistency_proof(self, first: int, second: int | None = None) -> list[bytes]:
        second = self.size if second is None else second
        return [range_hash(s, e, self.nodes) for s, e in consistency_ranges(first, second)]
