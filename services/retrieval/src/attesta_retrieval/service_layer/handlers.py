from __future__ import annotations

from attesta_contracts import Envelope, derived_id
from attesta_contracts.chat import ChatRequested, RetrievalCompleted
from attesta_contracts.topics import RETRIEVAL_COMPLETED
from attesta_platform.messaging import Delivery, Messaging
from attesta_retrieval.domain.lexical import LexicalIndex

SKELETON_REASON = "walking skeleton: BM25 only; hybrid retrieval not built yet (issue #4)"


def make_retrieve(index: LexicalIndex, messaging: Messaging):
    async def retrieve(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        req = env.payload
        result = RetrievalCompleted(
            request_id=req.request_id, question=req.question, top_k=req.top_k,
            chunks=index.search(req.question, req.top_k), hybrid_path=None,
            path_reason=SKELETON_REASON, reply_to=req.reply_to, workspace_id=req.workspace_id,
        )
        await messaging.publish(
            RETRIEVAL_COMPLETED, result, key=req.request_id, correlation_id=env.correlation_id,
            causation_id=str(env.event_id),
            event_id=derived_id("retrieval", env.event_id),  # redelivery -> same output id
        )

    return retrieve
