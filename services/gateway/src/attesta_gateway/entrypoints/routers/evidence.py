"""``/v1/evidence/{sha256}``: evidence with the references the caller's workspace holds."""

from fastapi import APIRouter
from fastapi.responses import Response

from attesta_contracts.api import evidence as ev
from attesta_gateway.entrypoints.api import AUTH_ERRORS, Authed, Sha, errors, sha_path

router = APIRouter(tags=["evidence"])


@router.get("/v1/evidence/{sha256}", response_model=ev.EvidenceInternalView,
            responses=errors(400, 404, *AUTH_ERRORS),
            summary="Evidence with the references your workspace holds")
async def evidence_internal(sha256: Sha, caller: Authed) -> Response:
    return await caller.forward("evidence", "GET", f"/v1/evidence/{sha_path(sha256)}")
