"""HTTP models of the evidence service (internal API on :8082; the gateway forwards the public
routes unchanged and imports these models to build the public OpenAPI document).

Public routes (``/v1/public/...``, no account, rate-limited by the gateway):

- ``GET  /v1/public/evidence/{sha256}``        -> ``EvidenceView`` (metadata + inclusion proof)
- ``POST /v1/public/evidence/{sha256}/check``  ``EvidenceCheckRequest`` -> ``EvidenceCheckResult``
- ``GET  /v1/public/log/tree-head``            -> ``SignedTreeHead`` (latest)
- ``GET  /v1/public/log/consistency?first=&second=`` -> ``ConsistencyProof``
- ``GET  /v1/public/log/inclusion?leaf_index=&tree_size=`` -> ``InclusionProof`` (against an
  older, saved tree head)
- ``GET  /v1/public/log/leaves?start=&end=``    -> ``LogLeaves`` (entries, for a full audit)
- ``GET  /v1/public/log/public-key``           -> ``LogPublicKey``

Internal routes (``X-Attesta-Internal-Token`` + ``X-Attesta-Workspace``):

- ``GET /v1/evidence/{sha256}`` -> ``EvidenceInternalView`` (the caller workspace's own
  references; 404 when the workspace holds no reference to the hash).

Rules every public route keeps:

- A hash in a path is 64 hexadecimal digits. Upper case is accepted and normalised to lower
  case (hex digits name the same bytes either way); anything else is ``400 invalid_sha256``.
- Raw content is never returned publicly: the public routes confirm that a hash exists and check
  content the caller already holds. Run ids, workspace ids, brand ids and source URLs are never
  shown publicly (they may belong to private workspaces); only the *number* of references of
  each kind is.
- Errors use the shared shape ``{"error": {"code", "reason"}}``
  (``attesta_platform.http.ErrorResponse``).

The log is an RFC 9162 Merkle tree (leaf hash ``SHA-256(0x00 || entry)``, node hash
``SHA-256(0x01 || left || right)``). Leaf entry bytes, UTF-8, five lines each ending in ``\\n``::

    attesta.evidence.leaf.v1
    <sha256 hex, lower case>
    <size_bytes, decimal>
    <media_type>
    <first_recorded_at, UTC, YYYY-MM-DDTHH:MM:SS.ffffffZ>

A signed tree head signs (Ed25519) the UTF-8 bytes, four lines each ending in ``\\n``::

    attesta.evidence.tree-head.v1
    <tree_size, decimal>
    <root_hash hex, lower case>
    <timestamp_ms, decimal milliseconds since the Unix epoch>

``key_id`` is the lower-case hex SHA-256 of the raw 32-byte Ed25519 public key. Hashes are lower
case hex; signatures and raw keys are standard base64.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from attesta_contracts.evidence import EvidenceRefKind

LEAF_ENTRY_PREFIX = "attesta.evidence.leaf.v1"
TREE_HEAD_PREFIX = "attesta.evidence.tree-head.v1"

Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
HashHex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class SignedTreeHead(BaseModel):
    """A checkpoint of the log, signed by the log's Ed25519 key. Save it: a later consistency
    proof from it shows the log only grew (nothing was edited or removed)."""

    tree_size: int = Field(ge=0)
    root_hash: HashHex
    timestamp_ms: int = Field(ge=0, description="when it was signed, ms since the Unix epoch")
    signature: str = Field(description="base64 Ed25519 signature over the tree-head bytes")
    key_id: Sha256Hex = Field(description="hex SHA-256 of the raw 32-byte public key")


class InclusionProof(BaseModel):
    """RFC 9162 §2.1.3 audit path of ``leaf_index`` in the tree of ``tree_size`` leaves."""

    leaf_index: int = Field(ge=0)
    tree_size: int = Field(ge=1)
    leaf_hash: HashHex = Field(description="SHA-256(0x00 || entry)")
    audit_path: list[HashHex] = Field(description="bottom-up, as RFC 9162 orders it")


class ConsistencyProof(BaseModel):
    """RFC 9162 §2.1.4 consistency proof between tree sizes ``first`` <= ``second``."""

    first: int = Field(ge=1)
    second: int = Field(ge=1)
    first_root_hash: HashHex
    second_root_hash: HashHex
    proof: list[HashHex]


class LogEntry(BaseModel):
    """One leaf of the log. ``entry`` is the exact leaf entry text (see module docs); a verifier
    rebuilds it from the other fields and compares, then hashes it."""

    leaf_index: int = Field(ge=0)
    sha256: Sha256Hex
    size_bytes: int = Field(ge=0)
    media_type: str
    first_recorded_at: AwareDatetime
    entry: str


class ReferenceCount(BaseModel):
    kind: EvidenceRefKind
    count: int = Field(ge=1)


class EvidenceView(BaseModel):
    """What the public may know about a stored piece of evidence, and its proof of inclusion in
    the log against ``tree_head``. ``inclusion`` and ``tree_head`` are absent only in the rare
    moment before the record's first signed tree head (retry after a second)."""

    sha256: Sha256Hex
    media_type: str
    size_bytes: int = Field(ge=0)
    first_recorded_at: AwareDatetime
    references: list[ReferenceCount] = Field(
        description="how many runs / ground-truth sources point to these bytes (no ids)")
    log_entry: LogEntry
    inclusion: InclusionProof | None = None
    tree_head: SignedTreeHead | None = None


class EvidenceCheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="the exact text; its UTF-8 bytes are hashed and compared")


class EvidenceCheckResult(BaseModel):
    """``match`` is true when the UTF-8 bytes of ``content`` equal, byte for byte, the stored
    evidence named in the path."""

    sha256: Sha256Hex = Field(description="the hash named in the path (normalised)")
    match: bool
    computed_sha256: Sha256Hex = Field(description="SHA-256 of the submitted content's UTF-8 bytes")
    computed_size_bytes: int = Field(ge=0)
    computed_recorded: bool = Field(
        description="whether evidence with the computed hash is in the store")


class LogLeaves(BaseModel):
    """Leaves ``[start, end)`` of the log; ``end`` is capped by the page limit and by
    ``tree_size`` (the latest signed tree head's size)."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    tree_size: int = Field(ge=0)
    leaves: list[LogEntry]


class LogPublicKey(BaseModel):
    algorithm: str = "Ed25519"
    key_id: Sha256Hex
    public_key: str = Field(description="base64 of the raw 32-byte Ed25519 public key")
    public_key_pem: str = Field(description="the same key as SubjectPublicKeyInfo PEM")


class EvidenceReferenceView(BaseModel):
    kind: EvidenceRefKind
    ref_id: str = Field(description="run id, or '<brand_id> <source url>'")
    recorded_at: AwareDatetime


class EvidenceInternalView(BaseModel):
    """Internal: the evidence with the references the calling workspace holds."""

    sha256: Sha256Hex
    media_type: str
    size_bytes: int = Field(ge=0)
    first_recorded_at: AwareDatetime
    log_index: int = Field(ge=0)
    references: list[EvidenceReferenceView]


class EvidenceErrorCode(StrEnum):
    """The ``error.code`` values the evidence routes answer with."""

    INVALID_SHA256 = "invalid_sha256"          # 400: not 64 hex digits
    NOT_FOUND = "not_found"                    # 404: no evidence with that hash
    INVALID_REQUEST = "invalid_request"        # 422: body/query does not validate
    INVALID_CONTENT = "invalid_content"        # 422: content is not valid Unicode text
    PAYLOAD_TOO_LARGE = "payload_too_large"    # 413: request body over the documented limit
    INVALID_RANGE = "invalid_range"            # 400: tree sizes / indices outside the log
    UNAUTHORIZED = "unauthorized"              # 401: internal route without the right token
    MISSING_WORKSPACE = "missing_workspace"    # 400: internal route without a workspace
