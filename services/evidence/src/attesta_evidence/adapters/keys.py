"""The log's Ed25519 signing key on disk (PKCS#8 PEM, mode 0600) and its public half."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_evidence.domain.signing import public_key_pem


class SigningKeyError(Exception):
    pass


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningKeyError(f"cannot read the log signing key {path}: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} is not an Ed25519 private key")
    return key


def public_key_path(path: Path) -> Path:
    return path.with_name(path.name + ".pub")


def generate_key_file(path: Path, *, overwrite: bool = False) -> Ed25519PrivateKey:
    """Write a new key (and ``<path>.pub``, the PEM public key to publish)."""
    if path.exists() and not overwrite:
        raise SigningKeyError(f"{path} exists; refusing to replace a signing key (use --force)")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    public_key_path(path).write_text(public_key_pem(key.public_key()))
    return key
