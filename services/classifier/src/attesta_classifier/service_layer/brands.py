"""Brands of a workspace: create, list, read, update. Another workspace's brand is not found."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict

from attesta_classifier.domain.commands import CreateBrand, GetBrand, ListBrands, UpdateBrand
from attesta_classifier.domain.model import Brand
from attesta_classifier.service_layer.errors import Conflict, Invalid, NotFound
from attesta_classifier.service_layer.unit_of_work import StoredBrand, UnitOfWork


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:63]
    return slug or "brand"


def _dedup(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


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


async def create_brand(cmd: CreateBrand, uow: UnitOfWork) -> StoredBrand:
    brand_id = cmd.brand_id or slugify(cmd.name)
    async with uow:
        competitors = _dedup(cmd.competitors)
        await _check_competitors(uow, cmd.workspace_id, brand_id, competitors)
        stored = await uow.brands.add(Brand(
            brand_id=brand_id, workspace_id=cmd.workspace_id, name=cmd.name,
            aliases=tuple(_dedup(cmd.aliases)), domains=tuple(_dedup(cmd.domains)),
            competitors=tuple(competitors), sources=tuple(_dedup(cmd.sources))))
        if stored is None:
            raise Conflict(f"brand {brand_id!r} already exists in this workspace")
        await uow.commit()
    return stored


async def list_brands(query: ListBrands, uow: UnitOfWork) -> list[StoredBrand]:
    async with uow.read():
        return await uow.brands.list(query.workspace_id)


async def require_brand(uow: UnitOfWork, workspace_id: str, brand_id: str,
                        *, for_update: bool = False) -> StoredBrand:
    """The brand, inside the caller's unit of work (NotFound when the workspace has none)."""
    brand = await uow.brands.get(workspace_id, brand_id, for_update=for_update)
    if brand is None:
        raise NotFound(f"no brand {brand_id!r} in this workspace")
    return brand


async def get_brand(query: GetBrand, uow: UnitOfWork) -> StoredBrand:
    async with uow.read():
        return await require_brand(uow, query.workspace_id, query.brand_id)


async def update_brand(cmd: UpdateBrand, uow: UnitOfWork) -> StoredBrand:
    changes: dict[str, object] = {
        k: (v if k == "name" else _dedup(v)) for k, v in asdict(cmd).items()
        if v is not None and k not in ("workspace_id", "brand_id")}
    async with uow:
        brand = await require_brand(uow, cmd.workspace_id, cmd.brand_id, for_update=True)
        if cmd.competitors is not None:
            await _check_competitors(uow, cmd.workspace_id, cmd.brand_id,
                                     _dedup(cmd.competitors))
        if not changes:
            return brand
        brand = await uow.brands.update(cmd.workspace_id, cmd.brand_id, changes)
        await uow.commit()
    return brand
