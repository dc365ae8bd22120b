"""The evidence HTTP API: public verification routes and one internal route (see
``attesta_contracts.api.evidence`` for the contract and the byte formats).

``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus, ``adapters/telemetry.py``) are open and
not in the OpenAPI document."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse
from prometheus_client import Counter

from attesta_contracts.api.evidence import (
    ConsistencyProof,
    EvidenceCheckRequest,
    EvidenceCheckResult,
    EvidenceInternalView,
    EvidenceReferenceView,
    EvidenceView,
    InclusionProof,
    LogEntry,
    LogLeaves,
    LogPublicKey,
    ReferenceCount,
    SignedTreeHead,
)
from attesta_contracts.evidence import EvidenceRefKind
from attesta_evidence.adapters.telemetry import CHECKS, LOOKUPS, PROOF_SECONDS, PROOFS
from attesta_evidence.domain import commands as c
from attesta_evidence.domain.model import StoredEvidence, TreeHeadRow, normalise_sha256
from attesta_evidence.domain.signing import public_key_pem, raw_public_key
from attesta_evidence.service_layer.errors import (
    InvalidContent, NotFound, OutOfRange, ServiceError)
from attesta_platform.bus import MessageBus
from attesta_platform.http import (
    ApiError, BodyLimit, ErrorResponse, check_internal_token, error_response,
    install_error_handlers)
from attesta_platform.service import add_health_routes

LEAVES_PAGE_LIMIT = 1000

# The domain errors' answers, once (a kind not listed answers as its nearest listed base).
HTTP_ERRORS: dict[type[ServiceError], tuple[int, str]] = {
    ServiceError: (400, "bad_request"), NotFound: (404, "not_found"),
    OutOfRange: (400, "invalid_range"), InvalidContent: (422, "invalid_content")}


async def _error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    status, code = HTTP_ERRORS[next(k for k in type(exc).__mro__ if k in HTTP_ERRORS)]
    return error_response(status, code, exc.reason)


Responses = dict[int | str, dict[str, Any]]  # FastAPI's ``responses=`` documentation


def _err(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


BAD_HASH: Responses = {400: _err("not 64 hexadecimal digits (upper case is accepted and normalised)")}
UNKNOWN: Responses = {404: _err("no evidence with that SHA-256")}
BAD_RANGE: Responses = {400: _err("sizes or indices outside the signed log"),
             422: _err("a query parameter is missing or not an integer")}


# Documented in the OpenAPI (so clients and fuzzers see the shape) but checked by the route,
# which answers 400 invalid_sha256 with a reason instead of a generic 422.
Sha256Path = Annotated[str, Path(
    description="SHA-256 of the exact UTF-8 bytes: 64 hex digits (upper case is normalised)",
    json_schema_extra={"pattern": "^[0-9a-fA-F]{64}$"})]


def _hash_or_400(text: str, counter: Counter | None = None) -> str:
    """The normalised hash; 400 invalid_sha256 (counted as such on ``counter``) otherwise."""
    sha = normalise_sha256(text)
    if sha is None:
        if counter is not None:
            counter.labels("invalid_sha256").inc()
        raise ApiError(400, "invalid_sha256",
                       "a SHA-256 is 64 hexadecimal digits (0-9, a-f; upper case is accepted)")
    return sha


def _head_view(head: TreeHeadRow) -> SignedTreeHead:
    return SignedTreeHead(tree_size=head.tree_size, root_hash=head.root_hash.hex(),
                          timestamp_ms=head.timestamp_ms, signature=head.signature,
                          key_id=head.key_id)


def _entry_view(e: StoredEvidence) -> LogEntry:
    return LogEntry(leaf_index=e.log_index, sha256=e.sha256, size_bytes=e.size_bytes,
                    media_type=e.media_type, first_recorded_at=e.first_recorded_at,
                    entry=e.entry.decode("utf-8"))


def create_app(bus: MessageBus, *, database: Any, internal_token: str,
               max_body_bytes: int, ready: Callable[[], str | None] = lambda: None) -> FastAPI:
    app = FastAPI(
        title="Attesta evidence",
        version="1.0.0",
        description=(
            "Content-addressed evidence (SHA-256 of exact UTF-8 bytes) and its RFC 9162 "
            "verifiable log. Public routes confirm existence and check content the caller "
            "holds; raw content is never returned publicly. Request bodies over "
            f"{max_body_bytes} bytes get 413."),
    )
    install_error_handlers(app)
    app.add_exception_handler(ServiceError, _error)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.get("/v1/public/evidence/{sha256}", response_model=EvidenceView,
             response_model_exclude_none=True, responses={**BAD_HASH, **UNKNOWN},
             tags=["public"], summary="Does this evidence exist? Metadata and inclusion proof")
    async def get_evidence(sha256: Sha256Path) -> EvidenceView:
        sha = _hash_or_400(sha256, LOOKUPS)
        try:
            view = await bus.handle(c.GetPublicEvidence(sha))
        except NotFound:
            LOOKUPS.labels("not_found").inc()
            raise
        stored, counts, head = view.evidence, view.reference_counts, view.head
        leaf, path = view.leaf_hash, view.audit_path
        LOOKUPS.labels("found").inc()
        return EvidenceView(
            sha256=stored.sha256, media_type=stored.media_type, size_bytes=stored.size_bytes,
            first_recorded_at=stored.first_recorded_at,
            references=[ReferenceCount(kind=EvidenceRefKind(k), count=n) for k, n in counts.items()],
            log_entry=_entry_view(stored),
            inclusion=InclusionProof(leaf_index=stored.log_index, tree_size=head.tree_size,
                                     leaf_hash=leaf.hex(), audit_path=[p.hex() for p in path]),
            tree_head=_head_view(head))

    @app.post("/v1/public/evidence/{sha256}/check", response_model=EvidenceCheckResult,
              responses={**BAD_HASH, **UNKNOWN,
                         413: _err(f"request body over {max_body_bytes} bytes"),
                         422: _err("body is not {\"content\": <string>} or not valid Unicode")},
              tags=["public"], summary="Byte-for-byte check of content you hold")
    async def check_evidence(sha256: Sha256Path, body: EvidenceCheckRequest) -> EvidenceCheckResult:
        sha = _hash_or_400(sha256, CHECKS)
        try:
            checked = await bus.handle(c.CheckContent(sha, body.content))
        except InvalidContent:
            CHECKS.labels("invalid_content").inc()
            raise
        except NotFound:
            CHECKS.labels("not_found").inc()
            raise
        CHECKS.labels("match" if checked.match else "mismatch").inc()
        return EvidenceCheckResult(sha256=sha, match=checked.match,
                                   computed_sha256=checked.computed_sha256,
                                   computed_size_bytes=checked.computed_size_bytes,
                                   computed_recorded=checked.computed_recorded)

    @app.get("/v1/public/log/tree-head", response_model=SignedTreeHead, tags=["public"],
             summary="The latest signed tree head (covers every record stored so far)")
    async def tree_head() -> SignedTreeHead:
        return _head_view(await bus.handle(c.GetTreeHead()))

    @app.get("/v1/public/log/consistency", response_model=ConsistencyProof, responses=BAD_RANGE,
             tags=["public"], summary="RFC 9162 consistency proof between two tree sizes")
    async def consistency(first: int = Query(description="the older tree size (>= 1)"),
                          second: int = Query(description="the newer tree size (<= latest)")
                          ) -> ConsistencyProof:
        started = time.perf_counter()
        try:
            r1, r2, proof = await bus.handle(c.GetConsistencyProof(first, second))
        except OutOfRange:
            PROOFS.labels("consistency", "invalid_range").inc()
            raise
        PROOFS.labels("consistency", "ok").inc()
        PROOF_SECONDS.labels("consistency").observe(time.perf_counter() - started)
        return ConsistencyProof(first=first, second=second, first_root_hash=r1.hex(),
                                second_root_hash=r2.hex(), proof=[p.hex() for p in proof])

    @app.get("/v1/public/log/inclusion", response_model=InclusionProof, responses=BAD_RANGE,
             tags=["public"], summary="RFC 9162 inclusion proof against any signed tree size")
    async def inclusion(leaf_index: int = Query(description="0-based leaf index"),
                        tree_size: int = Query(description="a tree size <= the latest signed one")
                        ) -> InclusionProof:
        started = time.perf_counter()
        try:
            leaf, path = await bus.handle(c.GetInclusionProof(leaf_index, tree_size))
        except OutOfRange:
            PROOFS.labels("inclusion", "invalid_range").inc()
            raise
        PROOFS.labels("inclusion", "ok").inc()
        PROOF_SECONDS.labels("inclusion").observe(time.perf_counter() - started)
        return InclusionProof(leaf_index=leaf_index, tree_size=tree_size, leaf_hash=leaf.hex(),
                              audit_path=[p.hex() for p in path])

    @app.get("/v1/public/log/leaves", response_model=LogLeaves, responses=BAD_RANGE,
             tags=["public"], summary=f"Log entries [start, end), at most {LEAVES_PAGE_LIMIT}")
    async def leaves(start: int = Query(description="first leaf index"),
                     end: int = Query(description="one past the last leaf index")) -> LogLeaves:
        page = await bus.handle(c.ListLeaves(start, end, LEAVES_PAGE_LIMIT))
        return LogLeaves(start=page.start, end=page.end, tree_size=page.tree_size,
                         leaves=[_entry_view(r) for r in page.leaves])

    @app.get("/v1/public/log/public-key", response_model=LogPublicKey, tags=["public"],
             summary="The log's Ed25519 public key")
    async def public_key() -> LogPublicKey:
        key = await bus.handle(c.GetPublicKey())
        return LogPublicKey(key_id=key.key_id,
                            public_key=base64.b64encode(raw_public_key(key.public_key)).decode(),
                            public_key_pem=public_key_pem(key.public_key))

    @app.get("/v1/evidence/{sha256}", response_model=EvidenceInternalView, tags=["internal"],
             responses={400: _err("bad hash or missing workspace"),
                        401: _err("missing or wrong internal token"),
                        404: _err("the workspace holds no reference to that hash")},
             summary="Internal: evidence with the calling workspace's own references")
    async def internal_evidence(sha256: Sha256Path, request: Request) -> EvidenceInternalView:
        workspace = check_internal_token(request, internal_token)
        sha = _hash_or_400(sha256)
        stored, refs = await bus.handle(c.GetWorkspaceEvidence(sha, workspace))
        return EvidenceInternalView(
            sha256=stored.sha256, media_type=stored.media_type, size_bytes=stored.size_bytes,
            first_recorded_at=stored.first_recorded_at, log_index=stored.log_index,
            references=[EvidenceReferenceView(kind=EvidenceRefKind(r.kind), ref_id=r.ref_id,
                                              recorded_at=r.recorded_at) for r in refs])

    add_health_routes(app, "evidence", ready, database=database)

    return app
