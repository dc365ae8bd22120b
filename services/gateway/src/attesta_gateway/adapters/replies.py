"""Request/reply over Kafka for the HTTP edge.

Every gateway instance reads ``chat.answered.v1`` in a consumer group of its own (from
``latest``), so each instance sees every reply and completes only the futures it holds: the
reply reaches the instance that holds its caller, however many instances run. A duplicate or
late reply finds no future and is dropped, so nothing is answered twice."""

from __future__ import annotations

import asyncio

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered
from attesta_platform.messaging import Delivery


class ReplyRouter:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[ChatAnswered]] = {}

    def expect(self, request_id: str) -> asyncio.Future[ChatAnswered]:
        fut: asyncio.Future[ChatAnswered] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = fut
        return fut

    def forget(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)

    async def on_reply(self, env: Envelope[ChatAnswered], delivery: Delivery) -> None:
        fut = self._waiting.pop(env.payload.request_id, None)
        if fut is not None and not fut.done():
            fut.set_result(env.payload)
