"""What every route of the gateway shares: documented errors, the caller's credentials and
rate limits as FastAPI dependencies, Idempotency-Key parsing, and forwarding on the caller's
behalf. Routes get the process's ``Gateway`` through the ``Container`` dependency
(``entrypoints/deps.py``), so route modules are plain declarations and build nothing at import
time.

A route that passes a call on under the same path is a row of ``entrypoints/route_table.py``::

    Route("thing_list", "GET", "/v1/things", "classifier", ThingList, errors(*AUTH_ERRORS),
          ("things",), "Things of your workspace"),
"""

# No `from __future__ import annotations`: FastAPI resolves the Annotated aliases at runtime.

import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request
from fastapi.responses import Response
from fastapi.security import APIKeyHeader, HTTPBearer

from attesta_gateway.domain.commands import JSON_ONLY, Forward, ForwardOnce, StreamExport
from attesta_gateway.domain.idempotency import (
    InvalidIdempotencyKey,
    fingerprint,
    parse_idempotency_key,
)
from attesta_gateway.domain.keys import Principal
from attesta_gateway.domain.roles import Role, allows
from attesta_gateway.entrypoints.deps import Container, Gateway
from attesta_gateway.service_layer.auth import credentials_from, unauthorized
from attesta_gateway.entrypoints.responses import REPLAYED_HEADER, to_response
from attesta_gateway.service_layer.errors import Unauthenticated
from attesta_platform.http import ApiError, ErrorResponse

SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
BRAND_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
OPAQUE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
# A bare token, or a Structured Fields string (quoted, with \" and \\ escapes).
IDEMPOTENCY_KEY_PATTERN = r'^(?:[!#-~]{1,255}|"(?:[ !#-\[\]-~]|\\["\\]){1,255}")$'

# -- documented errors ------------------------------------------------------------------------
_ERROR_TEXT = {
    400: "Bad request (e.g. malformed Idempotency-Key or hash, a header sent twice, a NUL in "
         "the URL): see error.code / error.reason",
    401: "Missing, malformed, unknown or revoked API key",
    403: "The API key's role does not allow this route (error.code forbidden; role_not_defined: "
         "a route missing from the role table, refused to every key)",
    404: "Not found (or not in the caller's workspace)",
    409: "Conflict (e.g. a request with this Idempotency-Key is still in flight)",
    413: "Request body too large",
    422: "The request does not validate (or an Idempotency-Key was reused with another payload)",
    429: "Rate limit exceeded: retry after Retry-After seconds",
    502: "The service behind the gateway answered something unusable",
    503: "A service behind the gateway (or the rate limiter / key store) is unavailable",
    504: "A service behind the gateway did not answer in time",
}
_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before retrying",
                                "schema": {"type": "integer", "minimum": 1}}}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        entry: dict[str, Any] = {"model": ErrorResponse, "description": _ERROR_TEXT[code]}
        if code in (429, 503):
            entry["headers"] = _RETRY_AFTER
        out[code] = entry
    return out


# 400 everywhere: a NUL in the URL or a header sent twice is refused before any route.
PUBLIC_ERRORS = (400, 422, 429, 502, 503, 504)
AUTH_ERRORS = (400, 401, 403, 422, 429, 502, 503, 504)  # 403: the key's role (domain/roles.py)


# -- the gateway and the caller ---------------------------------------------------------------
def client_of(request: Request) -> str:
    return request.client.host if request.client else "unknown"


# The two ways to present an API key, as OpenAPI security schemes. The app factory writes them
# into the document (http.py) for every route that depends on ``require_key`` instead of each
# route declaring them as ``Security`` parameters: those ran two dependencies per request only
# to be listed in the document (``principal_of`` reads the raw headers itself).
KEY_SCHEMES = (
    HTTPBearer(auto_error=False, scheme_name="bearerKey",
               description="Authorization: Bearer <API key>"),
    APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKeyHeader",
                 description="X-API-Key: <API key>"),
)


def _single(request: Request, name: str) -> str | None:
    """A header that must appear at most once (two lines of it are ambiguous: 400)."""
    values = request.headers.getlist(name)
    if len(values) > 1:
        raise ApiError(400, "duplicate_header", f"the {name} header was sent {len(values)} times; "
                                                "send it once")
    return values[0] if values else None


async def principal_of(request: Request, gw: Gateway) -> Principal | None:
    """The caller's principal, or None when no key was sent."""
    # Read the raw headers: the security helpers report an empty header as "no header", and a
    # present-but-empty key must be a 401, not an anonymous call.
    x_api_key = _single(request, "x-api-key")
    authorization = _single(request, "authorization")
    if x_api_key is None and authorization is None:
        return None
    try:
        presented = credentials_from(authorization, x_api_key)
        principal = await gw.authenticator.authenticate(presented or "")
    except Unauthenticated as exc:
        # Counted after the check, per address: a valid key is never refused for the failures
        # of others behind the same address (service_layer/limits.py).
        raise await gw.limits.failed_authentication(client_of(request), exc) from None
    gw.last_used.seen(principal.key_id)
    return principal


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: its principal, and forwarding on its behalf (its workspace, key
    id and key name travel to the service)."""

    gw: Gateway
    principal: Principal

    async def forward(self, service: str, method: str, path: str, *,
                      params: dict[str, object] | None = None,
                      body: bytes | None = None,
                      media_types: tuple[str, ...] = JSON_ONLY) -> Response:
        p = self.principal
        result = await self.gw.bus.handle(Forward(
            service, method, path, p.workspace_id, p.key_id, p.name, params, body, media_types))
        return to_response(result)

    async def stream(self, service: str, path: str, *, params: dict[str, object] | None,
                     media_types: tuple[str, ...]) -> Response:
        """A GET passed on while it arrives (exports)."""
        p = self.principal
        return to_response(await self.gw.bus.handle(StreamExport(
            service, path, p.workspace_id, p.key_id, params, media_types, p.name)))

    async def create(self, request: Request, idempotency_key: str | None, service: str,
                     path: str, body: bytes | None = None) -> Response:
        """A creating POST: forwarded at most once per Idempotency-Key (when one is sent)."""
        raw = await request.body() if body is None else body
        p = self.principal
        result = await self.gw.bus.handle(ForwardOnce(
            service, path, p.workspace_id, p.key_id, idempotency_key,
            fingerprint("POST", request.url.path, request.url.query, raw), raw or None, p.name))
        return to_response(result)


async def require_key(request: Request, gw: Container) -> Caller:
    principal = await principal_of(request, gw)
    if principal is None:
        raise unauthorized("an API key is required: send 'Authorization: Bearer <key>' or "
                           "'X-API-Key: <key>'")
    await gw.limits.for_key(principal.key_id)
    return Caller(gw, principal)


Authed = Annotated[Caller, Depends(require_key)]


def authorize(principal: Principal, need: Role | None, route: str) -> None:
    """403 for ``principal`` on a route that needs role ``need`` (None: a route the role table
    does not cover, refused to every key: failing closed)."""
    if need is None:
        raise ApiError(403, "role_not_defined",
                       f"{route} has no row in the gateway's role table, so no key may call "
                       "it yet (attesta_gateway/domain/roles.py)")
    if not allows(principal.role, need):
        article = "an" if principal.role == Role.ADMIN else "a"
        raise ApiError(403, "forbidden",
                       f"{route} needs the {need} role; this key ({principal.key_id}) is "
                       f"{article} {principal.role} of its workspace")


ROLE_EXTENSION = "x-attesta-role"  # the least role an operation needs, in the OpenAPI document


def role_extra(role: Role | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` naming the role (``none``: refused to every key, not in the table)."""
    return {**(extra or {}), ROLE_EXTENSION: str(role) if role is not None else "none"}


def require_role(need: Role | None, route: str) -> Any:
    """The dependency of an authenticated route: its key, its rate limit, then its role
    (``domain/roles.py``, resolved once when the route is built). A refused role is a 403
    before the body is validated or anything is forwarded."""

    async def dep(caller: Authed) -> Caller:
        authorize(caller.principal, need, route)
        return caller

    return Depends(dep)


async def public_limit(request: Request, gw: Container) -> None:
    await gw.limits.for_public(client_of(request))


def idempotency_key(required: bool) -> Any:
    desc = ("Idempotency-Key (IETF httpapi draft): a unique string per logical request, "
            "e.g. a UUID. A retry with the same key and payload replays the stored answer "
            f"(header {REPLAYED_HEADER}: true); same key + other payload: 422; while the "
            "first is in flight: 409. Kept 24 h, per workspace."
            + (" Required." if required else " Optional."))

    async def dep(request: Request, idem: Annotated[str | None, Header(
            alias="Idempotency-Key", description=desc,
            json_schema_extra={"pattern": IDEMPOTENCY_KEY_PATTERN})] = None) -> str | None:
        if idem is not None:
            idem = _single(request, "idempotency-key")  # FastAPI would take the last line
        if idem is None:
            if required:
                raise ApiError(400, "idempotency_key_required",
                               "this request needs an Idempotency-Key header "
                               '(e.g. Idempotency-Key: "<a new UUID>")')
            return None
        try:
            return parse_idempotency_key(idem)
        except InvalidIdempotencyKey as exc:
            raise ApiError(400, "invalid_idempotency_key", str(exc)) from exc

    return Depends(dep)


IdemOptional = Annotated[str | None, idempotency_key(False)]
IdemRequired = Annotated[str | None, idempotency_key(True)]

# -- path parameters --------------------------------------------------------------------------
# The pattern is documented, not enforced by FastAPI: a bad hash is the evidence API's own 400
# invalid_sha256, not a generic 422.
Sha = Annotated[str, Path(description="SHA-256 of the evidence: 64 hex digits "
                                      "(upper case accepted)",
                          json_schema_extra={"pattern": SHA256_RE.pattern})]
BrandIdP = Annotated[str, Path(pattern=BRAND_ID_PATTERN, description="brand id (slug)")]
RunIdP = Annotated[str, Path(pattern=OPAQUE_ID_PATTERN, description="run id")]


def sha_path(sha256: str) -> str:
    if not SHA256_RE.fullmatch(sha256):  # not .match: "$" would accept a trailing newline
        raise ApiError(400, "invalid_sha256", "a SHA-256 is 64 hexadecimal digits")
    return sha256.lower()
