"""HTTP client of the public log routes, for the verifier. It trusts nothing it fetches: every
answer is parsed into the public models and then checked by ``service_layer.verification``."""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from attesta_contracts.api.evidence import (
    ConsistencyProof,
    EvidenceView,
    InclusionProof,
    LogLeaves,
    SignedTreeHead,
)


Model = TypeVar("Model", bound=BaseModel)


class FetchError(Exception):
    """The server could not be asked, or answered something that is not the contract."""


class NotRecorded(FetchError):
    pass


class LogClient:
    def __init__(self, base_url: str, timeout_s: float = 20.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s,
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def _get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        try:
            resp = self.http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise FetchError(f"GET {path}: {exc!r}") from None
        if resp.status_code == 404:
            raise NotRecorded(f"GET {path}: 404 {resp.text[:300]}")
        if resp.status_code != 200:
            raise FetchError(f"GET {path}: HTTP {resp.status_code} {resp.text[:300]}")
        return resp

    def _parse(self, model: type[Model], resp: httpx.Response) -> Model:
        try:
            return model.model_validate_json(resp.content)
        except ValueError as exc:
            raise FetchError(f"{resp.request.url}: not a {model.__name__}: {exc}") from None

    def evidence(self, sha256: str) -> EvidenceView:
        return self._parse(EvidenceView, self._get(f"/v1/public/evidence/{quote(sha256)}"))

    def tree_head(self) -> SignedTreeHead:
        return self._parse(SignedTreeHead, self._get("/v1/public/log/tree-head"))

    def consistency(self, first: int, second: int) -> ConsistencyProof:
        return self._parse(ConsistencyProof, self._get(
            "/v1/public/log/consistency", {"first": first, "second": second}))

    def inclusion(self, leaf_index: int, tree_size: int) -> InclusionProof:
        return self._parse(InclusionProof, self._get(
            "/v1/public/log/inclusion", {"leaf_index": leaf_index, "tree_size": tree_size}))

    def leaves(self, start: int, end: int) -> LogLeaves:
        return self._parse(LogLeaves, self._get("/v1/public/log/leaves",
                                                {"start": start, "end": end}))
