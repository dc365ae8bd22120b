"""Ed25519 signed tree heads (``cryptography``). Pure: keys come in as bytes/objects."""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from attesta_evidence.domain.model import tree_head_message


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(raw_public_key(key)).hexdigest()


def public_key_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def load_public_key(data: bytes) -> Ed25519PublicKey:
    """PEM (SubjectPublicKeyInfo) or base64 of the raw 32 bytes."""
    text = data.strip()
    if text.startswith(b"-----BEGIN"):
        key = serialization.load_pem_public_key(text)
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        return key
    raw = base64.b64decode(text, validate=True)
    return Ed25519PublicKey.from_public_bytes(raw)


def sign_tree_head(key: Ed25519PrivateKey, tree_size: int, root: bytes, timestamp_ms: int) -> str:
    return base64.b64encode(key.sign(tree_head_message(tree_size, root, timestamp_ms))).decode()


def tree_head_signature_ok(key: Ed25519PublicKey, tree_size: int, root: bytes, timestamp_ms: int,
                           signature_b64: str) -> bool:
    try:
        key.verify(base64.b64decode(signature_b64, validate=True),
                   tree_head_message(tree_size, root, timestamp_ms))
        return True
    except (InvalidSignature, ValueError):
        return False
