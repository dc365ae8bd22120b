"""What the gateway can be asked to do, as data: forward a call (at most once per
Idempotency-Key, or passed on while it arrives), ask the assistant, and manage API keys.

Every entrypoint (the HTTP routes, the CLI) builds one of these and hands it to the message
bus; ``service_layer/handlers.py`` lists the handler of each. Each message names what handling
it returns (``Message[Result]``); the result types are the service layer's, named here for the
type checker only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attesta_gateway.domain.roles import DEFAULT_ROLE, Role
from attesta_platform.bus import Message

# The results' types, for the type checker only (named in strings below, which ruff does not
# read as uses): at run time the domain imports nothing from the service layer.
if TYPE_CHECKING:
    from attesta_contracts.chat import ChatAnswered  # noqa: F401
    from attesta_gateway.domain.keys import IssuedKey, Revocation, StoredKey  # noqa: F401
    from attesta_gateway.service_layer.forwarding import Forwarded, Streamed  # noqa: F401

JSON = "application/json"
JSON_ONLY = (JSON,)  # what most routes' successful answers may be


@dataclass(frozen=True)
class Forward(Message["Forwarded"]):
    """Pass a call on to ``service`` for ``workspace`` (None: a public route, no workspace);
    ``media_types``: what a successful answer may be."""

    service: str
    method: str
    path: str
    workspace: str | None
    actor: str | None = None
    actor_name: str | None = None
    params: Mapping[str, object] | None = None
    body: bytes | None = None
    media_types: tuple[str, ...] = JSON_ONLY


@dataclass(frozen=True)
class ForwardOnce(Message["Forwarded"]):
    """A creating POST, forwarded at most once per (workspace, Idempotency-Key ``key``);
    ``fingerprint`` tells a retry from another request under the same key."""

    service: str
    path: str
    workspace: str
    actor: str
    key: str | None
    fingerprint: str
    body: bytes | None
    actor_name: str | None = None


@dataclass(frozen=True)
class StreamExport(Message["Forwarded | Streamed"]):
    """A GET whose answer (a file) is passed on while it arrives."""

    service: str
    path: str
    workspace: str
    actor: str | None
    params: Mapping[str, object] | None
    media_types: tuple[str, ...]
    actor_name: str | None = None


@dataclass(frozen=True)
class AskAssistant(Message["ChatAnswered"]):
    question: str
    top_k: int
    workspace_id: str | None  # None: an anonymous chat


@dataclass(frozen=True)
class CreateKey(Message["IssuedKey"]):
    """A new API key of ``role`` for ``workspace_id`` (the key itself is in the result, shown
    once). With an Idempotency-Key (``key``, ``fingerprint`` as for ``ForwardOnce``) at most one
    key per key: a retry gets the same key back without its secret, which is never stored."""

    workspace_id: str
    name: str = ""
    role: Role = DEFAULT_ROLE
    key: str | None = None
    fingerprint: str = ""
    actor: str = "cli"  # who creates it: the calling admin key's id, or the operator's CLI


@dataclass(frozen=True)
class RevokeKey(Message["Revocation"]):
    """Revoke ``key_id``. ``workspace_id`` set (the API): only a key of that workspace, and never
    its last active admin. None (the operator's CLI): any key."""

    key_id: str
    workspace_id: str | None = None
    actor: str = "cli"


@dataclass(frozen=True)
class ListKeys(Message["list[StoredKey]"]):
    workspace_id: str | None = None
