"""The gateway's reply router: each reply completes at most one caller, and
``attesta_gateway_replies_total{outcome}`` says what happened to the others."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from attesta_contracts import Envelope
from attesta_contracts.chat import AnswerStatus, ChatAnswered
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_platform.messaging import Delivery

pytestmark = pytest.mark.unit


def _reply(request_id: str) -> tuple[Envelope[ChatAnswered], Delivery]:
    payload = ChatAnswered(request_id=request_id, question="q", answer="a", citations=[],
                           status=AnswerStatus.NO_CONTEXT, generator="test")
    env = Envelope[ChatAnswered](event_type="ChatAnswered", schema_version=1,
                                 correlation_id=request_id, producer="test", payload=payload)
    return env, Delivery("chat.answered.v1", 0, 0, request_id.encode(), b"")


def _counts() -> dict[str, float]:
    return {o: REGISTRY.get_sample_value("attesta_gateway_replies_total", {"outcome": o}) or 0.0
            for o in ("delivered", "duplicate", "late", "not_ours")}


def _delta(before: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in _counts().items()}


async def test_a_reply_is_delivered_once_and_its_duplicate_is_counted():
    router, before = ReplyRouter(), _counts()
    fut = router.expect("r1")
    await router.on_reply(*_reply("r1"))
    assert fut.result().request_id == "r1"
    router.forget("r1")  # what the HTTP route does in `finally`
    await router.on_reply(*_reply("r1"))  # redelivered reply
    assert _delta(before) == {"delivered": 1, "duplicate": 1, "late": 0, "not_ours": 0}


async def test_a_reply_after_the_caller_timed_out_is_late_not_delivered():
    router, before = ReplyRouter(), _counts()
    fut = router.expect("r2")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(fut, timeout=0.01)  # cancels the future, as the route does
    router.forget("r2")
    await router.on_reply(*_reply("r2"))
    assert _delta(before) == {"delivered": 0, "duplicate": 0, "late": 1, "not_ours": 0}


async def test_another_instances_reply_is_not_ours():
    router, before = ReplyRouter(), _counts()
    mine = router.expect("mine")
    await router.on_reply(*_reply("someone-else"))
    assert not mine.done()
    assert _delta(before) == {"delivered": 0, "duplicate": 0, "late": 0, "not_ours": 1}
