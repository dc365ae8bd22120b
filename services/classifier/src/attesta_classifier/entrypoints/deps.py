"""What the classifier's routes get injected (FastAPI dependencies, defined once): the message
bus, the caller's workspace (after the internal token) and the forwarded request headers.

``create_app`` puts the bus and the token on the app; these are the only readers of it. Each
dependency takes the ``Request`` itself, so none adds a parameter to the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, TypeVar, cast

from fastapi import Depends, Request

from attesta_classifier.domain.commands import Reviewer
from attesta_platform.bus import MessageBus
from attesta_platform.http import ACTOR_HEADER, ApiError, actor_name_of, check_internal_token

T = TypeVar("T")


def message_bus(request: Request) -> MessageBus:
    return cast(MessageBus, request.app.state.bus)


def workspace(request: Request) -> str:
    """The caller's workspace, once the internal token checked out (401/400 otherwise)."""
    return check_internal_token(request, cast(str, request.app.state.internal_token))


def actor(request: Request) -> str | None:
    """The API key the gateway forwards (its id), if any."""
    return (request.headers.get(ACTOR_HEADER) or "").strip()[:200] or None


def reviewer(request: Request) -> Reviewer | None:
    """Who decides: the API key's name the gateway forwards (its id when the key has none)."""
    key_id = actor(request)
    name = actor_name_of(request) or key_id
    return None if name is None else Reviewer(name, key_id)


def needs_actor(who: T | None, reason: str) -> T:
    """A route's check, after the body validated (a 422 comes first, as FastAPI orders it)."""
    if who is None:
        raise ApiError(400, "missing_actor", reason)
    return who


def idempotency_key(request: Request) -> str | None:
    return request.headers.get("idempotency-key")


Bus = Annotated[MessageBus, Depends(message_bus)]
Ws = Annotated[str, Depends(workspace)]
Actor = Annotated[str | None, Depends(actor)]
ReviewerOf = Annotated[Reviewer | None, Depends(reviewer)]
IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]
