"""Brands of a workspace: create, list, read, update. Another workspace's brand is not found."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import asyncpg

from attesta_classifier.adapters.postgres import BRAND_COLUMNS
from attesta_classifier.service_layer.errors import Conflict, Invalid, NotFound


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:63]
    return slug or "brand"


def _dedup(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


async def _check_competitors(conn: asyncpg.Connection, workspace_id: str, brand_id: str,
                             competitors: list[str]) -> None:
    if brand_id in competitors:
        raise Invalid("a brand cannot be its own competitor")
    if not competitors:
        return
    known = {r["brand_id"] for r in await conn.fetch(
        "SELECT brand_id FROM brands WHERE workspace_id = $1 AND brand_id = ANY($2::text[])",
        workspace_id, competitors)}
    missing = [c for c in competitors if c not in known]
    if missing:
        raise Invalid(f"competitors must be brands of this workspace; unknown: {', '.join(missing)}")


async def create_brand(pool: asyncpg.Pool, workspace_id: str, body: Any) -> asyncpg.Record:
    brand_id = body.brand_id or slugify(body.name)
    async with pool.acquire() as conn, conn.transaction():
        competitors = _dedup(body.competitors) or []
        await _check_competitors(conn, workspace_id, brand_id, competitors)
        row = await conn.fetchrow(
            "INSERT INTO brands (workspace_id, brand_id, name, aliases, domains, competitors, sources) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING "
            f"RETURNING {BRAND_COLUMNS}",
            workspace_id, brand_id, body.name, _dedup(body.aliases), _dedup(body.domains),
            competitors, _dedup(body.sources))
        if row is None:
            raise Conflict(f"brand {brand_id!r} already exists in this workspace")
        return row


async def list_brands(pool: asyncpg.Pool, workspace_id: str) -> list[asyncpg.Record]:
    async with pool.acquire() as conn:
        return await conn.fetch(f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = $1 "
                                "ORDER BY brand_id", workspace_id)


async def get_brand_row(conn: asyncpg.Connection, workspace_id: str, brand_id: str,
                        *, for_update: bool = False) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"SELECT {BRAND_COLUMNS} FROM brands WHERE workspace_id = $1 AND brand_id = $2"
        + (" FOR UPDATE" if for_update else ""), workspace_id, brand_id)
    if row is None:
        raise NotFound(f"no brand {brand_id!r} in this workspace")
    return row


async def get_brand(pool: asyncpg.Pool, workspace_id: str, brand_id: str) -> asyncpg.Record:
    async with pool.acquire() as conn:
        return await get_brand_row(conn, workspace_id, brand_id)


async def update_brand(pool: asyncpg.Pool, workspace_id: str, brand_id: str, body: Any) -> asyncpg.Record:
    changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
    async with pool.acquire() as conn, conn.transaction():
        await get_brand_row(conn, workspace_id, brand_id, for_update=True)
        if "competitors" in changes:
            changes["competitors"] = _dedup(changes["competitors"])
            await _check_competitors(conn, workspace_id, brand_id, changes["competitors"])
        for key in ("aliases", "domains", "sources"):
            if key in changes:
                changes[key] = _dedup(changes[key])
        if not changes:
            return await get_brand_row(conn, workspace_id, brand_id)
        sets = ", ".join(f"{k} = ${i}" for i, k in enumerate(changes, start=3))
        return await conn.fetchrow(
            f"UPDATE brands SET {sets}, updated_at = now() WHERE workspace_id = $1 AND brand_id = $2 "
            f"RETURNING {BRAND_COLUMNS}", workspace_id, brand_id, *changes.values())
