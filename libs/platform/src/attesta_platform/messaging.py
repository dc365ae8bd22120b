"""The one Kafka messaging core every service uses (faststream KafkaBroker underneath).

Choices, each made explicit because aiokafka's and faststream's defaults are unsafe:
- producer: ``acks="all"`` and ``enable_idempotence=True``;
- consumer: manual acknowledgement: the offset is committed only after the handler's effect is
  durable (or the message was dead-lettered); service groups start from ``earliest``;
- a message that cannot be parsed, or whose handler raises a permanent error, goes to
  ``messaging.dead-lettered.v1`` with its original bytes, topic/partition/offset, the error and
  the attempt count, then the offset is committed so the partition moves on;
- a transient error is retried in place with bounded exponential backoff and jitter; when the
  attempts are spent the message is *not* committed: the consumer seeks back and reads it again
  after a pause, so nothing is lost while a dependency is down.
Idempotency lives with the effect (an inbox row in the same transaction, or content addressing);
derived event ids (``derived_id``) make a redelivered input produce the same output ids.
"""

from __future__ import annotations

import asyncio
import base64
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, KafkaMessage
from prometheus_client import Counter, Histogram
from pydantic import BaseModel, ValidationError

from attesta_contracts import Envelope, Topic, topic as lookup_topic, utc_now
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.topics import DEAD_LETTERED
from attesta_platform.errors import is_transient
from attesta_platform.logs import get_logger

P = TypeVar("P", bound=BaseModel)
log = get_logger("attesta.messaging")

# Served on every service's /metrics (attesta_platform.service). Outcomes: processed (handler
# returned, offset committed), dead_lettered (committed after the dead letter was acked),
# redeliver (transient attempts spent: not committed, read again), tombstone (skipped).
MESSAGES_CONSUMED = Counter(
    "attesta_messages_consumed_total", "Messages a consumer finished with, by outcome",
    ["consumer", "topic", "outcome"])
HANDLER_RETRIES = Counter(
    "attesta_handler_retries_total", "Transient handler failures retried in place",
    ["consumer", "topic"])
HANDLER_SECONDS = Histogram(
    "attesta_handler_seconds", "Handler time per attempt", ["consumer", "topic"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
MESSAGES_PUBLISHED = Counter(
    "attesta_messages_published_total", "Records acknowledged by the broker", ["topic"])


@dataclass(frozen=True)
class Delivery:
    """Where a consumed message came from."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


Handler = Callable[[Envelope[Any], Delivery], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial_delay_s: float = 0.1
    max_delay_s: float = 5.0

    def delay(self, attempt: int) -> float:
        base = min(self.max_delay_s, self.initial_delay_s * (2 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)  # jitter: spread retries of many consumers


class UndecodableMessage(Exception):
    """The bytes are not a valid envelope for the topic's payload (permanent)."""


def encode(envelope: Envelope[Any]) -> bytes:
    return orjson.dumps(envelope.model_dump(mode="json"))


def decode(spec: Topic, value: bytes) -> Envelope[Any]:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UndecodableMessage(f"value is not UTF-8: {exc}") from None
    try:
        envelope = Envelope[spec.payload].model_validate_json(text)  # type: ignore[name-defined]
    except ValidationError as exc:
        errs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise UndecodableMessage(f"invalid {spec.event_type} envelope: {errs}") from None
    if envelope.event_type != spec.event_type:
        raise UndecodableMessage(
            f"event_type {envelope.event_type!r} does not belong on {spec.name} ({spec.event_type})"
        )
    if envelope.schema_version > spec.schema_version:
        raise UndecodableMessage(
            f"schema_version {envelope.schema_version} is newer than this consumer's "
            f"{spec.schema_version}"
        )
    return envelope


class Messaging:
    """Publisher and subscriber registry of one service process."""

    def __init__(
        self,
        bootstrap_servers: str,
        producer: str,
        retry: RetryPolicy | None = None,
        linger_ms: int = 0,
        fetch_max_wait_ms: int = 500,
        replication_factor: int = 1,
    ) -> None:
        self.producer = producer
        self.replication_factor = replication_factor  # of the topics ensure_topics creates
        self.retry = retry or RetryPolicy()
        # How long the broker may hold a fetch while it has less than fetch_min_bytes (1) to
        # return; see docs/benchmarks/foundation.md for what it does to the round trip.
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.broker = KafkaBroker(
            bootstrap_servers,
            client_id=producer,
            acks="all",
            enable_idempotence=True,
            linger_ms=linger_ms,
            logger=None,
        )
        self._bootstrap = bootstrap_servers
        self._consumers: list[str] = []

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @classmethod
    def from_settings(cls, settings: Any, producer: str) -> Messaging:
        """One service's messaging, with the consumer retry policy its settings give."""
        return cls(settings.kafka_bootstrap_servers, producer, RetryPolicy(
            settings.retry_attempts, settings.retry_initial_delay_s, settings.retry_max_delay_s),
            replication_factor=getattr(settings, "kafka_replication_factor", 1))

    # -- publishing -------------------------------------------------------------------------
    def envelope(
        self,
        topic_name: str,
        payload: BaseModel,
        *,
        correlation_id: str,
        causation_id: str | None = None,
        event_id: uuid.UUID | None = None,
    ) -> Envelope[Any]:
        spec = lookup_topic(topic_name)
        if not isinstance(payload, spec.payload):
            raise TypeError(f"{topic_name} carries {spec.payload.__name__}, not {type(payload).__name__}")
        return Envelope[spec.payload](  # type: ignore[name-defined]
            event_id=event_id or uuid.uuid4(),
            event_type=spec.event_type,
            schema_version=spec.schema_version,
            occurred_at=utc_now(),
            correlation_id=correlation_id,
            causation_id=causation_id,
            producer=self.producer,
            payload=payload,
        )

    async def publish(
        self,
        topic_name: str,
        payload: BaseModel,
        *,
        key: str,
        correlation_id: str,
        causation_id: str | None = None,
        event_id: uuid.UUID | None = None,
    ) -> Envelope[Any]:
        """Publish and wait for the broker's acknowledgement (acks=all)."""
        env = self.envelope(
            topic_name, payload, correlation_id=correlation_id, causation_id=causation_id,
            event_id=event_id,
        )
        await self.publish_envelope(topic_name, env, key=key)
        return env

    async def publish_envelope(self, topic_name: str, env: Envelope[Any], *, key: str) -> None:
        await self.broker.publish(
            encode(env),
            topic=topic_name,
            key=key.encode(),
            headers={"event_type": env.event_type, "schema_version": str(env.schema_version)},
        )
        MESSAGES_PUBLISHED.labels(topic_name).inc()

    async def publish_raw(self, topic_name: str, value: bytes, key: bytes | None = None) -> None:
        """Bytes as they are: for tombstones and for tests that send poison messages."""
        await self.broker.publish(value, topic=topic_name, key=key)
        MESSAGES_PUBLISHED.labels(topic_name).inc()

    # -- consuming --------------------------------------------------------------------------
    def consume(
        self,
        topic_name: str,
        *,
        group_id: str,
        handler: Handler,
        auto_offset_reset: str = "earliest",
    ) -> Any:
        """Register ``handler`` for ``topic_name`` in consumer group ``group_id``.

        The handler gets a parsed ``Envelope`` and its ``Delivery``. Raise a ``PermanentError``
        (or any non-transient error) to dead-letter, a ``TransientError`` to retry.
        """
        spec = lookup_topic(topic_name)
        consumer = _Consumer(self, spec, group_id, handler)

        async def _raw(msg: Any) -> bytes:  # no decoding by faststream: we own the bytes
            return msg.body

        subscriber = self.broker.subscriber(
            topic_name,
            group_id=group_id,
            auto_offset_reset=auto_offset_reset,  # type: ignore[arg-type]
            ack_policy=AckPolicy.MANUAL,
            decoder=_raw,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
        )

        @subscriber
        async def _on_message(body: bytes, msg: KafkaMessage) -> None:
            await consumer.handle(msg)

        self._consumers.append(f"{group_id}<-{topic_name}")
        return subscriber

    async def dead_letter(
        self, consumer: str, delivery: Delivery, exc: BaseException | str, attempts: int
    ) -> None:
        reason = exc if isinstance(exc, str) else f"{exc}"
        error_type = "UndecodableMessage" if isinstance(exc, str) else type(exc).__name__
        letter = MessageDeadLettered(
            consumer=consumer,
            source_topic=delivery.topic,
            partition=delivery.partition,
            offset=delivery.offset,
            key_b64=base64.b64encode(delivery.key).decode() if delivery.key is not None else None,
            original_b64=base64.b64encode(delivery.value).decode(),
            error_type=error_type,
            error=reason[:4000],
            attempts=attempts,
            failed_at=utc_now(),
        )
        await self.publish(
            DEAD_LETTERED,
            letter,
            key=consumer,
            correlation_id=f"{delivery.topic}/{delivery.partition}/{delivery.offset}",
            # Same failed message, same dead-letter id: a crash after publishing dedups downstream.
            event_id=uuid.uuid5(
                uuid.NAMESPACE_URL, f"dlq:{consumer}:{delivery.topic}:{delivery.partition}:{delivery.offset}"
            ),
        )

    async def start(self) -> None:
        await self.broker.start()

    async def stop(self) -> None:
        await self.broker.stop()

    async def wait_assigned(self, subscriber: Any, timeout_s: float = 30.0) -> None:
        """Wait until ``subscriber`` owns partitions *and* knows where it reads from: a
        ``latest`` consumer reads only what is published after its position is resolved, so
        replies must not be requested before it. (Assignment alone is not enough: the offset
        reset runs after it and, on a fresh topic, can be delayed by leader elections; a reply
        written meanwhile would be skipped.)"""
        from aiokafka.errors import IllegalStateError

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            while not (subscriber.consumer is not None and subscriber.consumer.assignment()):
                if loop.time() > deadline:
                    raise TimeoutError("consumer got no partition assignment in time")
                await asyncio.sleep(0.05)
            consumer = subscriber.consumer
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(consumer.position(tp) for tp in consumer.assignment())),
                    max(0.1, deadline - loop.time()))
                return
            except TimeoutError:
                raise TimeoutError("consumer positions not resolved in time") from None
            except IllegalStateError:  # a rebalance took a partition meanwhile: look again
                await asyncio.sleep(0.05)

    async def ensure_topics(self, names: list[str], partitions: int = 3) -> None:
        await ensure_topics(self._bootstrap, names, partitions, self.replication_factor)


class _Consumer(Generic[P]):
    def __init__(self, messaging: Messaging, spec: Topic, group_id: str, handler: Handler) -> None:
        self.m = messaging
        self.spec = spec
        self.group_id = group_id
        self.handler = handler

    async def handle(self, msg: KafkaMessage) -> None:
        record = msg.raw_message
        delivery = Delivery(
            topic=record.topic,  # type: ignore[union-attr]
            partition=record.partition,  # type: ignore[union-attr]
            offset=record.offset,  # type: ignore[union-attr]
            key=record.key,  # type: ignore[union-attr]
            value=record.value or b"",  # type: ignore[union-attr]
        )
        consumed = MESSAGES_CONSUMED.labels(self.group_id, delivery.topic, "processed")
        if record.value is None:  # tombstone on a compacted topic: nothing to process
            await msg.ack()
            MESSAGES_CONSUMED.labels(self.group_id, delivery.topic, "tombstone").inc()
            return
        try:
            envelope = decode(self.spec, delivery.value)
        except UndecodableMessage as exc:
            log.warning("dead-lettering undecodable message", consumer=self.group_id,
                        topic=delivery.topic, offset=delivery.offset, reason=str(exc))
            await self.m.dead_letter(self.group_id, delivery, str(exc), attempts=1)
            await msg.ack()
            MESSAGES_CONSUMED.labels(self.group_id, delivery.topic, "dead_lettered").inc()
            return

        policy = self.m.retry
        timer = HANDLER_SECONDS.labels(self.group_id, delivery.topic)
        for attempt in range(1, policy.attempts + 1):
            started = asyncio.get_running_loop().time()
            try:
                await self.handler(envelope, delivery)
            except Exception as exc:  # noqa: BLE001 - every error is classified below
                timer.observe(asyncio.get_running_loop().time() - started)
                if is_transient(exc):
                    if attempt < policy.attempts:
                        log.info("transient error, retrying", consumer=self.group_id,
                                 attempt=attempt, error=repr(exc))
                        HANDLER_RETRIES.labels(self.group_id, delivery.topic).inc()
                        await asyncio.sleep(policy.delay(attempt))
                        continue
                    # Attempts spent: do not commit; read it again after a pause.
                    log.warning("dependency still failing; will re-read", consumer=self.group_id,
                                offset=delivery.offset, error=repr(exc))
                    await asyncio.sleep(policy.max_delay_s)
                    await msg.nack()
                    MESSAGES_CONSUMED.labels(self.group_id, delivery.topic, "redeliver").inc()
                    return
                log.warning("dead-lettering message", consumer=self.group_id,
                            topic=delivery.topic, offset=delivery.offset, error=repr(exc))
                await self.m.dead_letter(self.group_id, delivery, exc, attempts=attempt)
                await msg.ack()
                MESSAGES_CONSUMED.labels(self.group_id, delivery.topic, "dead_lettered").inc()
                return
            else:
                timer.observe(asyncio.get_running_loop().time() - started)
                await msg.ack()
                consumed.inc()
                return


async def ensure_topics(bootstrap_servers: str, names: list[str], partitions: int = 3,
                        replication_factor: int = 1) -> None:
    """Create topics that do not exist yet (idempotent). ``kb.*`` state topics are compacted."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = []
        for name in names:
            if name in existing:
                continue
            try:
                compacted = lookup_topic(name).compacted
            except KeyError:
                compacted = False
            configs = {"cleanup.policy": "compact"} if compacted else {}
            new.append(NewTopic(name, num_partitions=partitions,
                                replication_factor=replication_factor,
                                topic_configs=configs))
        if new:
            resp = await admin.create_topics(new)
            for topic_name, code, *_ in getattr(resp, "topic_errors", []):
                if code not in (0, 36):  # 36 = already exists (a concurrent creator won)
                    raise RuntimeError(f"cannot create topic {topic_name}: error code {code}")
    finally:
        await admin.close()
