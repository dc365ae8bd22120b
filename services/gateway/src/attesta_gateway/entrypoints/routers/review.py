"""The review queue (classifier, issue #28): pairs the judge did not decide, which a person
decides, and the blind sample of its own labels, which a person labels to measure agreement.
The reviewer is the API key's name (forwarded with the key id, ``Caller``)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_gateway.entrypoints.api import (
    AUTH_ERRORS,
    BRAND_ID_PATTERN,
    Authed,
    BrandIdP,
    IdemOptional,
    RunIdP,
    errors,
)

router = APIRouter(tags=["review"])


@router.get("/v1/review/queue", response_model=cls.ReviewQueue,
            responses=errors(400, *AUTH_ERRORS),
            summary="The review queue: pending pairs (oldest first), then the blind sample, "
                    "with how many are pending and how long the oldest has waited")
async def review_queue(
    caller: Authed,
    brand_id: Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)] = None,
    kind: Annotated[cls.ReviewKind | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
) -> Response:
    return await caller.forward("classifier", "GET", "/v1/review/queue", params={
        "brand_id": brand_id, "kind": kind.value if kind else None, "limit": limit,
        "cursor": cursor})


@router.get("/v1/review/queue/{run_id}/{brand_id}", response_model=cls.ReviewItem,
            responses=errors(404, *AUTH_ERRORS),
            summary="One pair to review: the answer with the brand's mentions, the facts with "
                    "their hashes, and what the judge said (not on a blind sample item)")
async def review_item(run_id: RunIdP, brand_id: BrandIdP, caller: Authed) -> Response:
    return await caller.forward("classifier", "GET", f"/v1/review/queue/{run_id}/{brand_id}")


@router.post("/v1/review/queue/{run_id}/{brand_id}/decision",
             response_model=cls.ReviewDecisionResult, status_code=201,
             responses=errors(400, 404, 409, 413, *AUTH_ERRORS),
             summary="Record a person's class for the pair (appended to the history as "
                     "decided_by human, or stored as a blind review of the judge's label)")
async def review_decide(run_id: RunIdP, brand_id: BrandIdP, body: cls.ReviewDecisionCreate,
                        request: Request, caller: Authed, idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier",
                               f"/v1/review/queue/{run_id}/{brand_id}/decision")


@router.get("/v1/review/agreement", response_model=cls.JudgeAgreement,
            responses=errors(400, *AUTH_ERRORS),
            summary="Judge-human agreement over the blind reviews: per-class precision and "
                    "Cohen's kappa, with n")
async def review_agreement(
    caller: Authed,
    judge_model: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> Response:
    return await caller.forward("classifier", "GET", "/v1/review/agreement",
                                params={"judge_model": judge_model})
