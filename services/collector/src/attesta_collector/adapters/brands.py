"""The tracked brands of a workspace, read from the classifier's internal API (it owns brands).

The collector asks for them when a prompt is created, changed or imported (to decide branded
vs unbranded) and when it labels sources; it keeps no copy of its own.
"""

from __future__ import annotations

import httpx

from attesta_collector.domain.model import BrandNames
from attesta_collector.service_layer.unit_of_work import BrandsUnavailable
from attesta_contracts.api.classifier import BrandList
from attesta_platform.http import INTERNAL_TOKEN_HEADER, WORKSPACE_HEADER


class HttpBrandDirectory:
    def __init__(self, base_url: str, internal_token: str, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = internal_token
        self.timeout_s = timeout_s

    async def brands(self, workspace_id: str) -> list[BrandNames]:
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                resp = await client.get(f"{self.base_url}/v1/brands", headers={
                    INTERNAL_TOKEN_HEADER: self.token, WORKSPACE_HEADER: workspace_id})
        except httpx.HTTPError as exc:
            raise BrandsUnavailable(f"cannot reach the classifier: {exc!r}") from None
        if resp.status_code != 200:
            raise BrandsUnavailable(f"the classifier answered {resp.status_code} for its brands")
        return [BrandNames(b.brand_id, b.name, tuple(b.aliases), tuple(b.domains),
                           tuple(b.competitors))
                for b in BrandList.model_validate_json(resp.content).items]


class StaticBrandDirectory:
    """Fixed brands (the unit tests' and the benchmark's directory)."""

    def __init__(self, brands: dict[str, list[BrandNames]]) -> None:
        self._brands = brands

    async def brands(self, workspace_id: str) -> list[BrandNames]:
        return list(self._brands.get(workspace_id, []))
