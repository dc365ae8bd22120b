"""The range-based proofs (what the store serves) against a direct, recursive transcription of
RFC 9162 §2.1 (MTH, PATH, PROOF/SUBPROOF) on random trees, and verification round trips."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attesta_evidence.domain import merkle

pytestmark = pytest.mark.unit


def mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = 1 << ((n - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()


def path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = 1 << ((n - 1).bit_length() - 1)
    if m < k:
        return path(m, d[:k]) + [mth(d[k:])]
    return path(m - k, d[k:]) + [mth(d[:k])]


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = 1 << ((n - 1).bit_length() - 1)
    if m <= k:
        return subproof(m, d[:k], b) + [mth(d[k:])]
    return subproof(m - k, d[k:], False) + [mth(d[:k])]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=300), st.data())
def test_store_proofs_equal_the_rfc_definitions(n, data):
    entries = [b"entry-%d" % i for i in range(n)]
    tree = merkle.MemoryTree.from_entries(entries)
    assert tree.root() == mth(entries)
    index = data.draw(st.integers(min_value=0, max_value=n - 1))
    size = data.draw(st.integers(min_value=index + 1, max_value=n))
    proof = tree.inclusion_proof(index, size)
    assert proof == path(index, entries[:size])
    assert merkle.verify_inclusion(index, size, merkle.leaf_hash(entries[index]), proof,
                                   mth(entries[:size]))
    first = data.draw(st.integers(min_value=1, max_value=n))
    cproof = tree.consistency_proof(first, n)
    assert cproof == subproof(first, entries, True)
    assert merkle.verify_consistency(first, n, mth(entries[:first]), mth(entries), cproof)
    if first < n:  # a proof for another old root never verifies
        wrong = mth(entries[:first - 1] + [b"changed"])
        assert not merkle.verify_consistency(first, n, wrong, mth(entries), cproof)
    assert len(merkle.nodes_needed(merkle.inclusion_ranges(index, size))) <= 2 * size.bit_length()
