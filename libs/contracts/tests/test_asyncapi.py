"""The committed AsyncAPI document is the code's, and it is a valid AsyncAPI 3.0.0 document.

Validation is offline: ``data/asyncapi-3.0.0.schema.json`` is the official JSON Schema of the
specification (``schemas/3.0.0-without-$id.json`` of npm ``@asyncapi/specs`` 6.11.1,
Apache-2.0, see ``data/asyncapi-specs.LICENSE`` and ``.NOTICE``), bindings included.
"""

from __future__ import annotations

import copy
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from attesta_contracts import Envelope, all_topics
from attesta_contracts.asyncapi import (
    DOCUMENT_PATH,
    Role,
    build_document,
    check,
    main,
    render,
    scan_file,
    scan_services,
)
from attesta_contracts.chat import ChatRequested
from attesta_contracts.schemas import envelope_schema
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, DEAD_LETTERED, RETRIEVAL_COMPLETED

pytestmark = pytest.mark.unit

SPEC = json.loads((Path(__file__).parent / "data" / "asyncapi-3.0.0.schema.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build_document()


def _spec_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SPEC)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def test_committed_document_is_current():
    problems = check()
    assert problems == [], (
        "docs/asyncapi.json is stale: run `python -m attesta_contracts.asyncapi --write` and "
        "review the diff\n" + "\n".join(problems[:40]))


def test_document_is_deterministic(document):
    assert render(document) == render(build_document())
    assert DOCUMENT_PATH.read_text(encoding="utf-8") == render(document)


def test_document_validates_against_the_asyncapi_3_spec(document):
    assert _spec_errors(document) == []


@pytest.mark.parametrize(("where", "mutate"), [
    ("operation action", lambda d: next(iter(d["operations"].values())).update(action="publish")),
    ("asyncapi version", lambda d: d.update(asyncapi="2.6.0")),
    ("channel address", lambda d: next(iter(d["channels"].values())).update(address=5)),
    ("kafka binding", lambda d: next(iter(d["channels"].values()))["bindings"]["kafka"].update(
        partitions="three")),
    ("message field", lambda d: next(iter(d["components"]["messages"].values())).update(
        contentType=7)),
])
def test_spec_validation_catches_broken_documents(document, where, mutate):
    broken = copy.deepcopy(document)
    mutate(broken)
    assert _spec_errors(broken), f"a broken {where} passed validation: the check checks nothing"


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _pointer(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"non-local $ref {ref}"
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def test_identifiers_use_the_component_key_charset(document):
    """AsyncAPI component keys must match ^[\\w\\d.\\-_]+$; ids used in $refs keep to it too."""
    key = re.compile(r"^[\w\d.\-_]+$")
    ids = [*document["channels"], *document["operations"]]
    ids += [k for section in document["components"].values() for k in section]
    assert ids and all(key.match(i) for i in ids), [i for i in ids if not key.match(i)]


def test_every_ref_resolves_inside_the_document(document):
    refs = _refs(document)
    assert refs
    for ref in refs:
        _pointer(document, ref)  # KeyError names the dangling ref
    assert not any("$defs" in r for r in refs)  # would resolve against the document root


def test_one_channel_per_registered_topic_with_its_metadata(document):
    topics = all_topics()
    assert set(document["channels"]) == set(topics)
    for name, t in topics.items():
        channel = document["channels"][name]
        assert channel["address"] == name
        assert channel["bindings"]["kafka"]["topic"] == name
        policy = channel["bindings"]["kafka"]["topicConfiguration"]["cleanup.policy"]
        assert policy == (["compact"] if t.compacted else ["delete"])
        [(msg_name, msg_ref)] = channel["messages"].items()
        message = _pointer(document, msg_ref["$ref"])
        assert msg_name == message["name"] == t.event_type
        assert message["x-attesta-schema-version"] == t.schema_version
        assert message["x-attesta-key"] == t.key
        assert t.key in message["bindings"]["kafka"]["key"]["description"]
        assert message["headers"]["properties"]["event_type"]["const"] == t.event_type
        assert channel["description"].startswith(t.description)
    assert document["channels"]["kb.cards.v1"]["x-attesta-compacted"] is True


def _deref(node: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """Inline every local $ref (the contracts have no recursive models)."""
    assert depth < 50, "recursive schema"
    if isinstance(node, dict):
        if "$ref" in node:
            target = _deref(_pointer(root, node["$ref"]), root, depth + 1)
            rest = {k: _deref(v, root, depth + 1) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: _deref(v, root, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_deref(v, root, depth + 1) for v in node]
    return node


@pytest.mark.parametrize("name", sorted(all_topics()))
def test_payload_schema_is_the_snapshot_schema(document, name):
    """Same contract as libs/contracts/schemas/<topic>.json once refs are inlined."""
    t = all_topics()[name]
    message = document["components"]["messages"][t.event_type]
    ours = _deref(message["payload"], document)
    snapshot = envelope_schema(t)
    assert ours == _deref(snapshot, snapshot)
    assert set(ours["required"]) >= {"event_type", "schema_version", "correlation_id", "payload"}


def test_payload_schema_accepts_a_real_envelope_and_rejects_a_bad_one(document):
    registry = Registry().with_resource("urn:attesta:asyncapi",
                                        Resource.from_contents(document, default_specification=DRAFT202012))
    message = document["components"]["messages"]["ChatRequested"]
    validator = jsonschema.Draft202012Validator(
        {"$ref": "urn:attesta:asyncapi" + message["payload"]["$ref"]}, registry=registry,
        format_checker=jsonschema.FormatChecker())
    good = Envelope[ChatRequested](event_type="ChatRequested", schema_version=1, correlation_id="c",
                                   producer="test", payload=ChatRequested(request_id="r", question="q"))
    validator.validate(json.loads(good.model_dump_json()))
    bad = json.loads(good.model_dump_json())
    bad["payload"]["question"] = ""
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
    del bad["payload"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)


def test_operations_reference_their_channels_messages(document):
    assert document["operations"], "the scan found no service using a topic"
    for op_id, op in document["operations"].items():
        channel_ref = op["channel"]["$ref"]
        channel = _pointer(document, channel_ref)
        for m in op["messages"]:  # AsyncAPI 3: an operation's messages are its channel's
            assert m["$ref"].startswith(channel_ref + "/messages/"), op_id
            _pointer(document, m["$ref"])
        assert op["action"] in {"send", "receive"}
        assert op_id.startswith(f"{op['x-attesta-service']}.{op['action']}.{channel['address']}")
        if "bindings" in op:  # a consumer group is named only for receivers
            assert op["action"] == "receive"
            assert op["bindings"]["kafka"]["groupId"]["enum"]


def test_the_chat_chain_is_derived_from_the_services():
    """The walking skeleton's topics each have a sender and a receiver in services/*/src,
    and every consumer may dead-letter."""
    roles = scan_services()
    for topic in (CHAT_REQUESTED, RETRIEVAL_COMPLETED, CHAT_ANSWERED):
        assert any(r.topic == topic and r.action == "send" for r in roles), topic
        assert any(r.topic == topic and r.action == "receive" for r in roles), topic
    receivers = {r.service for r in roles if r.action == "receive"}
    dlq_senders = {r.service for r in roles if r.action == "send" and r.topic == DEAD_LETTERED}
    assert receivers and receivers <= dlq_senders


def test_events_staged_in_an_outbox_count_as_sent_by_their_service():
    """The hot paths stage their events with ``staged_json`` (bytes built from the row): the
    scan's cross-check must see those sends as it sees ``staged`` and ``OutboxRow``."""
    sends = {(r.service, r.topic) for r in scan_services() if r.action == "send"}
    assert ("evidence", "evidence.recorded.v1") in sends
    assert ("classifier", "classification.recorded.v1") in sends
    assert ("classifier", "classification.refused.v1") in sends


def test_scan_file_resolves_constants_groups_and_outbox(tmp_path):
    src = tmp_path / "wiring.py"
    src.write_text(textwrap.dedent("""
        from attesta_contracts import topics
        from attesta_contracts.topics import CHAT_REQUESTED, RUNS_RECORDED
        NAME = "svc"

        def wire(messaging, instance_id, some_topic):
            messaging.consume(CHAT_REQUESTED, group_id=NAME, handler=h)
            messaging.consume(topics.KB_CARDS, group_id=f"{NAME}-{instance_id}", handler=h)
            messaging.consume(some_topic, group_id="dynamic", handler=h)  # not resolvable
            m.publish("chat.answered.v1", payload, key="k", correlation_id="c")
            enqueue(conn, RUNS_RECORDED, "run-1", env)
            m.publish("not.a.topic.v1", payload)
            print(CHAT_REQUESTED)

        GROUP = "from-default"

        class Topics:
            retrieval_completed: str = RETRIEVAL_COMPLETED
            kb: str = topics.KB_CARDS  # not a plain constant name: not resolved

        class Settings:
            chat_group: str = "svc-chat"
            answered_topic: str = "chat.answered.v1"

        def subscribe(messaging, topics=Topics(), group_id: str = GROUP, *, other="x"):
            messaging.consume(topics.retrieval_completed, group_id=group_id, handler=h)
            messaging.publish(topics.unknown_field, payload)  # no such field: left out
            messaging.consume(topics.chat_answered, group_id=settings.group, handler=h)
            messaging.consume(settings.answered_topic, group_id=settings.chat_group, handler=h)
            reader = KbTopicReader(settings.bootstrap, "kb.cards.v1", client_id="x")
            batch = BatchConsumer(topic=topics.retrieval_completed, group_id=f"{GROUP}-batch")
            other = SomeReader(settings.bootstrap, topics.kb)

        def register(messaging, group_id="loops"):
            handlers = {CHAT_REQUESTED: h1, RUNS_RECORDED: h2}
            return {topic: messaging.consume(topic, group_id=group_id, handler=handler)
                    for topic, handler in handlers.items()}

        def publish_all(messaging, things):
            for topic in ("evidence.recorded.v1",):
                messaging.publish(topic, payload)
            for topic in things:  # unknown iterable: left out
                messaging.publish(topic, payload)
    """), encoding="utf-8")
    from attesta_contracts.asyncapi import field_defaults
    import ast

    fields = field_defaults(ast.parse(src.read_text(encoding="utf-8")))
    assert fields == {"retrieval_completed": "retrieval.completed.v1", "chat_group": "svc-chat",
                      "answered_topic": "chat.answered.v1"}
    roles = scan_file(src, "svc", root=tmp_path, fields=fields)
    assert roles == {
        Role("svc", "receive", "chat.requested.v1", "svc", "wiring.py"),
        Role("svc", "receive", "kb.cards.v1", "svc-{instance_id}", "wiring.py"),
        Role("svc", "send", "chat.answered.v1", None, "wiring.py"),
        Role("svc", "send", "runs.recorded.v1", None, "wiring.py"),
        Role("svc", "receive", "retrieval.completed.v1", "from-default", "wiring.py"),
        Role("svc", "receive", "chat.answered.v1", "svc-chat", "wiring.py"),
        Role("svc", "receive", "kb.cards.v1", None, "wiring.py"),
        Role("svc", "receive", "retrieval.completed.v1", "from-default-batch", "wiring.py"),
        Role("svc", "receive", "chat.requested.v1", "loops", "wiring.py"),
        Role("svc", "receive", "runs.recorded.v1", "loops", "wiring.py"),
        Role("svc", "send", "evidence.recorded.v1", None, "wiring.py"),
    }


def test_markdown_summary_lists_every_topic_with_its_services(document):
    from attesta_contracts.asyncapi import render_markdown

    text = render_markdown(document)
    assert DOCUMENT_PATH.with_suffix(".md").read_text(encoding="utf-8") == text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(all_topics())
    chat = next(r for r in rows if r.startswith(f"| `{CHAT_REQUESTED}`"))
    for op in document["operations"].values():
        if op["channel"]["$ref"].endswith("/" + CHAT_REQUESTED):
            assert op["x-attesta-service"] in chat


def test_cli_check_and_write(tmp_path, capsys):
    out = tmp_path / "asyncapi.json"
    assert main(["--check", "--out", str(out)]) == 1
    assert main(["--write", "--out", str(out)]) == 0
    assert main(["--check", "--out", str(out)]) == 0
    out.write_text(out.read_text("utf-8").replace('"3.0.0"', '"3.0.1"', 1), encoding="utf-8")
    assert main(["--check", "--out", str(out)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--write", "--out", str(out)]) == 0
    out.with_suffix(".md").unlink()  # the summary is checked too
    assert main(["--check", "--out", str(out)]) == 1
    assert "missing" in capsys.readouterr().err
