"""The ACL generator (deploy/kafka/acls.py): what the declared roles turn into, and the
documented table is the generated one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from attesta_contracts.roles import all_roles
from attesta_contracts.topics import DEAD_LETTERED, KB_CARDS, RUNS_RECORDED

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("attesta_kafka_acls", ROOT / "deploy" / "kafka" / "acls.py")
assert _spec is not None and _spec.loader is not None
acls = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = acls  # dataclasses look their module up there
_spec.loader.exec_module(acls)


def _allowed(principal: str) -> set[tuple[str, str, str, str]]:
    return {(a.operation, a.resource_type, a.pattern_type, a.resource_name)
            for a in acls.all_acls() if a.principal == f"User:{principal}"}


def test_each_service_gets_exactly_its_declared_topics_and_groups() -> None:
    for service, roles in all_roles().items():
        allowed = _allowed(service)
        writes = {name for op, rtype, _, name in allowed if (op, rtype) == ("WRITE", "TOPIC")}
        reads = {name for op, rtype, _, name in allowed if (op, rtype) == ("READ", "TOPIC")}
        assert writes == roles.published_topics(), service
        assert reads == roles.consumed_topics(), service
        if roles.consumes:
            assert DEAD_LETTERED in writes, service
    assert ("WRITE", "TOPIC", "LITERAL", RUNS_RECORDED) not in _allowed("gateway")
    # Group-less replay: the topic, no group. Run-time groups: by their fixed prefix.
    assert ("READ", "TOPIC", "LITERAL", KB_CARDS) in _allowed("retrieval")
    assert ("READ", "GROUP", "PREFIXED", "gateway-") in _allowed("gateway")
    assert ("READ", "GROUP", "PREFIXED", "classifier-") in _allowed("classifier")
    assert not any(op == "CREATE" for a in all_roles() for op, *_ in _allowed(a))


def test_the_documented_acl_table_is_the_generated_one() -> None:
    doc = ROOT / "docs" / "kafka-acls.md"
    assert doc.read_text() == acls.markdown(), "regenerate: python deploy/kafka/acls.py --write"
