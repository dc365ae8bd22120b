"""Brands and their ground truth (classifier)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from attesta_contracts.api import classifier as cls
from attesta_gateway.entrypoints.api import AUTH_ERRORS, Authed, BrandIdP, IdemOptional, errors

router = APIRouter()


@router.post("/v1/brands", response_model=cls.Brand, status_code=201,
             responses=errors(400, 409, 413, 404, *AUTH_ERRORS), tags=["brands"],
             summary="Track a brand")
async def brand_create(body: cls.BrandCreate, request: Request, caller: Authed,
                       idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier", "/v1/brands")


@router.get("/v1/brands", response_model=cls.BrandList, responses=errors(*AUTH_ERRORS),
            tags=["brands"], summary="Brands of your workspace")
async def brand_list(caller: Authed) -> Response:
    return await caller.forward("classifier", "GET", "/v1/brands")


@router.get("/v1/brands/{brand_id}", response_model=cls.Brand,
            responses=errors(404, *AUTH_ERRORS), tags=["brands"])
async def brand_get(brand_id: BrandIdP, caller: Authed) -> Response:
    return await caller.forward("classifier", "GET", f"/v1/brands/{brand_id}")


@router.patch("/v1/brands/{brand_id}", response_model=cls.Brand,
              responses=errors(404, 409, 413, *AUTH_ERRORS), tags=["brands"],
              summary="Change a brand (only the fields present)")
async def brand_update(brand_id: BrandIdP, body: cls.BrandUpdate, request: Request,
                       caller: Authed) -> Response:
    return await caller.forward("classifier", "PATCH", f"/v1/brands/{brand_id}",
                                body=await request.body())


@router.post("/v1/brands/{brand_id}/ground-truth/refresh", response_model=cls.RefreshResult,
             responses=errors(400, 404, 409, *AUTH_ERRORS), tags=["ground truth"],
             summary="Fetch the brand's sources and refresh its ground truth")
async def ground_truth_refresh(brand_id: BrandIdP, request: Request, caller: Authed,
                               idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier",
                               f"/v1/brands/{brand_id}/ground-truth/refresh", body=b"")


@router.get("/v1/brands/{brand_id}/ground-truth", response_model=cls.GroundTruth,
            responses=errors(404, *AUTH_ERRORS), tags=["ground truth"],
            summary="The brand's active ground-truth facts and their hash (and, on request, "
                    "the superseded facts with their validity)")
async def ground_truth_get(brand_id: BrandIdP, caller: Authed,
                           include_superseded: Annotated[bool, Query()] = False) -> Response:
    return await caller.forward("classifier", "GET", f"/v1/brands/{brand_id}/ground-truth",
                                params={"include_superseded": include_superseded or None})


@router.post("/v1/brands/{brand_id}/ground-truth/facts",
             response_model=cls.GroundTruthFactView, status_code=201,
             responses={200: {"model": cls.GroundTruthFactView,
                              "description": "the same fact is already active"},
                        **errors(400, 404, 409, 413, *AUTH_ERRORS)},
             tags=["ground truth"], summary="Add a manual ground-truth fact")
async def ground_truth_fact_add(brand_id: BrandIdP, body: cls.ManualFactCreate,
                                request: Request, caller: Authed,
                                idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier",
                               f"/v1/brands/{brand_id}/ground-truth/facts")


@router.post("/v1/brands/{brand_id}/reverify", response_model=cls.ReverifyResult,
             responses=errors(400, 404, 409, *AUTH_ERRORS), tags=["ground truth"],
             summary="Reclassify the brand's runs against its current ground truth")
async def brand_reverify(brand_id: BrandIdP, request: Request, caller: Authed,
                         idem: IdemOptional) -> Response:
    return await caller.create(request, idem, "classifier", f"/v1/brands/{brand_id}/reverify",
                               body=b"")
