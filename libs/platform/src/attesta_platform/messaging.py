"""The one Kafka messaging core every service uses (aiokafka clients from
``attesta_platform.kafka``; the consume loop is ``attesta_platform.consuming``).

Choices, each made explicit because Kafka clients' defaults are unsafe:
- producer: ``acks="all"`` and ``enable_idempotence=True``;
- consumer: no auto-commit: an offset is committed only after the handler's effect is durable
  (or the message was dead-lettered), by a background committer, so the next message is
  handled while the last commit is in flight; service groups start from ``earliest``;
- a message that cannot be parsed, or whose handler raises a permanent error, goes to
  ``messaging.dead-lettered.v1`` with its original bytes, topic/partition/offset, the error and
  the attempt count, then the offset is committed so the partition moves on;
- a transient error is retried in place with bounded exponential backoff and jitter; when the
  attempts are spent the message is *not* committed: the consumer seeks back and reads it again
  after a pause, so nothing is lost while a dependency is down (``outcomes.outcome``).
Idempotency lives with the effect (an inbox row in the same transaction, or content addressing);
derived event ids (``derived_id``) make a redelivered input produce the same output ids.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from aiokafka.errors import IllegalStateError
from pydantic import BaseModel

from attesta_contracts import Envelope, topic as lookup_topic, utc_now
from attesta_contracts.deadletter import MessageDeadLettered
from attesta_contracts.topics import DEAD_LETTERED, Topic
from attesta_platform.consuming import (
    BatchHandler, CompactedReplay, GroupConsumer, Handler, ReplayHandler, StartAt)
# Envelope handling, the outcome policy and the metrics live in their own modules (the consume
# path uses them without this one); services import them from here, as before.
from attesta_platform.envelopes import Delivery as Delivery
from attesta_platform.envelopes import UndecodableMessage as UndecodableMessage
from attesta_platform.envelopes import decode as decode
from attesta_platform.envelopes import delivery_of as delivery_of
from attesta_platform.envelopes import encode as encode
from attesta_platform.envelopes import envelope_bytes as envelope_bytes
from attesta_platform.envelopes import envelope_type as envelope_type
from attesta_platform.envelopes import make_envelope as make_envelope
from attesta_platform.kafka import KafkaOptions, ensure_topics as _ensure_topics
from attesta_platform.logs import get_logger
from attesta_platform.messaging_metrics import HANDLER_RETRIES as HANDLER_RETRIES
from attesta_platform.messaging_metrics import HANDLER_SECONDS as HANDLER_SECONDS
from attesta_platform.messaging_metrics import MESSAGES_CONSUMED as MESSAGES_CONSUMED
from attesta_platform.messaging_metrics import MESSAGES_PUBLISHED
from attesta_platform.outcomes import RetryPolicy as RetryPolicy

P = TypeVar("P", bound=BaseModel)
log = get_logger("attesta.messaging")


@dataclasses.dataclass(frozen=True)
class TopicCopy:
    """The records of contract topic ``of`` kept under another Kafka topic ``name``: a mirror or
    a restored backup that a backfill replays, a KB staged beside the live one. A consumer given
    one reads ``name`` and decodes (and dead-letters) by ``of``'s contract; everywhere else a
    topic is named by its contract (``attesta_contracts.topics``)."""

    of: str
    name: str

    def __post_init__(self) -> None:
        lookup_topic(self.of)  # an unknown contract fails when the consumer is wired, not later


def topic_or_copy(of: str, name: str) -> str | TopicCopy:
    """``name`` when it is contract topic ``of`` itself, else a copy of it: for a topic named
    by a setting or an option whose default is the contract's own."""
    return name if name == of else TopicCopy(of, name)


def _source(topic: str | TopicCopy) -> tuple[str, Topic]:
    """The Kafka topic a consumer reads and the contract it decodes by."""
    if isinstance(topic, TopicCopy):
        return topic.name, lookup_topic(topic.of)
    return topic, lookup_topic(topic)


class Messaging:
    """Publisher and consumer registry of one service process."""

    def __init__(
        self,
        bootstrap_servers: str,
        producer: str,
        retry: RetryPolicy | None = None,
        linger_ms: int = 0,
        fetch_max_wait_ms: int = 500,
        kafka: KafkaOptions | None = None,
        graceful_timeout_s: float = 15.0,
        replication_factor: int | None = None,
        consumer_concurrency: int = 1,
        commit_interval_s: float = 0.05,
        batch_overlap: int = 1,
    ) -> None:
        self.producer = producer
        self.retry = retry or RetryPolicy()
        self.kafka = kafka or KafkaOptions(bootstrap_servers)
        if replication_factor is not None:
            self.kafka = dataclasses.replace(self.kafka, replication_factor=replication_factor)
        # How long the broker may hold a fetch while it has less than fetch_min_bytes (1) to
        # return; see docs/benchmarks/foundation.md for what it does to the round trip.
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self._linger_ms = linger_ms
        self._producer: Any = None
        self._ack_counters: dict[str, Callable[[asyncio.Future[Any]], None]] = {}
        # Why a consumer ended while the service runs (None while all are running): readiness.
        self.failure: str | None = None
        self._failure_callbacks: list[Callable[[str], None]] = []
        self._consumers: list[GroupConsumer] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._graceful_timeout_s = graceful_timeout_s
        # Messages of different keys a single-message consumer handles at once (see consume).
        self.consumer_concurrency = consumer_concurrency
        # Under load, a consumer's offset commits are at least this far apart (a quiet consumer
        # commits each message at once); see docs/benchmarks/foundation.md.
        self.commit_interval_s = commit_interval_s
        # Batches a batch consumer has in flight at once, never two of one partition (1: one
        # after the other); see consuming._Lanes.
        self.batch_overlap = max(1, batch_overlap)

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    @property
    def replication_factor(self) -> int:
        """Replicas of the topics ``ensure_topics`` creates (ATTESTA_KAFKA_REPLICATION_FACTOR)."""
        return self.kafka.replication_factor

    @classmethod
    def from_settings(cls, settings: Any, producer: str, **kwargs: Any) -> Messaging:
        """One service's messaging: its Kafka connection settings and consumer retry policy."""
        return cls(settings.kafka_bootstrap_servers, producer, RetryPolicy(
            settings.retry_attempts, settings.retry_initial_delay_s, settings.retry_max_delay_s),
            kafka=KafkaOptions.from_settings(settings),
            consumer_concurrency=settings.kafka_consumer_concurrency,
            batch_overlap=settings.kafka_batch_overlap, **kwargs)

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
        return make_envelope(topic_name, payload, producer=self.producer,
                             correlation_id=correlation_id, causation_id=causation_id,
                             event_id=event_id)

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
        await (await self.send(topic_name, encode(env), key=key.encode(),
                               event_type=env.event_type, schema_version=env.schema_version))

    async def send(self, topic_name: str, value: bytes | None, *, key: bytes | None,
                   event_type: str | None = None, schema_version: int | None = None
                   ) -> asyncio.Future[Any]:
        """Hand a record to the producer; returns the future of its acknowledgement, so many
        sends can be in flight (the outbox relay) while per-partition order is kept. Envelopes
        carry ``event_type``/``schema_version`` headers; the publish metric counts the ack."""
        if self._producer is None:
            raise RuntimeError("Messaging.start() was not called")
        headers = None
        if event_type is not None:
            headers = [("event_type", event_type.encode()),
                       ("schema_version", str(schema_version).encode())]
        future: asyncio.Future[Any] = await self._producer.send(
            topic_name, value=value, key=key, headers=headers)
        future.add_done_callback(self._ack_counter(topic_name))
        return future

    def _ack_counter(self, topic_name: str) -> Callable[[asyncio.Future[Any]], None]:
        """The done-callback counting ``topic_name``'s acknowledged records, made once per
        topic (a metric child lookup takes a lock: not something to do per record)."""
        count = self._ack_counters.get(topic_name)
        if count is None:
            published = MESSAGES_PUBLISHED.labels(topic_name)

            def count(done: asyncio.Future[Any]) -> None:
                if not done.cancelled() and done.exception() is None:
                    published.inc()

            self._ack_counters[topic_name] = count
        return count

    async def publish_tombstone(self, topic_name: str, key: str) -> None:
        """A null value for ``key`` on a compacted topic: the entity is deleted, and compaction
        keeps nothing else of it."""
        await (await self.send(topic_name, None, key=key.encode()))

    # -- consuming --------------------------------------------------------------------------
    def consume(
        self,
        topic_name: str | TopicCopy,
        *,
        group_id: str,
        handler: Handler,
        auto_offset_reset: str = "earliest",
        concurrency: int | None = None,
    ) -> GroupConsumer:
        """Register ``handler`` for ``topic_name`` in consumer group ``group_id``; it runs from
        ``start()`` to ``stop()``.

        The handler gets a parsed ``Envelope`` and its ``Delivery``. Raise a ``PermanentError``
        (or any non-transient error) to dead-letter, a ``TransientError`` to retry.
        ``topic_name`` is a contract's topic, or a ``TopicCopy`` of one.
        ``concurrency`` (default: the messaging's ``consumer_concurrency``, from
        ``ATTESTA_KAFKA_CONSUMER_CONCURRENCY`` in services) messages of different keys are
        handled at once; one key's messages always one after the other, in order.
        """
        return self._register(self._group_consumer(
            topic_name, group_id=group_id, handler=handler, auto_offset_reset=auto_offset_reset,
            wait_ms=500, concurrency=concurrency or self.consumer_concurrency))

    def consume_batch(
        self,
        topic_name: str | TopicCopy,
        *,
        group_id: str,
        handler: BatchHandler,
        batch_max: int = 500,
        wait_ms: int = 50,
        client_id: str | None = None,
        **backfill: Any,
    ) -> GroupConsumer:
        """Like ``consume`` with one handler call (one transaction) per fetched batch and one
        offset commit after it; the handler returns the items it rejects, with a reason."""
        return self._register(self.batch_consumer(
            topic_name, group_id=group_id, handler=handler, batch_max=batch_max, wait_ms=wait_ms,
            client_id=client_id, **backfill))

    def batch_consumer(self, topic_name: str | TopicCopy, *, group_id: str,
                       handler: BatchHandler, start: StartAt | None = None,
                       **options: Any) -> GroupConsumer:
        """A batch consumer the caller drives with ``run(stop)`` (backfills). ``overlap``
        (default: the messaging's ``batch_overlap``) batches may be in flight at once."""
        options.setdefault("overlap", self.batch_overlap)
        return self._group_consumer(topic_name, group_id=group_id, batch_handler=handler,
                                    start=start, **options)

    def _group_consumer(self, topic_name: str | TopicCopy, *, group_id: str,
                        auto_offset_reset: str = "earliest", client_id: str | None = None,
                        batch_max: int = 500, retry: RetryPolicy | None = None,
                        **options: Any) -> GroupConsumer:
        """A group consumer given the parts it uses: its Kafka client, the retry policy and
        this messaging object as its dead-letter port."""
        name, spec = _source(topic_name)
        consumer = self.kafka.consumer(
            client_id or self.producer, group_id, auto_offset_reset=auto_offset_reset,
            max_poll_records=batch_max, fetch_max_wait_ms=self.fetch_max_wait_ms)
        return GroupConsumer(consumer, name, group_id=group_id, spec=spec,
                             retry=retry or self.retry, dead_letters=self, batch_max=batch_max,
                             commit_interval_s=self.commit_interval_s, **options)

    def replay(self, topic_name: str | TopicCopy, *, name: str, handler: ReplayHandler,
               max_records: int = 256, client_id: str | None = None,
               dead_letters: bool = True) -> CompactedReplay:
        """A group-less reader of a compacted topic from its beginning (``start()``, then
        ``poll()`` or ``run()``); tombstones reach the handler as deletions. A read-only tool
        (``dead_letters=False``) skips undecodable records instead of dead-lettering them."""
        topic, spec = _source(topic_name)
        return CompactedReplay(
            self.kafka.consumer(client_id or name, None, max_poll_records=max_records),
            topic, spec=spec, name=name,
            handler=handler, retry=self.retry, dead_letters=self if dead_letters else None,
            max_records=max_records)

    def _register(self, consumer: GroupConsumer) -> GroupConsumer:
        self._consumers.append(consumer)
        if self._producer is not None:  # registered after start(): run it now
            self._spawn(consumer)
        return consumer

    def _spawn(self, consumer: GroupConsumer) -> None:
        task = asyncio.create_task(self._run(consumer), name=consumer.name)
        task.add_done_callback(functools.partial(self._ended, consumer))
        self._tasks.append(task)

    def _ended(self, consumer: GroupConsumer, task: asyncio.Task[Any]) -> None:
        """A consumer task ended. Before ``stop()`` (and unless it was a consumer meant to stop
        at the end of its topic) nothing reads its partitions any more while the process looks
        alive: record why, so readiness fails, and tell the supervisor."""
        if self._stop.is_set() or (consumer.stop_at_end and not task.cancelled()
                                   and task.exception() is None):
            return
        if task.cancelled():
            why = "was cancelled"
        elif task.exception() is not None:
            why = f"failed: {task.exception()!r}"
        else:
            why = "returned"
        reason = f"consumer {consumer.name} {why}"
        log.error("consumer ended before stop", consumer=consumer.name, reason=reason)
        if self.failure is None:
            self.failure = reason
        for callback in self._failure_callbacks:
            callback(reason)

    def on_failure(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(reason)`` when a consumer ends before ``stop()`` (at once if one
        has): ``attesta_platform.service.serve`` stops the service then."""
        self._failure_callbacks.append(callback)
        if self.failure is not None:
            callback(self.failure)

    async def _run(self, consumer: GroupConsumer) -> None:
        try:
            await consumer.run(self._stop)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged loudly; readiness shows no assignment
            log.error("consumer stopped on an error", consumer=consumer.name, error=repr(exc))
            raise

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
        """Start the producer, then every registered consumer (joined and subscribed when this
        returns; ``wait_assigned`` waits for partitions)."""
        if self._producer is None:
            producer = self.kafka.producer(self.producer, self._linger_ms)
            await producer.start()
            self._producer = producer
        self._stop.clear()
        self.failure = None
        await asyncio.gather(*(consumer.connect() for consumer in self._consumers))
        for consumer in self._consumers:
            self._spawn(consumer)

    async def stop(self) -> None:
        """Finish the message (or batch) in hand, commit it, leave the groups, then flush and
        close the producer."""
        self._stop.set()
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=self._graceful_timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self._consumers = []
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def wait_assigned(self, subscriber: GroupConsumer, timeout_s: float = 30.0) -> None:
        """Wait until ``subscriber`` owns partitions *and* knows where it reads from: a
        ``latest`` consumer reads only what is published after its position is resolved, so
        replies must not be requested before it. (Assignment alone is not enough: the offset
        reset runs after it and, on a fresh topic, can be delayed by leader elections; a reply
        written meanwhile would be skipped.)"""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            while not subscriber.consumer.assignment():
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

    async def ensure_topics(self, names: list[str], partitions: int | None = None) -> None:
        await _ensure_topics(self.kafka, names, partitions)


async def ensure_topics(bootstrap_servers: str | KafkaOptions, names: list[str],
                        partitions: int | None = None) -> None:
    """Create topics that do not exist yet (idempotent); compacted where the registry says."""
    options = bootstrap_servers if isinstance(bootstrap_servers, KafkaOptions) \
        else KafkaOptions(bootstrap_servers)
    await _ensure_topics(options, names, partitions)
