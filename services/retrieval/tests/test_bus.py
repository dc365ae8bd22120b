"""The retrieval service's seam (issue #27): every command has a handler, and the real
bootstrap binds each one's dependencies (it refuses a handler whose dependency is missing)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from attesta_contracts import utc_now
from attesta_contracts.chat import ChatRequested, HybridPath
from attesta_contracts.kb import KbCard, KbCardPublished
from attesta_contracts.topics import KB_CARDS
from attesta_platform.bus import Message, bootstrap
from attesta_platform.envelopes import Delivery, make_envelope
from attesta_platform.errors import PermanentError
from attesta_retrieval.adapters.metrics import RetrievalMetrics
from attesta_retrieval.bootstrap import Runtime, build_bus
from attesta_retrieval.domain import commands
from attesta_retrieval.domain.model import card_content_sha256
from attesta_retrieval.service_layer.errors import CardRefused, NotReady
from attesta_retrieval.service_layer.handlers import HANDLERS
from attesta_retrieval.service_layer.retrieval import RetrievalOutcome

pytestmark = pytest.mark.unit


class Published:
    def __init__(self, event_id):
        self.event_id = event_id


class RecordingPublisher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object, str]] = []

    async def publish(self, topic_name, payload, *, key, correlation_id, causation_id=None,
                      event_id=None):
        self.sent.append((topic_name, payload, key))
        return Published(event_id)


class OneOutcome:
    async def retrieve(self, question, top_k):
        return RetrievalOutcome(chunks=[], hybrid_path=HybridPath.RRF_ONLY, path_reason=None,
                                timings_ms={"total": 1.0})


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for v in vars(commands).values()
                if isinstance(v, type) and issubclass(v, Message) and v is not Message}
    assert messages == {commands.RetrieveContext, commands.IndexCards}
    assert set(HANDLERS) == messages
    assert build_bus().messages == messages
    with pytest.raises(TypeError, match="retriever"):  # the bare binder: what build_bus adds
        bootstrap(HANDLERS, index=None)
    assert issubclass(CardRefused, PermanentError)  # dead-lettered by the messaging core


async def test_retrieve_context_publishes_a_result_or_skips_an_expired_request():
    publisher = RecordingPublisher()
    bus = build_bus(retriever=OneOutcome(), publisher=publisher, chat_max_age_s=60)
    live = ChatRequested(request_id="r-1", question="dose?")
    await bus.handle(commands.RetrieveContext(live, uuid.uuid4(), "corr", utc_now()))
    old = utc_now() - timedelta(minutes=5)
    await bus.handle(commands.RetrieveContext(live.model_copy(update={"request_id": "r-old"}),
                                              uuid.uuid4(), "corr", old))
    assert [(topic, key) for topic, _, key in publisher.sent] == [("retrieval.completed.v1", "r-1")]
    assert publisher.sent[0][1].hybrid_path == HybridPath.RRF_ONLY


async def test_the_runtime_stands_in_until_the_start_up_built_the_models():
    rt = Runtime()
    with pytest.raises(NotReady):
        await rt.retrieve("q", 3)
    with pytest.raises(NotReady):
        rt.apply([])
    rt.retriever = OneOutcome()
    assert (await rt.retrieve("q", 3)).hybrid_path == HybridPath.RRF_ONLY


async def test_index_cards_applies_what_it_may_and_refuses_the_rest_with_a_reason():
    applied = []

    class Index:
        def apply(self, events):
            applied.extend(events)

    card = KbCard(card_id="c-1", title="T", text="Some text.")
    sha = card_content_sha256(card.model_dump(mode="json"))
    good = make_envelope(KB_CARDS, KbCardPublished(card=card, content_sha256=sha),
                         producer="test", correlation_id="c")

    def delivery(key: bytes, offset: int) -> Delivery:
        return Delivery(KB_CARDS, 0, offset, key, b"")

    items = (("c-1", good, delivery(b"c-1", 1)),      # indexed
             ("c-2", good, delivery(b"c-2", 2)),      # keyed by another card: refused
             ("c-3", None, delivery(b"c-3", 3)))      # tombstone: retracted
    refused = await build_bus(index=Index()).handle(commands.IndexCards(items))
    assert [(item[0], "is not the card id" in reason) for item, reason in refused] == [("c-2", True)]
    assert [(e.card_id, e.offset, e.card is None) for e in applied] == [("c-1", 1, False),
                                                                        ("c-3", 3, True)]


def test_the_multilingual_gauge_the_bootstrap_sets():
    metrics = RetrievalMetrics()
    metrics.mark_multilingual(True)
    assert REGISTRY.get_sample_value("attesta_retrieval_multilingual_ready") == 1.0
    metrics.mark_multilingual(False)
    assert REGISTRY.get_sample_value("attesta_retrieval_multilingual_ready") == 0.0
