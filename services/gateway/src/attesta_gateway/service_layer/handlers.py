"""Everything the gateway can be asked to do: one handler per message (``domain/commands.py``).

A handler takes the message and its dependencies by parameter name (``upstream``: the internal
service of a name; ``uow``: keys and idempotency records; ``publisher`` and ``replies``: chat
over Kafka; settings such as ``chat_timeout_s``); ``bootstrap.py`` binds them once. The handlers
live with their use case: ``forwarding``, ``chat`` and ``keys``."""

from __future__ import annotations

from typing import Any

from attesta_gateway.domain import commands as c
from attesta_gateway.service_layer.chat import ask_assistant
from attesta_gateway.service_layer.forwarding import forward, forward_once, stream_export
from attesta_gateway.service_layer.keys import create_key, list_keys, revoke_key
from attesta_platform.bus import Handler, Message

HANDLERS: dict[type[Message[Any]], Handler] = {
    c.Forward: forward,
    c.ForwardOnce: forward_once,
    c.StreamExport: stream_export,
    c.AskAssistant: ask_assistant,
    c.CreateKey: create_key,
    c.RevokeKey: revoke_key,
    c.ListKeys: list_keys,
}
# What the CLI asks (it has no upstreams and no Kafka: bootstrap binds only these).
KEY_COMMANDS = (c.CreateKey, c.RevokeKey, c.ListKeys)
