"""What ``attesta evidence verify`` checks. Trust comes only from the log's public key: every
tree head's signature is checked, every proof is recomputed here, and every log entry is rebuilt
from its fields. A failure raises ``VerificationFailed`` with what did not hold."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from attesta_contracts.api.evidence import LogEntry, SignedTreeHead
from attesta_evidence.adapters.log_client import LogClient, NotRecorded
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import leaf_entry, normalise_sha256
from attesta_evidence.domain.signing import key_id, tree_head_signature_ok

Say = Callable[[str], None]


class VerificationFailed(Exception):
    pass


def check_tree_head(head: SignedTreeHead, key: Ed25519PublicKey, what: str = "tree head") -> None:
    if head.key_id != key_id(key):
        raise VerificationFailed(f"{what}: signed by key {head.key_id}, not by the given public "
                                 f"key {key_id(key)}")
    if not tree_head_signature_ok(key, head.tree_size, bytes.fromhex(head.root_hash),
                                  head.timestamp_ms, head.signature):
        raise VerificationFailed(f"{what}: the Ed25519 signature does not verify")


def entry_leaf_hash(entry: LogEntry) -> bytes:
    """Rebuild the entry bytes from the fields (never trust the server's text) and hash them."""
    rebuilt = leaf_entry(entry.sha256, entry.size_bytes, entry.media_type, entry.first_recorded_at)
    if rebuilt != entry.entry.encode("utf-8"):
        raise VerificationFailed(f"leaf {entry.leaf_index}: the entry text does not match its "
                                 "fields")
    return merkle.leaf_hash(rebuilt)


def verify_consistency(client: LogClient, key: Ed25519PublicKey, old: SignedTreeHead,
                       new: SignedTreeHead, say: Say) -> None:
    check_tree_head(old, key, "older tree head")
    check_tree_head(new, key, "newer tree head")
    if old.tree_size > new.tree_size:
        raise VerificationFailed(f"the log shrank: {old.tree_size} -> {new.tree_size} leaves")
    if old.tree_size == 0:
        say("OK older tree head is the empty log; anything is consistent with it")
        return
    if old.tree_size == new.tree_size:
        if old.root_hash != new.root_hash:
            raise VerificationFailed(f"two signed heads of size {old.tree_size} with different "
                                     "roots: the log forked")
        say(f"OK same size {old.tree_size}, same root")
        return
    proof = client.consistency(old.tree_size, new.tree_size)
    ok = merkle.verify_consistency(old.tree_size, new.tree_size, bytes.fromhex(old.root_hash),
                                   bytes.fromhex(new.root_hash),
                                   [bytes.fromhex(p) for p in proof.proof])
    if not ok:
        raise VerificationFailed(
            f"consistency proof {old.tree_size} -> {new.tree_size} does not verify against the "
            "signed roots: entries present at the older head were changed or removed")
    say(f"OK consistent: {old.tree_size} -> {new.tree_size} leaves, only appended")


def verify_inclusion(client: LogClient, key: Ed25519PublicKey, *, content: bytes | None,
                     sha256: str | None, saved: SignedTreeHead | None, say: Say) -> None:
    if content is not None:
        sha = hashlib.sha256(content).hexdigest()
        say(f"content: {len(content)} bytes, sha256 {sha}")
    else:
        normalised = normalise_sha256(sha256 or "")
        if normalised is None:
            raise VerificationFailed(f"{sha256!r} is not a SHA-256 (64 hex digits)")
        sha = normalised
    try:
        view = client.evidence(sha)
    except NotRecorded:
        raise VerificationFailed(f"evidence {sha} is not in the store") from None
    if view.inclusion is None or view.tree_head is None:
        raise VerificationFailed("the server gave no inclusion proof")
    head, proof, entry = view.tree_head, view.inclusion, view.log_entry
    check_tree_head(head, key)
    say(f"OK tree head signed by key {head.key_id[:16]}...: size {head.tree_size}, "
        f"root {head.root_hash}")
    if entry.sha256 != sha or view.sha256 != sha:
        raise VerificationFailed(f"the server answered for {entry.sha256}, not {sha}")
    if content is not None and entry.size_bytes != len(content):
        raise VerificationFailed(f"the log entry says {entry.size_bytes} bytes; the content has "
                                 f"{len(content)}")
    leaf = entry_leaf_hash(entry)
    if proof.tree_size != head.tree_size or proof.leaf_index != entry.leaf_index:
        raise VerificationFailed("the proof is not for this entry in this tree head")
    if not merkle.verify_inclusion(entry.leaf_index, head.tree_size, leaf,
                                   [bytes.fromhex(p) for p in proof.audit_path],
                                   bytes.fromhex(head.root_hash)):
        raise VerificationFailed(f"inclusion proof of leaf {entry.leaf_index} does not verify "
                                 "against the signed root")
    say(f"OK included: leaf {entry.leaf_index} of {head.tree_size} "
        f"({entry.media_type}, {entry.size_bytes} bytes, first recorded "
        f"{entry.entry.splitlines()[4]})")
    if saved is not None:
        verify_consistency(client, key, saved, head, say)
        if entry.leaf_index < saved.tree_size:
            old = client.inclusion(entry.leaf_index, saved.tree_size)
            if not merkle.verify_inclusion(entry.leaf_index, saved.tree_size, leaf,
                                           [bytes.fromhex(p) for p in old.audit_path],
                                           bytes.fromhex(saved.root_hash)):
                raise VerificationFailed(
                    f"leaf {entry.leaf_index} as served now is not the leaf the saved head "
                    f"(size {saved.tree_size}) signed: the entry was changed")
            say(f"OK also included in the saved head of size {saved.tree_size}")


def audit_log(client: LogClient, key: Ed25519PublicKey, saved: SignedTreeHead, say: Say,
              page: int = 1000) -> None:
    """Fetch every entry of the saved head's tree, rebuild the tree and compare roots; then check
    the latest head is consistent with the saved one. Finds edited and removed rows."""
    check_tree_head(saved, key, "saved tree head")
    tree = merkle.MemoryTree()
    index = 0
    while index < saved.tree_size:
        got = client.leaves(index, min(saved.tree_size, index + page))
        if not got.leaves:
            raise VerificationFailed(f"leaf {index} is missing from the log")
        for entry in got.leaves:
            if entry.leaf_index != index:
                raise VerificationFailed(f"leaf {index} is missing from the log (next served "
                                         f"is {entry.leaf_index})")
            tree.append_leaf_hash(entry_leaf_hash(entry))
            index += 1
            if index == saved.tree_size:
                break
    root = tree.root(saved.tree_size).hex()
    if root != saved.root_hash:
        raise VerificationFailed(f"the {saved.tree_size} entries served now hash to root {root}, "
                                 f"not the signed {saved.root_hash}: entries were changed")
    say(f"OK all {saved.tree_size} entries rebuild the signed root {root}")
    verify_consistency(client, key, saved, client.tree_head(), say)
