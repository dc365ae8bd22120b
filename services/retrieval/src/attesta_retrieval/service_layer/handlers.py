"""Everything the retrieval service can be asked to do: one handler per command.

A handler takes the message and its dependencies by parameter name (``retriever``, ``index``,
``publisher``, ``wait_ready``, ``chat_max_age_s``, ``metrics``); ``bootstrap.build_bus`` binds
them once. A batch of card records becomes index changes; a chat request becomes a
``RetrievalCompleted`` with the hybrid-path label.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from attesta_contracts import Envelope, derived_id, utc_now
from attesta_contracts.chat import RetrievalCompleted
from attesta_contracts.kb import KbCardPublished
from attesta_contracts.topics import RETRIEVAL_COMPLETED
from attesta_platform.bus import Handler, Message
from attesta_platform.envelopes import Delivery
from attesta_platform.logs import get_logger
from attesta_retrieval.domain import commands as c
from attesta_retrieval.domain.model import Card, card_content_sha256
from attesta_retrieval.service_layer.errors import CardRefused
from attesta_retrieval.service_layer.indexing import CardEvent
from attesta_retrieval.service_layer.retrieval import RetrievalOutcome

# For the type checker only: the metrics adapter is injected by the bootstrap, and the
# replayed records are the messaging core's.
if TYPE_CHECKING:
    from attesta_platform.consuming import ReplayItem
    from attesta_retrieval.adapters.metrics import RetrievalMetrics

log = get_logger("attesta.retrieval")


def card_event(env: Envelope[KbCardPublished], delivery: Delivery) -> CardEvent:
    """A valid card event, or ``CardRefused`` with the reason (it gets dead-lettered)."""
    pub = env.payload
    card = pub.card
    if delivery.key is not None and delivery.key != card.card_id.encode():
        raise CardRefused(
            f"message key {delivery.key!r} is not the card id {card.card_id!r}: on a compacted "
            "topic that would leave two versions of the card alive")
    if pub.deleted:
        return CardEvent(card.card_id, delivery.partition, delivery.offset, None)
    actual = card_content_sha256(card.model_dump(mode="json"))
    if actual != pub.content_sha256:
        raise CardRefused(f"content_sha256 {pub.content_sha256} does not match the card's "
                          f"content ({actual}): refusing an unverified card")
    return CardEvent(card.card_id, delivery.partition, delivery.offset,
                     Card(card.card_id, card.title, card.text, card.source, card.metadata,
                          pub.content_sha256))


class Retriever(Protocol):
    """What answering a chat request needs (``HybridRetriever``, or the service's stand-in
    that waits for it to be built)."""

    async def retrieve(self, question: str, top_k: int) -> RetrievalOutcome: ...


class CardIndex(Protocol):
    """What indexing card records needs (``KbIndex``, or the service's stand-in)."""

    def apply(self, events: list[CardEvent]) -> Any: ...


class Publisher(Protocol):
    """Where the results go (``attesta_platform.messaging.Messaging`` in the service)."""

    async def publish(self, topic_name: str, payload: BaseModel, *, key: str,
                      correlation_id: str, causation_id: str | None = None,
                      event_id: uuid.UUID | None = None) -> Envelope[Any]: ...


async def index_cards(cmd: c.IndexCards, index: CardIndex) -> list[tuple[ReplayItem, str]]:
    """Index a batch; records refused by the rules come back with their reason."""
    events: list[CardEvent] = []
    refused: list[tuple[ReplayItem, str]] = []
    for item in cmd.items:
        key, env, delivery = item
        if env is None:  # tombstone: the card was retracted
            events.append(CardEvent(key, delivery.partition, delivery.offset, None))
            continue
        try:
            events.append(card_event(env, delivery))
        except Exception as exc:  # noqa: BLE001 - CardRefused and anything unforeseen
            refused.append((item, str(exc)))
    if events:
        await asyncio.to_thread(index.apply, events)
    return refused


async def retrieve_context(cmd: c.RetrieveContext, retriever: Retriever, publisher: Publisher,
                           wait_ready: Callable[[], Awaitable[None]], metrics: RetrievalMetrics,
                           chat_max_age_s: float = 0.0) -> None:
    """A chat request whose caller has given up when its turn comes is skipped (logged and
    counted, offset committed): one read after its ``deadline`` (the gateway sets it to the
    moment its HTTP caller gets a 504), or, with ``chat_max_age_s`` > 0, one older than that
    (a request without a deadline, e.g. a service group that starts from the earliest offset
    on a topic with old traffic). Answering it would only delay the live requests behind it."""
    # A request read before the index is built waits (uncommitted) instead of being answered
    # from a half-built index.
    await wait_ready()
    req = cmd.request
    now = utc_now()
    age_s = (now - cmd.requested_at).total_seconds()
    if req.deadline is not None and now >= req.deadline:
        metrics.count_expired("deadline")
        log.info("chat request past its deadline: nobody is waiting for it",
                 request_id=req.request_id, late_s=round((now - req.deadline).total_seconds(), 3),
                 offset=cmd.offset)
        return
    if chat_max_age_s > 0 and age_s > chat_max_age_s:
        metrics.count_expired("max_age")
        log.info("chat request expired: nobody is waiting for it", request_id=req.request_id,
                 age_s=round(age_s, 1), max_age_s=chat_max_age_s, offset=cmd.offset)
        return
    outcome = await retriever.retrieve(req.question, req.top_k)
    metrics.observe(str(outcome.hybrid_path or "absent"), outcome.timings_ms.get("total", 0) / 1000)
    result = RetrievalCompleted(
        request_id=req.request_id, question=req.question, top_k=req.top_k,
        chunks=outcome.chunks, hybrid_path=outcome.hybrid_path,
        path_reason=outcome.path_reason, timings_ms=outcome.timings_ms,
        reply_to=req.reply_to, workspace_id=req.workspace_id, prompt_context=req.prompt_context,
        deadline=req.deadline, language=outcome.language,
    )
    await publisher.publish(
        RETRIEVAL_COMPLETED, result, key=req.request_id, correlation_id=cmd.correlation_id,
        causation_id=str(cmd.event_id),
        event_id=derived_id("retrieval", cmd.event_id),  # redelivery -> same output id
    )


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.RetrieveContext: retrieve_context,
    c.IndexCards: index_cards,
}
