"""Topics are created with the configured replication factor (ATTESTA_KAFKA_REPLICATION_FACTOR),
not a hard-coded 1: on the one-node test broker, 2 replicas is refused by Kafka itself."""

from __future__ import annotations

import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from attesta_platform.messaging import Messaging
from attesta_platform.settings import ServiceSettings
from attesta_testing.infra import kafka_bootstrap

pytestmark = pytest.mark.integration


async def test_replication_factor_comes_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = kafka_bootstrap()
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", bootstrap)
    monkeypatch.setenv("ATTESTA_KAFKA_REPLICATION_FACTOR", "2")
    two = Messaging.from_settings(ServiceSettings(), producer="rf-test")
    assert two.replication_factor == 2
    topic = f"test.rf-{uuid.uuid4().hex[:8]}.v1"
    with pytest.raises(RuntimeError, match="error code 38"):  # INVALID_REPLICATION_FACTOR
        await two.ensure_topics([topic], partitions=2)

    monkeypatch.setenv("ATTESTA_KAFKA_REPLICATION_FACTOR", "1")
    one = Messaging.from_settings(ServiceSettings(), producer="rf-test")
    await one.ensure_topics([topic], partitions=2)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [described] = await admin.describe_topics([topic])
        assert len(described["partitions"]) == 2
        assert all(len(p["replicas"]) == 1 for p in described["partitions"])
        await admin.delete_topics([topic])
    finally:
        await admin.close()
