"""Message handlers: a card event becomes an index change; a chat request becomes a
``RetrievalCompleted`` with the hybrid-path label."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from attesta_contracts import Envelope, derived_id, utc_now
from attesta_contracts.chat import ChatRequested, RetrievalCompleted
from attesta_contracts.kb import KbCardPublished
from attesta_contracts.topics import RETRIEVAL_COMPLETED
from attesta_platform.errors import PermanentError
from attesta_platform.logs import get_logger
from attesta_platform.messaging import Delivery, Messaging
from attesta_retrieval.domain.model import Card, card_content_sha256
from attesta_retrieval.service_layer.indexing import CardEvent
from attesta_retrieval.service_layer.retrieval import RetrievalOutcome

if TYPE_CHECKING:  # prometheus_client is imported where a metric is first created
    from prometheus_client import Counter, Gauge, Histogram


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


log = get_logger("attesta.retrieval")


class _Metrics:
    """The service's own metrics on /metrics, each created on first use (not at import)."""

    latency: Histogram | None = None
    expired: Counter | None = None
    multilingual: Gauge | None = None


def _observe(path: str, seconds: float) -> None:
    """Per-path counts and latency."""
    if _Metrics.latency is None:
        from prometheus_client import Histogram

        _Metrics.latency = Histogram(
            "attesta_retrieval_seconds", "Retrieval latency by hybrid path", ["path"],
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10))
    _Metrics.latency.labels(path=path).observe(seconds)


def _count_expired(reason: str) -> None:
    if _Metrics.expired is None:
        from prometheus_client import Counter

        _Metrics.expired = Counter(
            "attesta_retrieval_chat_expired_total",
            "Chat requests skipped because nobody waits for them any more: read after their "
            "deadline (reason=deadline) or older than the max age (reason=max_age)", ["reason"])
    _Metrics.expired.labels(reason=reason).inc()


def mark_multilingual(ready: bool) -> None:
    """1 once questions in other languages are served by the multilingual side (issue #24),
    0 while they are served the English way (still warming, failed, or switched off)."""
    if _Metrics.multilingual is None:
        from prometheus_client import Gauge

        _Metrics.multilingual = Gauge(
            "attesta_retrieval_multilingual_ready",
            "1 when questions in other languages are served by the multilingual dense side")
    _Metrics.multilingual.set(1 if ready else 0)


class Retriever(Protocol):
    """What answering a chat request needs (``HybridRetriever``, or the service's stand-in
    that waits for it to be built)."""

    async def retrieve(self, question: str, top_k: int) -> RetrievalOutcome: ...


ChatHandler = Callable[[Envelope[ChatRequested], Delivery], Awaitable[None]]


def make_retrieve(retriever: Retriever, messaging: Messaging,
                  wait_ready: Callable[[], Awaitable[None]], max_age_s: float = 0.0) -> ChatHandler:
    """A chat request whose caller has given up when its turn comes is skipped (logged and
    counted, offset committed): one read after its ``deadline`` (the gateway sets it to the
    moment its HTTP caller gets a 504), or, with ``max_age_s`` > 0, one older than that (a
    request without a deadline, e.g. a service group that starts from the earliest offset on
    a topic with old traffic). Answering it would only delay the live requests behind it."""

    async def retrieve(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        # A request read before the index is built waits (uncommitted) instead of being
        # answered from a half-built index.
        await wait_ready()
        req = env.payload
        now = utc_now()
        age_s = (now - env.occurred_at).total_seconds()
        if req.deadline is not None and now >= req.deadline:
            _count_expired("deadline")
            log.info("chat request past its deadline: nobody is waiting for it",
                     request_id=req.request_id, late_s=round((now - req.deadline).total_seconds(), 3),
                     offset=delivery.offset)
            return
        if max_age_s > 0 and age_s > max_age_s:
            _count_expired("max_age")
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
            deadline=req.deadline, language=outcome.language,
        )
        await messaging.publish(
            RETRIEVAL_COMPLETED, result, key=req.request_id, correlation_id=env.correlation_id,
            causation_id=str(env.event_id),
            event_id=derived_id("retrieval", env.event_id),  # redelivery -> same output id
        )

    return retrieve
