"""Request/reply over Kafka for the HTTP edge.

Every gateway instance reads ``chat.answered.v1`` in a consumer group of its own (from
``latest``), so each instance sees every reply and completes only the futures it holds: the
reply reaches the instance that holds its caller, however many instances run. A duplicate or
late reply finds no future and is dropped, so nothing is answered twice.

``attesta_gateway_replies_total{outcome}`` on /metrics counts what happened to each reply:
``delivered`` (completed a waiting caller), ``duplicate`` (a reply for a request this instance
already answered), ``late`` (its caller here had already given up: 504), ``not_ours`` (another
instance's caller, or a request this instance never saw)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from prometheus_client import Counter

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered
from attesta_platform.messaging import Delivery

REPLIES = Counter("attesta_gateway_replies_total", "Replies read from chat.answered.v1 by outcome",
                  ["outcome"])
_REMEMBERED = 10_000  # request ids kept per kind, only to label duplicates and late replies


class ReplyRouter:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[ChatAnswered]] = {}
        self._delivered: OrderedDict[str, None] = OrderedDict()
        self._abandoned: OrderedDict[str, None] = OrderedDict()

    def expect(self, request_id: str) -> asyncio.Future[ChatAnswered]:
        fut: asyncio.Future[ChatAnswered] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = fut
        return fut

    def forget(self, request_id: str) -> None:
        fut = self._waiting.pop(request_id, None)
        # A caller that gave up left its future pending or cancelled (asyncio.wait_for).
        if fut is not None and (not fut.done() or fut.cancelled()):
            _remember(self._abandoned, request_id)

    async def on_reply(self, env: Envelope[ChatAnswered], delivery: Delivery) -> None:
        request_id = env.payload.request_id
        fut = self._waiting.pop(request_id, None)
        if fut is not None and not fut.done():
            fut.set_result(env.payload)
            _remember(self._delivered, request_id)
            REPLIES.labels("delivered").inc()
        elif request_id in self._delivered:
            REPLIES.labels("duplicate").inc()
        elif request_id in self._abandoned:
            REPLIES.labels("late").inc()
        else:
            REPLIES.labels("not_ours").inc()


def _remember(ids: OrderedDict[str, None], request_id: str) -> None:
    ids[request_id] = None
    if len(ids) > _REMEMBERED:
        ids.popitem(last=False)
