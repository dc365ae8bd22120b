"""Everything the gateway can be asked to do: one handler per message (``domain/commands.py``).

A handler takes the message and its dependencies by parameter name (``upstream``: the internal
service of a name; ``uow``: keys and idempotency records; ``publisher`` and ``replies``: chat
over Kafka; settings such as ``chat_timeout_s``); ``bootstrap.py`` binds them once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attesta_contracts.chat import ChatAnswered
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_gateway.adapters.upstream import Upstream
from attesta_gateway.domain import commands as c
from attesta_gateway.domain.keys import IssuedKey, Revocation, StoredKey
from attesta_gateway.service_layer import chat, keys
from attesta_gateway.service_layer.forwarding import (
    Forwarded,
    Streamed,
    forward,
    forward_idempotently,
    forward_stream,
)
from attesta_gateway.service_layer.unit_of_work import UnitOfWork
from attesta_platform.bus import Handler, Message

Upstreams = Callable[[str], Upstream]


async def forward_call(cmd: c.Forward, upstream: Upstreams) -> Forwarded:
    return await forward(upstream(cmd.service), cmd.method, cmd.path, workspace=cmd.workspace,
                         actor=cmd.actor, params=_params(cmd.params), body=cmd.body,
                         media_types=cmd.media_types, actor_name=cmd.actor_name)


async def forward_once(cmd: c.ForwardOnce, uow: UnitOfWork, upstream: Upstreams) -> Forwarded:
    return await forward_idempotently(
        uow.idempotency, upstream(cmd.service), key=cmd.key, fingerprint=cmd.fingerprint,
        method="POST", path=cmd.path, workspace=cmd.workspace, actor=cmd.actor, body=cmd.body,
        actor_name=cmd.actor_name)


async def stream_export(cmd: c.StreamExport, upstream: Upstreams) -> Forwarded | Streamed:
    return await forward_stream(upstream(cmd.service), cmd.path, workspace=cmd.workspace,
                                actor=cmd.actor, params=_params(cmd.params),
                                media_types=cmd.media_types, actor_name=cmd.actor_name)


async def ask_assistant(cmd: c.AskAssistant, publisher: chat.Publisher, replies: ReplyRouter,
                        reply_to: str, chat_timeout_s: float) -> ChatAnswered:
    return await chat.ask(publisher, replies, question=cmd.question, top_k=cmd.top_k,
                          workspace_id=cmd.workspace_id, reply_to=reply_to,
                          timeout_s=chat_timeout_s)


async def create_key(cmd: c.CreateKey, uow: UnitOfWork, secret: bytes) -> IssuedKey:
    return await keys.create(cmd, uow, secret)


async def revoke_key(cmd: c.RevokeKey, uow: UnitOfWork) -> Revocation:
    return await keys.revoke(cmd, uow)


async def list_keys(cmd: c.ListKeys, uow: UnitOfWork) -> list[StoredKey]:
    return await uow.keys.list(cmd.workspace_id)


def _params(params: Any) -> dict[str, object] | None:
    return None if params is None else dict(params)


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.Forward: forward_call,
    c.ForwardOnce: forward_once,
    c.StreamExport: stream_export,
    c.AskAssistant: ask_assistant,
    c.CreateKey: create_key,
    c.RevokeKey: revoke_key,
    c.ListKeys: list_keys,
}
# What the CLI asks (it has no upstreams and no Kafka: bootstrap binds only these).
KEY_COMMANDS = (c.CreateKey, c.RevokeKey, c.ListKeys)
