"""Brands of a workspace: create, list, read, update. Another workspace's brand is not found."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from attesta_classifier.domain.model import Brand
from attesta_classifier.service_layer.errors import Conflict, Invalid, NotFound
from attesta_classifier.service_layer.unit_of_work import StoredBrand, UnitOfWork


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:63]
    return slug or "brand"


def _dedup(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


async def _check_competitors(uow: UnitOfWork, workspace_id: str, brand_id: str,
                             competitors: list[str]) -> None:
    if brand_id in competitors:
        raise Invalid("a brand cannot be its own competitor")
    if not competitors:
        return
    known = await uow.brands.existing(workspace_id, competitors)
    missing = [c for c in competitors if c not in known]
    if missing:
        raise Invalid(f"competitors must be brands of this workspace; unknown: {', '.join(missing)}")


async def create_brand(uow: UnitOfWork, workspace_id: str, body: Any) -> StoredBrand:
    brand_id = body.brand_id or slugify(body.name)
    async with uow:
        competitors = _dedup(body.competitors) or []
        await _check_competitors(uow, workspace_id, brand_id, competitors)
        stored = await uow.brands.add(Brand(
            brand_id=brand_id, workspace_id=workspace_id, name=body.name,
            aliases=tuple(_dedup(body.aliases) or ()), domains=tuple(_dedup(body.domains) or ()),
            competitors=tuple(competitors), sources=tuple(_dedup(body.sources) or ())))
        if stored is None:
            raise Conflict(f"brand {brand_id!r} already exists in this workspace")
        await uow.commit()
    return stored


async def list_brands(uow: UnitOfWork, workspace_id: str) -> list[StoredBrand]:
    async with uow.read():
        return await uow.brands.list(workspace_id)


async def require_brand(uow: UnitOfWork, workspace_id: str, brand_id: str,
                        *, for_update: bool = False) -> StoredBrand:
    """The brand, inside the caller's unit of work (404 when the workspace has none)."""
    brand = await uow.brands.get(workspace_id, brand_id, for_update=for_update)
    if brand is None:
        raise NotFound(f"no brand {brand_id!r} in this workspace")
    return brand


async def get_brand(uow: UnitOfWork, workspace_id: str, brand_id: str) -> StoredBrand:
    async with uow.read():
        return await require_brand(uow, workspace_id, brand_id)


async def update_brand(uow: UnitOfWork, workspace_id: str, brand_id: str, body: Any) -> StoredBrand:
    changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
    async with uow:
        brand = await require_brand(uow, workspace_id, brand_id, for_update=True)
        if "competitors" in changes:
            changes["competitors"] = _dedup(changes["competitors"])
            await _check_competitors(uow, workspace_id, brand_id, changes["competitors"])
        for key in ("aliases", "domains", "sources"):
            if key in changes:
                changes[key] = _dedup(changes[key])
        if not changes:
            return brand
        brand = await uow.brands.update(workspace_id, brand_id, changes)
        await uow.commit()
    return brand
