"""The services' declared topic roles: complete, and matching what their code does."""

from __future__ import annotations

import pytest

from attesta_contracts.asyncapi import SERVICES_DIR, declared_roles, scan_services, undeclared
from attesta_contracts.roles import UndeclaredTopic, all_roles, declared_topics
from attesta_contracts.topics import DEAD_LETTERED, all_topics

pytestmark = pytest.mark.unit


def test_no_service_uses_a_topic_it_has_not_declared():
    found = scan_services()
    assert found, "the scan found no topic use at all: is services/ there?"
    problems = undeclared(found)
    assert not problems, "declare these in attesta_contracts.roles:\n" + "\n".join(
        f"  {r.service} {r.action}s {r.topic} ({r.source})" for r in problems)


def test_every_service_with_kafka_code_declares_its_roles():
    using = {r.service for r in scan_services()}
    assert using <= set(all_roles()), f"no roles declared for {sorted(using - set(all_roles()))}"
    on_disk = {p.name for p in SERVICES_DIR.iterdir() if (p / "src").is_dir()}
    assert set(all_roles()) <= on_disk  # no roles for a service that does not exist


def test_every_topic_has_a_producer_and_declared_topics_exist():
    roles = declared_roles()
    registry = all_topics()
    assert {r.topic for r in roles} <= set(registry)
    produced = {r.topic for r in roles if r.action == "send"}
    assert set(registry) - produced == set(), "topics nobody publishes"
    assert DEAD_LETTERED in produced


def test_declared_topics_are_what_a_service_creates_at_start_up():
    # published, consumed and (for a consumer) the dead letters; an unknown service is an error
    topics = declared_topics("collector")
    roles = all_roles()["collector"]
    assert topics == sorted(roles.published_topics() | roles.consumed_topics())
    assert DEAD_LETTERED in topics and "collection.slot-completed.v1" in topics
    assert "collection.slot-completed.v1" in declared_topics("classifier")
    with pytest.raises(UndeclaredTopic):
        declared_topics("no-such-service")
