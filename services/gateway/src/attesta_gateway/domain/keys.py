"""API keys: format, hashing and verification (pure, no I/O).

A key reads ``atk_<key id>_<secret>``: the key id (16 hex chars, 64 bits) is public and names the
key in logs, audit headers and ``keys revoke``; the secret is 32 random bytes (256 bits,
base64url). Only ``HMAC-SHA256(server secret, whole key)`` is stored.

Why HMAC with a server secret rather than a slow password hash: a key carries 256 bits of
entropy, so guessing it from its hash is hopeless and a slow hash (bcrypt/argon2) would only add
milliseconds to every request. The server secret (``ATTESTA_GATEWAY_SECRET``) adds one more
wall: a leaked copy of the keys table alone cannot even be used to check a candidate key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum
from datetime import datetime

from attesta_gateway.domain.roles import DEFAULT_ROLE, Role

KEY_PREFIX = "atk"
_KEY_RE = re.compile(r"^atk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
WORKSPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class StoredKey:
    key_id: str
    workspace_id: str
    name: str
    digest: str  # hex HMAC-SHA256 of the whole key under the server secret
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    role: Role = DEFAULT_ROLE  # fixed at creation: a key that should do more is a new key
    last_used_at: datetime | None = None  # to the minute at best (service_layer/auth.py)
    created_by: str | None = None  # the admin key's id, or "cli"; None: before #25
    revoked_by: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key id (for audit), the workspace everything is scoped to, the
    key's name (who a person's review is recorded under) and its role in the workspace."""

    key_id: str
    workspace_id: str
    name: str = ""
    role: Role = DEFAULT_ROLE


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: ``plaintext`` is shown once (None when an Idempotency-Key replays
    the creation: the secret was never stored, so it cannot be shown again)."""

    key: StoredKey
    plaintext: str | None
    replayed: bool = False


class Revocation(StrEnum):
    """What asking to revoke a key of a workspace came to."""

    REVOKED = "revoked"
    ALREADY_REVOKED = "already_revoked"  # DELETE is idempotent: the same answer again
    NOT_FOUND = "not_found"  # no such key in this workspace (another's reads the same)
    LAST_ADMIN = "last_admin"  # refused: the workspace would have no admin left


def new_key() -> tuple[str, str]:
    """A fresh ``(key id, plaintext key)``; the plaintext is shown once and never stored."""
    key_id = secrets.token_hex(8)
    return key_id, f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"


def parse_key_id(plaintext: str) -> str | None:
    """The key id of a well-formed key, else None (a malformed key never reaches the store)."""
    m = _KEY_RE.match(plaintext)
    return m.group(1) if m else None


def key_digest(server_secret: bytes, plaintext: str) -> str:
    return hmac.new(server_secret, plaintext.encode("ascii"), hashlib.sha256).hexdigest()


def verify(server_secret: bytes, plaintext: str, stored: StoredKey) -> bool:
    return stored.active and hmac.compare_digest(key_digest(server_secret, plaintext),
                                                 stored.digest)


def valid_workspace(workspace_id: str) -> bool:
    return bool(WORKSPACE_RE.match(workspace_id))
