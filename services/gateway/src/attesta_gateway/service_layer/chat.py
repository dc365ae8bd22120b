"""Chat: one question as request/reply over Kafka (see adapters/replies.py for how the reply
finds the instance that holds its caller)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Protocol

from prometheus_client import Counter

from attesta_contracts import utc_now
from attesta_contracts.chat import ChatAnswered, ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_gateway.domain.commands import AskAssistant
from attesta_gateway.service_layer.errors import TimedOut, Unavailable

CHAT_OUTCOMES = Counter("attesta_gateway_chat_total", "Chat requests by outcome", ["outcome"])


class Publisher(Protocol):
    async def publish(self, topic: str, payload: ChatRequested, *, key: str,
                      correlation_id: str) -> object: ...


async def ask_assistant(cmd: AskAssistant, publisher: Publisher, replies: ReplyRouter,
                        reply_to: str, chat_timeout_s: float) -> ChatAnswered:
    """Publish the question and wait for its answer: ``TimedOut`` (answer_timeout) when none
    arrives in ``chat_timeout_s``, ``Unavailable`` (chat_unavailable) when Kafka refuses the
    request. The request carries the moment this caller stops waiting as its ``deadline``:
    retrieval and the answer service skip it after that instead of answering nobody ahead of the
    live requests."""
    request_id = str(uuid.uuid4())
    fut = replies.expect(request_id)
    deadline = utc_now() + timedelta(seconds=chat_timeout_s)
    try:
        await publisher.publish(
            CHAT_REQUESTED,
            ChatRequested(request_id=request_id, question=cmd.question, top_k=cmd.top_k,
                          reply_to=reply_to, workspace_id=cmd.workspace_id, deadline=deadline),
            key=request_id, correlation_id=request_id)
        reply = await asyncio.wait_for(fut, timeout=chat_timeout_s)
    except TimeoutError:
        CHAT_OUTCOMES.labels("timeout").inc()
        raise TimedOut("answer_timeout",
                       f"no answer within {chat_timeout_s:g} s (request {request_id})") from None
    except Exception as exc:  # noqa: BLE001 - Kafka refused the request: say so, no hang
        CHAT_OUTCOMES.labels("unavailable").inc()
        raise Unavailable("chat_unavailable", f"could not queue the question: {type(exc).__name__}",
                          retry_after=1) from exc
    finally:
        replies.forget(request_id)
    CHAT_OUTCOMES.labels("answered").inc()
    return reply
