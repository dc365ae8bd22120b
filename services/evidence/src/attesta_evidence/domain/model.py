"""Evidence records, their log entry bytes and tree-head bytes. Pure: no I/O.

The byte formats are the public contract a verifier reproduces (documented in
``attesta_contracts.api.evidence``): change them only with a new ``.vN`` prefix.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from attesta_contracts.api.evidence import LEAF_ENTRY_PREFIX, TREE_HEAD_PREFIX
from attesta_contracts.evidence import EvidenceRefKind

RUN_MEDIA_TYPE = "text/plain; charset=utf-8"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
# type/subtype plus optional parameters, RFC 6838 restricted-name characters; no quotes, no
# newlines, so a media type is always one line of the leaf entry.
_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?:; ?{_TOKEN}=[a-z0-9!#$&^_.+-]{{1,64}})*")


class InvalidEvidence(ValueError):
    """Input that can never become evidence (the reason is shown to the sender)."""


def normalise_sha256(text: str) -> str | None:
    """Lower-case hex of a 64-hex-digit hash, or None when it is not one."""
    return text.lower() if _HEX64.fullmatch(text) else None


def normalise_media_type(value: str) -> str:
    media = value.strip().lower()
    media = re.sub(r"\s*;\s*", "; ", media)
    if len(media) > 255 or not _MEDIA_TYPE.fullmatch(media):
        raise InvalidEvidence(f"media type {value[:100]!r} is not a simple type/subtype[; k=v]")
    return media


def utf8_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate from JSON "\ud800"
        raise InvalidEvidence(f"content is not valid Unicode text: {exc.reason} at {exc.start}") from None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=1024)  # a batch's new leaves share one recording time
def format_time(at: datetime) -> str:
    """UTC, microseconds, 'Z': one spelling per instant (PostgreSQL keeps microseconds)."""
    if at.tzinfo is None:
        raise ValueError("naive datetime")
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def leaf_entry(sha256: str, size_bytes: int, media_type: str, first_recorded_at: datetime) -> bytes:
    return (f"{LEAF_ENTRY_PREFIX}\n{sha256}\n{size_bytes}\n{media_type}\n"
            f"{format_time(first_recorded_at)}\n").encode("utf-8")


def tree_head_message(tree_size: int, root_hash: bytes, timestamp_ms: int) -> bytes:
    return f"{TREE_HEAD_PREFIX}\n{tree_size}\n{root_hash.hex()}\n{timestamp_ms}\n".encode("utf-8")


@dataclass(frozen=True)
class Reference:
    kind: EvidenceRefKind
    ref_id: str
    workspace_id: str


@dataclass(frozen=True)
class IncomingEvidence:
    """Bytes to store and what points to them, after the checks every source must pass."""

    content: bytes
    sha256: str
    media_type: str
    reference: Reference

    @classmethod
    def build(cls, text: str, claimed_sha256: str, media_type: str, reference: Reference,
              max_bytes: int) -> IncomingEvidence:
        content = utf8_bytes(text)
        if len(content) > max_bytes:
            raise InvalidEvidence(
                f"content is {len(content)} bytes; the evidence store takes at most {max_bytes}")
        digest = sha256_hex(content)
        if digest != claimed_sha256:
            raise InvalidEvidence(
                f"claimed sha256 {claimed_sha256} does not match the content's {digest}")
        return cls(content, digest, normalise_media_type(media_type), reference)


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
class StoredReference:
    kind: str
    ref_id: str
    recorded_at: datetime


@dataclass(frozen=True)
class TreeHeadRow:
    tree_size: int
    root_hash: bytes
    timestamp_ms: int
    signature: str
    key_id: str
