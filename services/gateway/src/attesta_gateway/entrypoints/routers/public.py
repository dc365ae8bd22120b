"""``/v1/public/*``: the evidence service's public routes, no account, per-client rate limit."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from attesta_contracts.api import evidence as ev
from attesta_gateway.entrypoints.api import (
    PUBLIC_ERRORS,
    Sha,
    errors,
    public_limit,
    sha_path,
)
from attesta_gateway.entrypoints.deps import Gateway, gateway
from attesta_gateway.service_layer.forwarding import forward

router = APIRouter(tags=["public evidence"], dependencies=[Depends(public_limit)])


async def _public(request: Request, method: str, path: str, *,
                  params: dict[str, object] | None = None, body: bytes | None = None) -> Response:
    gw: Gateway = await gateway(request)
    return await forward(gw.upstream("evidence"), method, path, workspace=None,
                         params=params, body=body)


@router.get("/v1/public/evidence/{sha256}", response_model=ev.EvidenceView,
            responses=errors(404, *PUBLIC_ERRORS),
            summary="Does this evidence exist? Its metadata and inclusion proof")
async def evidence_get(sha256: Sha, request: Request) -> Response:
    return await _public(request, "GET", f"/v1/public/evidence/{sha_path(sha256)}")


@router.post("/v1/public/evidence/{sha256}/check", response_model=ev.EvidenceCheckResult,
             responses=errors(404, 413, *PUBLIC_ERRORS),
             summary="Byte-for-byte check of content against stored evidence")
async def evidence_check(sha256: Sha, body: ev.EvidenceCheckRequest,
                         request: Request) -> Response:
    return await _public(request, "POST", f"/v1/public/evidence/{sha_path(sha256)}/check",
                         body=await request.body())


@router.get("/v1/public/log/tree-head", response_model=ev.SignedTreeHead,
            responses=errors(*PUBLIC_ERRORS), summary="Latest signed tree head of the log")
async def log_tree_head(request: Request) -> Response:
    return await _public(request, "GET", "/v1/public/log/tree-head")


@router.get("/v1/public/log/consistency", response_model=ev.ConsistencyProof,
            responses=errors(*PUBLIC_ERRORS),
            summary="RFC 9162 consistency proof between two tree sizes")
async def log_consistency(request: Request, first: Annotated[int, Query(ge=1)],
                          second: Annotated[int, Query(ge=1)]) -> Response:
    return await _public(request, "GET", "/v1/public/log/consistency",
                         params={"first": first, "second": second})


@router.get("/v1/public/log/inclusion", response_model=ev.InclusionProof,
            responses=errors(*PUBLIC_ERRORS),
            summary="RFC 9162 inclusion proof of a leaf in an older tree")
async def log_inclusion(request: Request, leaf_index: Annotated[int, Query(ge=0)],
                        tree_size: Annotated[int, Query(ge=1)]) -> Response:
    return await _public(request, "GET", "/v1/public/log/inclusion",
                         params={"leaf_index": leaf_index, "tree_size": tree_size})


@router.get("/v1/public/log/leaves", response_model=ev.LogLeaves,
            responses=errors(*PUBLIC_ERRORS), summary="Log entries [start, end) for audit")
async def log_leaves(request: Request, start: Annotated[int, Query(ge=0)],
                     end: Annotated[int, Query(ge=0)]) -> Response:
    return await _public(request, "GET", "/v1/public/log/leaves",
                         params={"start": start, "end": end})


@router.get("/v1/public/log/public-key", response_model=ev.LogPublicKey,
            responses=errors(*PUBLIC_ERRORS), summary="The log's Ed25519 public key")
async def log_public_key(request: Request) -> Response:
    return await _public(request, "GET", "/v1/public/log/public-key")
