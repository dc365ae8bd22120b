"""The cluster's listeners admit only TLS + SCRAM clients with the right password, and a service
principal may produce to and read only the topics (and consumer groups) its roles declare: the
broker refuses the rest. Every refusal is paired with the same client doing what it may, so a
cluster that refused everything (or was down) fails these tests too."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import pytest
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    TopicAuthorizationFailedError,
)

from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, RUNS_RECORDED

pytestmark = [pytest.mark.cluster, pytest.mark.integration]


async def _connects(options) -> bool:
    admin = options.admin()
    try:
        await asyncio.wait_for(admin.start(), 30)
        await asyncio.wait_for(admin.describe_cluster(), 30)
        return True
    except KafkaConnectionError:
        return False
    finally:
        await admin.close()


async def test_plaintext_unauthenticated_and_wrong_password_clients_are_refused(cluster, caplog) -> None:
    assert await _connects(cluster.options("gateway"))  # the same client, its real credentials
    # No TLS (PLAINTEXT, SASL_PLAINTEXT) or TLS without SASL: the listener closes the connection.
    for protocol in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL"):
        assert not await _connects(cluster.options("gateway", security_protocol=protocol)), protocol
    # TLS + SCRAM with a wrong password or an unknown user: the broker says invalid credentials.
    for wrong in ({"sasl_password": "not-" + uuid.uuid4().hex}, {"sasl_username": "nobody"}):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="aiokafka"):
            assert not await _connects(cluster.options("gateway", **wrong)), wrong
        assert "SaslAuthenticationFailed" in caplog.text, wrong


async def test_a_service_produces_only_to_the_topics_it_declared(cluster) -> None:
    producer = cluster.options("gateway").producer("cluster-acl-test")
    await producer.start()
    try:
        sent = await producer.send_and_wait(CHAT_REQUESTED, b"{}", key=b"acl-test")
        assert sent.offset >= 0
        # The gateway declares chat.requested.v1, never runs.recorded.v1: the broker says no
        # (it does not even describe the topic to it).
        with pytest.raises(TopicAuthorizationFailedError):
            await producer.send_and_wait(RUNS_RECORDED, b"{}", key=b"acl-test")
        # It reads chat.answered.v1 (so it may see it) but does not publish there: the produce
        # request itself is refused.
        with pytest.raises(TopicAuthorizationFailedError):
            await producer.send_and_wait(CHAT_ANSWERED, b"{}", key=b"acl-test")
    finally:
        await producer.stop()


async def _first_record(options, topic: str, group: str, marker: bytes) -> None:
    """Read ``topic`` in ``group`` until ``marker`` arrives (within 60 s); the broker's refusal
    of the topic or the group surfaces as its authorization error."""
    consumer = options.consumer("cluster-acl-test", group)
    consumer.subscribe([topic])
    try:
        await consumer.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            if any(m.value == marker for ms in batch.values() for m in ms):
                return
        raise AssertionError(f"{marker!r} not read from {topic} in group {group} within 60 s")
    finally:
        await consumer.stop()


async def test_a_service_reads_only_the_topics_and_groups_it_declared(cluster) -> None:
    marker = f"acl-read-{uuid.uuid4().hex}".encode()
    answer = cluster.options("answer").producer("cluster-acl-test")  # answer publishes there
    await answer.start()
    try:
        await answer.send_and_wait(CHAT_ANSWERED, marker, key=b"acl-test")
    finally:
        await answer.stop()
    gateway = cluster.options("gateway")
    # The gateway consumes chat.answered.v1 in its own run-time group gateway-<instance>: it reads.
    await asyncio.wait_for(_first_record(gateway, CHAT_ANSWERED, f"gateway-{uuid.uuid4().hex[:8]}",
                                         marker), 90)
    # runs.recorded.v1 is not among its topics, even in its own group: refused.
    with pytest.raises(TopicAuthorizationFailedError):
        await asyncio.wait_for(_first_record(gateway, RUNS_RECORDED,
                                             f"gateway-{uuid.uuid4().hex[:8]}", marker), 90)
    # Its own topic in another service's group (the collector's, also on chat.answered.v1):
    # refused, so a service cannot take over, or commit offsets for, another's partitions.
    with pytest.raises(GroupAuthorizationFailedError):
        await asyncio.wait_for(_first_record(gateway, CHAT_ANSWERED, "collector", marker), 90)
