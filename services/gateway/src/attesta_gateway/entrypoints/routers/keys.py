"""API keys of the caller's workspace, owned by the gateway (not forwarded): who am I
(``GET /v1/keys/me``, any key), and for admins list, create (the key shown once) and revoke.

Each route's role comes from the one role table (``domain/roles.py``), like every other route.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations as objects.

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from attesta_gateway.domain.commands import CreateKey, ListKeys, RevokeKey
from attesta_gateway.domain.idempotency import fingerprint
from attesta_gateway.domain.keys import KEY_ID_RE, Revocation, StoredKey
from attesta_gateway.domain.roles import Role, required_role
from attesta_gateway.entrypoints.api import (
    AUTH_ERRORS,
    Caller,
    IdemOptional,
    errors,
    require_role,
    role_extra,
)
from attesta_gateway.entrypoints.responses import REPLAYED_HEADER
from attesta_platform.http import ApiError

router = APIRouter(tags=["keys"])

SHOWN_ONCE = ("This is the only time the key is shown: store it now (a secret manager, not a "
              "chat or a ticket). Attesta keeps only its HMAC and cannot show it again; if it "
              "is lost, revoke it and create another.")


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$",
                      description="who or what holds the key (shown in lists and as the "
                                  "reviewer of its reviews)")
    role: Role = Field(description="viewer: reads and exports; editor: also every write but "
                                   "keys and alert channels; admin: everything")


class KeyView(BaseModel):
    key_id: str = Field(description="the key's public id (16 hex); never the secret")
    workspace_id: str
    name: str
    role: Role
    created_at: datetime | None
    last_used_at: datetime | None = Field(
        description="when the key was last used, to the minute (written at most once a minute "
                    "per key and gateway); null: not used since it was created")
    revoked_at: datetime | None
    created_by: str | None = Field(description="the admin key that created it, or cli")
    revoked_by: str | None = Field(description="the admin key that revoked it, or cli")


class KeyCreated(KeyView):
    key: str | None = Field(description="the API key (atk_<id>_<secret>): shown once. Null when "
                                        "an Idempotency-Key replays the creation")
    warning: str = SHOWN_ONCE


class KeyList(BaseModel):
    items: list[KeyView]


class KeyIdentity(BaseModel):
    """The calling key, as the web app needs it (what to show, what to hide)."""

    key_id: str
    name: str
    role: Role
    workspace_id: str


KeyIdP = Annotated[str, Path(pattern=KEY_ID_RE.pattern, description="the key id (16 hex)")]


def _guard(method: str, path: str) -> tuple[Any, dict[str, Any]]:
    """The route's role dependency and its OpenAPI extension, from the role table."""
    role = required_role(method, path)
    return require_role(role, f"{method} {path}"), role_extra(role)


_ME, _ME_EXTRA = _guard("GET", "/v1/keys/me")
_LIST, _LIST_EXTRA = _guard("GET", "/v1/keys")
_CREATE, _CREATE_EXTRA = _guard("POST", "/v1/keys")
_REVOKE, _REVOKE_EXTRA = _guard("DELETE", "/v1/keys/{key_id}")


def _view(key: StoredKey) -> dict[str, Any]:
    return KeyView(key_id=key.key_id, workspace_id=key.workspace_id, name=key.name,
                   role=key.role, created_at=key.created_at, last_used_at=key.last_used_at,
                   revoked_at=key.revoked_at, created_by=key.created_by,
                   revoked_by=key.revoked_by).model_dump(mode="json")


@router.get("/v1/keys/me", response_model=KeyIdentity, responses=errors(*AUTH_ERRORS),
            summary="The calling key: its id, name, role and workspace",
            openapi_extra=_ME_EXTRA)
async def key_me(caller: Annotated[Caller, _ME]) -> KeyIdentity:
    p = caller.principal
    return KeyIdentity(key_id=p.key_id, name=p.name, role=p.role, workspace_id=p.workspace_id)


@router.api_route("/v1/keys/me", methods=["POST", "PUT", "PATCH", "DELETE"],
                  include_in_schema=False)
async def key_me_other_methods() -> None:
    """``/v1/keys/me`` is read only. Without this, ``DELETE /v1/keys/me`` would be taken for
    ``DELETE /v1/keys/{key_id}`` and answered 422 (``me`` is not a key id) instead of 405."""
    raise ApiError(405, "method_not_allowed", "/v1/keys/me is read only; allowed: GET",
                   {"Allow": "GET"})


@router.get("/v1/keys", response_model=KeyList, responses=errors(*AUTH_ERRORS),
            summary="API keys of your workspace (admin): id, name, role, created, last used; "
                    "never a secret", openapi_extra=_LIST_EXTRA)
async def key_list(caller: Annotated[Caller, _LIST],
                   include_revoked: Annotated[bool, Query()] = False) -> JSONResponse:
    keys = await caller.gw.bus.handle(ListKeys(caller.principal.workspace_id))
    return JSONResponse({"items": [_view(k) for k in keys
                                   if include_revoked or k.revoked_at is None]})


@router.post("/v1/keys", response_model=KeyCreated, status_code=201,
             responses=errors(413, *AUTH_ERRORS, 409),
             summary="Create an API key of your workspace (admin); the key is in this answer "
                     "only", openapi_extra=_CREATE_EXTRA)
async def key_create(body: KeyCreate, request: Request, caller: Annotated[Caller, _CREATE],
                     idem: IdemOptional) -> JSONResponse:
    raw = await request.body()
    issued = await caller.gw.bus.handle(CreateKey(
        caller.principal.workspace_id, body.name, body.role, idem,
        fingerprint("POST", request.url.path, request.url.query, raw),
        actor=caller.principal.key_id))
    answer = {**_view(issued.key), "key": issued.plaintext, "warning": SHOWN_ONCE}
    return JSONResponse(answer, status_code=201,
                        headers={REPLAYED_HEADER: "true"} if issued.replayed else None)


@router.delete("/v1/keys/{key_id}", response_model=KeyView,
               responses=errors(404, 409, *AUTH_ERRORS),
               summary="Revoke an API key of your workspace (admin): refused at once (401). "
                       "409 for the workspace's last admin key", openapi_extra=_REVOKE_EXTRA)
async def key_revoke(key_id: KeyIdP, caller: Annotated[Caller, _REVOKE]) -> JSONResponse:
    ws = caller.principal.workspace_id
    outcome = await caller.gw.bus.handle(RevokeKey(key_id, ws, actor=caller.principal.key_id))
    if outcome is Revocation.NOT_FOUND:
        raise ApiError(404, "not_found", f"no key {key_id} in this workspace")
    if outcome is Revocation.LAST_ADMIN:
        raise ApiError(409, "last_admin_key",
                       f"{key_id} is the last admin key of workspace {ws}: create another "
                       "admin key first, so the workspace keeps someone who can manage keys")
    caller.gw.authenticator.forget(key_id)  # this instance refuses it from the next request
    keys = await caller.gw.bus.handle(ListKeys(ws))
    return JSONResponse(next(_view(k) for k in keys if k.key_id == key_id))
