"""The one place Kafka clients are built: producer, group consumer, group-less reader, admin.

Every client gets the same connection settings (bootstrap servers, TLS and SASL), so a
deployment that needs a secured cluster sets them once (``ATTESTA_KAFKA_*``) for every
service; topic creation uses the partitions and replication factor the settings give.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from attesta_contracts import topic as lookup_topic


@dataclass(frozen=True)
class KafkaOptions:
    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl_mechanism: str | None = None  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    partitions: int = 3
    replication_factor: int = 1

    @classmethod
    def from_settings(cls, settings: Any) -> KafkaOptions:
        return cls(
            settings.kafka_bootstrap_servers,
            security_protocol=settings.kafka_security_protocol,
            sasl_mechanism=settings.kafka_sasl_mechanism or None,
            sasl_username=settings.kafka_sasl_username or None,
            sasl_password=settings.kafka_sasl_password or None,
            ssl_cafile=settings.kafka_ssl_cafile or None,
            ssl_certfile=settings.kafka_ssl_certfile or None,
            ssl_keyfile=settings.kafka_ssl_keyfile or None,
            partitions=settings.kafka_partitions,
            replication_factor=settings.kafka_replication_factor,
        )

    def connection(self) -> dict[str, Any]:
        """Keyword arguments every aiokafka client takes."""
        opts: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers,
                                "security_protocol": self.security_protocol}
        if self.security_protocol in ("SSL", "SASL_SSL"):
            context = ssl.create_default_context(cafile=self.ssl_cafile)
            if self.ssl_certfile:
                context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
            opts["ssl_context"] = context
        if self.security_protocol.startswith("SASL"):
            opts.update(sasl_mechanism=self.sasl_mechanism or "PLAIN",
                        sasl_plain_username=self.sasl_username,
                        sasl_plain_password=self.sasl_password)
        return opts

    def producer(self, client_id: str, linger_ms: int = 0) -> AIOKafkaProducer:
        # acks=all + idempotence: an acknowledged record survives a broker loss and a retried
        # send is not written twice.
        return AIOKafkaProducer(**self.connection(), client_id=client_id, acks="all",
                                enable_idempotence=True, linger_ms=linger_ms)

    def consumer(self, client_id: str, group_id: str | None, *, auto_offset_reset: str = "earliest",
                 max_poll_records: int = 500, fetch_max_wait_ms: int = 500) -> AIOKafkaConsumer:
        # Never auto-commit: offsets are committed by attesta_platform.consuming after the effect.
        return AIOKafkaConsumer(**self.connection(), client_id=client_id, group_id=group_id,
                                enable_auto_commit=False, auto_offset_reset=auto_offset_reset,
                                max_poll_records=max_poll_records,
                                fetch_max_wait_ms=fetch_max_wait_ms,
                                isolation_level="read_committed")

    def admin(self) -> AIOKafkaAdminClient:
        return AIOKafkaAdminClient(**self.connection())


async def ensure_topics(options: KafkaOptions, names: list[str], partitions: int | None = None) -> None:
    """Create topics that do not exist yet (idempotent). Compacted topics (the registry says
    which) get ``cleanup.policy=compact``."""
    admin = options.admin()
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = []
        for name in dict.fromkeys(names):
            if name in existing:
                continue
            try:
                compacted = lookup_topic(name).compacted
            except KeyError:
                compacted = False
            configs = {"cleanup.policy": "compact"} if compacted else {}
            new.append(NewTopic(name, num_partitions=partitions or options.partitions,
                                replication_factor=options.replication_factor,
                                topic_configs=configs))
        if new:
            resp = await admin.create_topics(new)
            for topic_name, code, *_ in getattr(resp, "topic_errors", []):
                if code not in (0, 36):  # 36 = already exists (a concurrent creator won)
                    raise RuntimeError(f"cannot create topic {topic_name}: error code {code}")
    finally:
        await admin.close()
