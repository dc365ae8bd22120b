"""The messaging core against a real Kafka broker: dead letters, retries, commits."""

from __future__ import annotations

import asyncio
import base64
import uuid

import pytest

from attesta_contracts import Envelope
from attesta_contracts.chat import ChatRequested
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED
from attesta_platform import messaging as msging
from attesta_platform.errors import TransientError
from attesta_platform.messaging import Delivery, Messaging, RetryPolicy
from attesta_testing.infra import (
    commit_group_at_end, end_offsets, kafka_bootstrap, publish_raw, read_from)

pytestmark = pytest.mark.integration


async def _wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def _dead_letters(bootstrap: str, consumer: str, marker: str, expected: int,
                        since: dict[int, int]) -> list[MessageDeadLettered]:
    """Dead letters of ``consumer`` whose original bytes carry ``marker`` (this test's own),
    written after the DLQ offsets ``since``."""

    def ours(value: bytes) -> bool:
        letter = Envelope[MessageDeadLettered].model_validate_json(value).payload
        return letter.consumer == consumer and marker.encode() in base64.b64decode(letter.original_b64)

    values = await read_from(bootstrap, DEAD_LETTERED, since, ours, expected, timeout_s=30,
                             settle_s=0.5)
    return [Envelope[MessageDeadLettered].model_validate_json(v).payload for v in values]


# 1: one message at a time; 8: messages of different keys at once (consuming._Pipeline).
CONCURRENCY = pytest.mark.parametrize("concurrency", [1, 8], ids=["single", "concurrent"])


@CONCURRENCY
async def test_poison_is_dead_lettered_and_next_message_processed(concurrency):
    bootstrap = kafka_bootstrap()
    group = f"test-dlq-{uuid.uuid4().hex[:8]}"
    m = Messaging(bootstrap, producer="test", retry=RetryPolicy(attempts=2, initial_delay_s=0.01))
    await m.ensure_topics([CHAT_REQUESTED, DEAD_LETTERED])
    # Read only what this test publishes, not the shared topic's history.
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    dlq_since = await end_offsets(bootstrap, DEAD_LETTERED)
    seen: list[str] = []
    marker = uuid.uuid4().hex

    async def handler(env: Envelope, d: Delivery) -> None:
        if env.payload.question.endswith(marker):
            seen.append(env.payload.request_id)

    m.consume(CHAT_REQUESTED, group_id=group, handler=handler, concurrency=concurrency)
    await m.start()
    try:
        poison = b"\xff\xfenot json " + marker.encode()
        await publish_raw(m, CHAT_REQUESTED, poison, key=b"poison")
        wrong = m.envelope(CHAT_REQUESTED, ChatRequested(request_id="x", question="q"),
                           correlation_id="c").model_dump(mode="json")
        wrong["payload"]["question"] = ""  # violates min_length
        import orjson

        wrong["payload"]["request_id"] = marker
        await publish_raw(m, CHAT_REQUESTED, orjson.dumps(wrong), key=b"invalid")
        await m.publish(CHAT_REQUESTED, ChatRequested(request_id="good-1", question="ok " + marker),
                        key="good-1", correlation_id="good-1")
        await _wait_for(lambda: "good-1" in seen)
        # Other keys may sit on other partitions: read the letters while the consumer runs.
        letters = await _dead_letters(bootstrap, group, marker, expected=2, since=dlq_since)
    finally:
        await m.stop()
    originals = {base64.b64decode(letter.original_b64) for letter in letters}
    assert poison in originals
    reasons = " | ".join(letter.error for letter in letters)
    assert "not UTF-8" in reasons
    assert "payload.question" in reasons
    assert all(letter.source_topic == CHAT_REQUESTED and letter.attempts == 1 for letter in letters)
    assert seen == ["good-1"]


@CONCURRENCY
async def test_transient_error_is_retried_and_permanent_error_dead_lettered(concurrency):
    bootstrap = kafka_bootstrap()
    group = f"test-retry-{uuid.uuid4().hex[:8]}"
    m = Messaging(bootstrap, producer="test", retry=RetryPolicy(attempts=3, initial_delay_s=0.01))
    await m.ensure_topics([CHAT_REQUESTED, DEAD_LETTERED])
    # Read only what this test publishes, not the shared topic's history.
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    dlq_since = await end_offsets(bootstrap, DEAD_LETTERED)
    calls: dict[str, int] = {}
    marker = uuid.uuid4().hex

    async def handler(env: Envelope, d: Delivery) -> None:
        if not env.payload.question.endswith(marker):
            return
        rid = env.payload.request_id
        calls[rid] = calls.get(rid, 0) + 1
        if rid == "flaky" and calls[rid] < 3:
            raise TransientError("dependency blipped")
        if rid == "bad":
            raise ValueError("rule violated")

    m.consume(CHAT_REQUESTED, group_id=group, handler=handler, concurrency=concurrency)
    await m.start()
    try:
        for rid in ("flaky", "bad", "after"):
            await m.publish(CHAT_REQUESTED, ChatRequested(request_id=rid, question="q " + marker),
                            key=rid, correlation_id=rid)
        await _wait_for(lambda: {"flaky", "bad", "after"} <= calls.keys() and calls["flaky"] >= 3)
    finally:
        await m.stop()
    assert calls["flaky"] == 3
    assert calls["bad"] == 1  # permanent: no retries (bounded handler call count)
    # The same story on /metrics (the process-wide registry every service serves).
    from prometheus_client import REGISTRY

    labels = {"consumer": group, "topic": CHAT_REQUESTED}
    assert REGISTRY.get_sample_value("attesta_handler_retries_total", labels) == 2
    assert REGISTRY.get_sample_value("attesta_messages_consumed_total",
                                     {**labels, "outcome": "dead_lettered"}) >= 1
    assert REGISTRY.get_sample_value("attesta_messages_consumed_total",
                                     {**labels, "outcome": "processed"}) >= 2
    letters = await _dead_letters(bootstrap, group, marker, expected=1, since=dlq_since)
    assert [(x.error_type, x.error) for x in letters] == [("ValueError", "rule violated")]

    # Offsets were committed: the same group, restarted, sees none of those messages again.
    again: list[str] = []

    async def recorder(env: Envelope, d: Delivery) -> None:
        if env.payload.question.endswith(marker):
            again.append(env.payload.request_id)

    m2 = Messaging(bootstrap, producer="test")
    m2.consume(CHAT_REQUESTED, group_id=group, handler=recorder, concurrency=concurrency)
    await m2.start()
    try:
        await m2.publish(CHAT_REQUESTED, ChatRequested(request_id="fresh", question="q " + marker),
                         key="fresh", correlation_id="fresh")
        await _wait_for(lambda: "fresh" in again)
    finally:
        await m2.stop()
    assert again == ["fresh"]


def test_decode_rejects_event_type_from_another_topic():
    from attesta_contracts import topic

    env = Messaging("127.0.0.1:1", producer="t").envelope(
        CHAT_REQUESTED, ChatRequested(request_id="r", question="q"), correlation_id="c")
    data = env.model_dump(mode="json")
    data["event_type"] = "ChatAnswered"
    import orjson

    with pytest.raises(msging.UndecodableMessage, match="does not belong"):
        msging.decode(topic(CHAT_REQUESTED), orjson.dumps(data))


class _Fatal(BaseException):
    """Not an Exception: the retry/dead-letter routine does not catch it, so it ends the
    consumer task, as a bug in the consume loop or a lost client would."""


async def test_a_consumer_that_dies_is_reported_before_stop_and_not_after():
    bootstrap = kafka_bootstrap()
    group = f"test-dies-{uuid.uuid4().hex[:8]}"
    m = Messaging(bootstrap, producer="test")
    await m.ensure_topics([CHAT_REQUESTED, DEAD_LETTERED])
    await commit_group_at_end(bootstrap, CHAT_REQUESTED, group)
    marker = uuid.uuid4().hex
    reported: list[str] = []

    async def handler(env: Envelope, d: Delivery) -> None:
        if env.payload.question == "fatal " + marker:
            raise _Fatal("the consume loop is gone")

    m.consume(CHAT_REQUESTED, group_id=group, handler=handler)
    m.on_failure(reported.append)
    await m.start()
    try:
        assert m.failure is None
        await m.publish(CHAT_REQUESTED, ChatRequested(request_id=marker, question="fatal " + marker),
                        key=marker, correlation_id=marker)
        await _wait_for(lambda: m.failure is not None)
        assert f"consumer {group}<-{CHAT_REQUESTED} failed" in m.failure
        assert "the consume loop is gone" in m.failure
        assert reported == [m.failure]
        late: list[str] = []
        m.on_failure(late.append)  # registered after the failure: told at once
        assert late == [m.failure]
    finally:
        await m.stop()
    # An ordered stop ends the other consumers too, and is no failure.
    healthy = Messaging(bootstrap, producer="test")
    healthy.consume(CHAT_REQUESTED, group_id=f"{group}-ok", handler=handler,
                    auto_offset_reset="latest")
    await healthy.start()
    await healthy.stop()
    assert healthy.failure is None
