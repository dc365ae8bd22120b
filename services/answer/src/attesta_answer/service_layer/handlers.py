from __future__ import annotations

import hashlib

from attesta_answer.domain.extractive import answer
from attesta_contracts import Envelope, derived_id
from attesta_contracts.chat import AnswerStatus, ChatAnswered, RetrievalCompleted
from attesta_contracts.topics import CHAT_ANSWERED
from attesta_platform.messaging import Delivery, Messaging

GENERATOR = "skeleton-extractive-v0"


def make_answer(messaging: Messaging):
    async def build_answer(env: Envelope[RetrievalCompleted], delivery: Delivery) -> None:
        r = env.payload
        text, citations = answer(r.question, r.chunks)
        reply = ChatAnswered(
            request_id=r.request_id, question=r.question, answer=text, citations=citations,
            status=AnswerStatus.ANSWERED if citations else AnswerStatus.NO_CONTEXT,
            hybrid_path=r.hybrid_path, generator=GENERATOR,
            answer_sha256=hashlib.sha256(text.encode()).hexdigest(), reply_to=r.reply_to,
        )
        await messaging.publish(
            CHAT_ANSWERED, reply, key=r.request_id, correlation_id=env.correlation_id,
            causation_id=str(env.event_id), event_id=derived_id("answer", env.event_id),
        )

    return build_answer
