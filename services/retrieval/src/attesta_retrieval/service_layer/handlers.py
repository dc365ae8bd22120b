"""Message handlers: a card event becomes an index change; a chat request becomes a
``RetrievalCompleted`` with the hybrid-path label."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from attesta_contracts import Envelope, derived_id, utc_now
from attesta_contracts.chat import ChatRequested, RetrievalCompleted
from attesta_contracts.kb import KbCardPublished
from attesta_contracts.topics import RETRIEVAL_COMPLETED
from attesta_platform.errors import PermanentError
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Delivery, Messaging
from attesta_retrieval.domain.model import Card, card_content_sha256
from attesta_retrieval.service_layer.indexing import CardEvent
from attesta_retrieval.service_layer.retrieval import HybridRetriever


def card_event(env: Envelope[KbCardPublished], delivery: Delivery) -> CardEvent:
    """A valid card event, or ``PermanentError`` with the reason (it gets dead-lettered)."""
    pub = env.payload
    card = pub.card
    if delivery.key is not None and delivery.key != card.card_id.encode():
        raise PermanentError(
            f"message key {delivery.key!r} is not the card id {card.card_id!r}: on a compacted "
            "topic that would leave two versions of the card alive")
    if pub.deleted:
        return CardEvent(card.card_id, delivery.partition, delivery.offset, None)
    actual = card_content_sha256(card.model_dump(mode="json"))
    if actual != pub.content_sha256:
        raise PermanentError(f"content_sha256 {pub.content_sha256} does not match the card's "
                             f"content ({actual}): refusing an unverified card")
    return CardEvent(card.card_id, delivery.partition, delivery.offset,
                     Card(card.card_id, card.title, card.text, card.source, card.metadata,
                          pub.content_sha256))


_METRICS: dict = {}
log = get_logger("attesta.retrieval")


def _observe(path: str, seconds: float) -> None:
    """Per-path counts and latency on /metrics (created on first use, not at import)."""
    if "latency" not in _METRICS:
        from prometheus_client import Histogram

        _METRICS["latency"] = Histogram(
            "attesta_retrieval_seconds", "Retrieval latency by hybrid path", ["path"],
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10))
    _METRICS["latency"].labels(path=path).observe(seconds)


def _count_expired() -> None:
    if "expired" not in _METRICS:
        from prometheus_client import Counter

        _METRICS["expired"] = Counter(
            "attesta_retrieval_chat_expired_total",
            "Chat requests skipped because they were older than the max age when read")
    _METRICS["expired"].inc()


def make_retrieve(retriever: HybridRetriever, messaging: Messaging,
                  wait_ready: Callable[[], Awaitable[None]], max_age_s: float = 0.0):
    """``max_age_s`` > 0: a chat request older than that when its turn comes is skipped (logged
    and counted, offset committed). Its caller gave up long ago (the gateway's chat timeout is
    seconds), so answering it would only delay the live requests queued behind it — e.g. a
    service group that starts from the earliest offset on a topic with old traffic."""

    async def retrieve(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        # A request read before the index is built waits (uncommitted) instead of being
        # answered from a half-built index.
        await wait_ready()
        req = env.payload
        age_s = (utc_now() - env.occurred_at).total_seconds()
        if max_age_s > 0 and age_s > max_age_s:
            _count_expired()
            log.info("chat request expired: nobody is waiting for it", request_id=req.request_id,
                     age_s=round(age_s, 1), max_age_s=max_age_s, offset=delivery.offset)
            return
        outcome = await retriever.retrieve(req.question, req.top_k)
        _observe(str(outcome.hybrid_path or "absent"), outcome.timings_ms.get("total", 0) / 1000)
        result = RetrievalCompleted(
            request_id=req.request_id, question=req.question, top_k=req.top_k,
            chunks=outcome.chunks, hybrid_path=outcome.hybrid_path,
            path_reason=outcome.path_reason, timings_ms=outcome.timings_ms,
            reply_to=req.reply_to, workspace_id=req.workspace_id, prompt_context=req.prompt_context,
        )
        await messaging.publish(
            RETRIEVAL_COMPLETED, result, key=req.request_id, correlation_id=env.correlation_id,
            causation_id=str(env.event_id),
            event_id=derived_id("retrieval", env.event_id),  # redelivery -> same output id
        )

    return retrieve
