"""The AsyncAPI 3.0 document of Attesta's Kafka topics, generated from the code.

Built from the topic registry (``attesta_contracts.topics``: names, keys, event types, schema
versions, compaction, descriptions), the envelope JSON Schemas of the payload models (the
same validation-mode schemas as the snapshots in ``libs/contracts/schemas``) and the services'
declared roles (``attesta_contracts.roles``: who publishes, who consumes in which group). The
same declarations give the README's topic table (between its ``topics:begin``/``topics:end``
markers).

A static scan of ``services/*/src`` (no import) cross-checks the declarations: a unit test fails
when a service's source publishes or consumes a topic its roles do not declare. The scan sees
every ``.consume``/``.consume_batch``/``.batch_consumer``/``.replay(<topic>, ...)``,
``.publish``/``.publish_envelope``/``.publish_tombstone(<topic>, ...)`` and
outbox ``enqueue``/``staged``/``staged_json``/``OutboxRow`` call whose topic is a registry constant or literal. A
service's own reader (a call to a ``*Consumer``/``*Reader`` class with a topic argument) counts
as receiving. A topic or group
given as a settings/dataclass field (``settings.retrieval_kb_topic``, ``topics.chat_answered``)
is read as that field's default in the service's source, and one given by a parameter as the
parameter's default; a loop variable over a literal dict/list of topic constants (``for topic,
handler in handlers.items()``) counts for each of them. Any other variable topic is left out
(nothing is guessed), and a group
known only at run time is shown as its expression (``gateway-{instance_id}``).

The document is committed as ``docs/asyncapi.json``, with a one-page summary for people in
``docs/asyncapi.md``::

    python -m attesta_contracts.asyncapi --write   # regenerate after a contract or roles change
    python -m attesta_contracts.asyncapi --check   # exit 1 if a committed file is stale
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from attesta_contracts import topics as topics_module
from attesta_contracts.envelope import Envelope
from attesta_contracts.roles import all_roles
from attesta_contracts.topics import DEAD_LETTERED, Topic, all_topics

# This file is <repo>/libs/contracts/src/attesta_contracts/asyncapi.py.
REPO_ROOT = Path(__file__).resolve().parents[4]
DOCUMENT_PATH = REPO_ROOT / "docs" / "asyncapi.json"
README_PATH = REPO_ROOT / "README.md"
README_BEGIN, README_END = "<!-- topics:begin (generated: python -m attesta_contracts.asyncapi --write) -->", \
    "<!-- topics:end -->"
ROLES_SOURCE = "libs/contracts/src/attesta_contracts/roles.py"
SERVICES_DIR = REPO_ROOT / "services"
KAFKA_BINDING_VERSION = "0.5.0"
DOC_VERSION = "1.0.0"  # bump with any topic added, removed or versioned
SCHEMA_REF = "#/components/schemas/{model}"
SEND_METHODS = {"publish", "publish_envelope", "publish_tombstone"}
RECEIVE_METHODS = {"consume", "consume_batch", "batch_consumer", "replay"}


@dataclass(frozen=True, order=True)
class Role:
    """One service's use of one topic, found in its source."""

    service: str
    action: str  # "send" | "receive" (AsyncAPI 3: from that service's point of view)
    topic: str
    group_id: str | None  # receive only; a template such as "gateway-{instance_id}" when dynamic
    source: str  # path relative to the repo root


# -- static scan of the services ---------------------------------------------------------------


def _topic_constants() -> dict[str, str]:
    registry = all_topics()
    return {k: v for k, v in vars(topics_module).items()
            if k.isupper() and isinstance(v, str) and v in registry}


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` assignments (e.g. a service's ``NAME``)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _parameter_defaults(func: ast.FunctionDef | ast.AsyncFunctionDef,
                        strings: dict[str, str]) -> dict[str, str]:
    """``def f(..., group_id: str = CONSUMER_GROUP)``: parameter name -> its string default."""
    out: dict[str, str] = {}
    args = func.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for arg, default in pairs:
        if isinstance(default, ast.Constant) and isinstance(default.value, str):
            out[arg.arg] = default.value
        elif isinstance(default, ast.Name) and default.id in strings:
            out[arg.arg] = strings[default.id]
    return out


def _loop_topics(tree: ast.Module, constants: dict[str, str]) -> dict[int, dict[str, list[str]]]:
    """Loop variables that run over topics, per call inside the loop: ``for topic, handler in
    handlers.items()`` where ``handlers = {RUNS_RECORDED: ..., ...}`` (or a list/tuple/set of
    topics, or the literal itself) in the same file. ``{id(call): {variable: topics}}``."""
    def topics_in(node: ast.expr) -> list[str]:
        elts = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else []
        found = [_resolve_topic(e, constants) for e in elts if e is not None]
        return [t for t in found if t] if found and all(found) else []

    literals: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and topics_in(node.value):
            literals[node.targets[0].id] = topics_in(node.value)

    def binding(loop: ast.For | ast.AsyncFor | ast.comprehension) -> dict[str, list[str]]:
        source = loop.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) \
                and source.func.attr in ("items", "keys") and not source.args:
            source = source.func.value
        found = literals.get(source.id, []) if isinstance(source, ast.Name) else topics_in(source)
        target = loop.target.elts[0] if isinstance(loop.target, ast.Tuple) and loop.target.elts \
            else loop.target
        return {target.id: found} if found and isinstance(target, ast.Name) else {}

    per_call: dict[int, dict[str, list[str]]] = {}
    for node in ast.walk(tree):  # outer loops first: inner bindings override them
        scopes: list[tuple[dict[str, list[str]], list[ast.AST]]] = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            scopes.append((binding(node), list(node.body)))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            body: list[ast.AST] = ([node.key, node.value] if isinstance(node, ast.DictComp)
                                   else [node.elt])
            for gen in node.generators:
                scopes.append((binding(gen), body))
        for bound, body in scopes:
            if not bound:
                continue
            for part in body:
                for call in ast.walk(part):
                    if isinstance(call, ast.Call):
                        per_call[id(call)] = {**per_call.get(id(call), {}), **bound}
    return per_call


def _function_defaults(tree: ast.Module, strings: dict[str, str]) -> dict[int, dict[str, str]]:
    """Per call: the string defaults of the enclosing function's parameters (innermost wins)."""
    per_call: dict[int, dict[str, str]] = {}
    for node in ast.walk(tree):  # outer functions first
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defaults = _parameter_defaults(node, strings)
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    per_call[id(call)] = {**per_call.get(id(call), {}), **defaults}
    return per_call


def _resolve_topic(node: ast.expr | None, constants: dict[str, str],
                   fields: dict[str, str] | None = None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in all_topics():
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):
        # topics.CHAT_REQUESTED, or a settings/dataclass field whose default is a topic
        # (``settings.retrieval_kb_topic``, ``topics.chat_answered``): read as that default.
        return constants.get(node.attr) or (fields or {}).get(node.attr)
    return None


def field_defaults(tree: ast.Module, constants: dict[str, str] | None = None) -> dict[str, str]:
    """Class fields with a string default: ``retrieval_chat_group: str = "retrieval"`` and
    ``chat_answered: str = CHAT_ANSWERED`` (a topic constant, resolved to its name)."""
    constants = _topic_constants() if constants is None else constants
    out: dict[str, str] = {}
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                value = node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    out[node.target.id] = value.value
                elif isinstance(value, ast.Name) and value.id in constants:
                    out[node.target.id] = constants[value.id]
    return out


def _render_group(node: ast.expr | None, strings: dict[str, str]) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in strings:
        return strings[node.id]
    if isinstance(node, ast.Attribute) and node.attr in strings:  # settings.<field> default
        return strings[node.attr]
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = value.value
                if isinstance(inner, ast.Name) and inner.id in strings:
                    parts.append(strings[inner.id])
                else:
                    parts.append("{" + ast.unparse(inner) + "}")
        return "".join(parts)
    return "{" + ast.unparse(node) + "}"


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[index] if len(call.args) > index else None


def scan_file(path: Path, service: str, root: Path = REPO_ROOT,
              fields: dict[str, str] | None = None) -> set[Role]:
    """The topic uses one source file makes, as far as they can be resolved statically.
    ``fields``: string defaults of the service's settings/dataclass fields (field_defaults)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _topic_constants()
    fields = fields or {}
    module_strings = _module_strings(tree)
    strings = {**fields, **module_strings}
    # A parameter's default may be a topic constant (``topic: str = RETRIEVAL_COMPLETED``).
    call_defaults = _function_defaults(tree, {**constants, **module_strings})
    try:
        source = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        source = path.as_posix()

    call_loops = _loop_topics(tree, constants)
    loops: dict[str, list[str]] = {}  # the loop bindings of the call being looked at
    params: dict[str, str] = {}  # the enclosing function's parameter defaults, for that call

    def topics_of(arg: ast.expr | None) -> list[str]:
        if isinstance(arg, ast.Name) and arg.id in loops:
            return loops[arg.id]
        topic = _resolve_topic(arg, constants, fields)
        if topic is None and isinstance(arg, ast.Name) and params.get(arg.id) in all_topics():
            topic = params[arg.id]
        return [topic] if topic else []

    def topic_of(arg: ast.expr | None) -> str | None:
        found = topics_of(arg)
        return found[0] if len(found) == 1 else None

    roles: set[Role] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name is None:
            continue
        loops = call_loops.get(id(node), {})
        params = call_defaults.get(id(node), {})
        # Parameter defaults of the enclosing function shadow module names of the same name.
        strings = {**fields, **module_strings, **call_defaults.get(id(node), {})}
        if name in RECEIVE_METHODS and isinstance(func, ast.Attribute):
            group = _render_group(_arg(node, 99, "group_id"), strings)
            for topic in topics_of(_arg(node, 0, "topic_name")):
                roles.add(Role(service, "receive", topic, group, source))
        elif name in SEND_METHODS and isinstance(func, ast.Attribute):
            for topic in topics_of(_arg(node, 0, "topic_name")):
                roles.add(Role(service, "send", topic, None, source))
        elif name == "enqueue":  # outbox: enqueue(conn, topic, key, envelope)
            enqueued = topic_of(_arg(node, 1, "topic_name"))
            if enqueued:
                roles.add(Role(service, "send", enqueued, None, source))
        elif name in ("staged", "staged_json", "OutboxRow"):  # outbox rows: staged(topic, key, ...)
            staged = topic_of(_arg(node, 0, "topic"))
            if staged:
                roles.add(Role(service, "send", staged, None, source))
        elif name.endswith(("Consumer", "Reader")):
            # A service's own reader (e.g. a batch consumer, a replaying KB reader): the first
            # argument that is a topic, positional or a keyword named *topic*.
            candidates = [*node.args, *(kw.value for kw in node.keywords
                                        if kw.arg and "topic" in kw.arg)]
            read = next((t for t in map(topic_of, candidates) if t), None)
            if read:
                group_node = next((kw.value for kw in node.keywords
                                   if kw.arg in ("group_id", "group")), None)
                roles.add(Role(service, "receive", read,
                               _render_group(group_node, strings) if group_node else None, source))
    return roles


def scan_services(services_dir: Path = SERVICES_DIR, root: Path = REPO_ROOT) -> list[Role]:
    """Every service's topic uses under ``services/<svc>/src`` (tests excluded), sorted."""
    roles: set[Role] = set()
    if not services_dir.is_dir():
        return []
    for service_dir in sorted(p for p in services_dir.iterdir() if p.is_dir()):
        src = service_dir / "src"
        if not src.is_dir():
            continue
        paths = [p for p in sorted(src.rglob("*.py"))
                 if "tests" not in p.relative_to(src).parts and not p.name.startswith("test_")]
        trees = {p: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for p in paths}
        fields: dict[str, str] = {}
        for tree in trees.values():
            fields.update(field_defaults(tree))
        for path in paths:
            roles |= scan_file(path, service_dir.name, root, fields)
    # The messaging core dead-letters on behalf of every consumer (Messaging.dead_letter).
    for role in list(roles):
        if role.action == "receive":
            roles.add(Role(role.service, "send", DEAD_LETTERED, None,
                           "libs/platform/src/attesta_platform/messaging.py"))
    return sorted(roles)


def declared_roles() -> list[Role]:
    """The services' declared roles (``attesta_contracts.roles``), as operations."""
    roles: set[Role] = set()
    for svc in all_roles().values():
        for p in svc.publishes:
            roles.add(Role(svc.service, "send", p.topic, None, ROLES_SOURCE))
        for c in svc.consumes:
            roles.add(Role(svc.service, "receive", c.topic, c.group, ROLES_SOURCE))
        if svc.consumes:  # the messaging core dead-letters on behalf of every consumer
            roles.add(Role(svc.service, "send", DEAD_LETTERED, None, ROLES_SOURCE))
    return sorted(roles)


def undeclared(found: list[Role] | None = None) -> list[Role]:
    """Topic uses in the services' source that their roles do not declare (should be none)."""
    found = scan_services() if found is None else found
    declared = {(r.service, r.action, r.topic) for r in declared_roles()}
    return [r for r in found if (r.service, r.action, r.topic) not in declared]


# -- the document ------------------------------------------------------------------------------


def _schemas() -> tuple[dict[str, str], dict[str, Any]]:
    """``({topic name: envelope schema name}, {schema name: JSON Schema})`` with every ``$ref``
    pointing into ``#/components/schemas`` (a ``#/$defs`` ref would resolve against the
    AsyncAPI document root, not the payload)."""
    registry = sorted(all_topics().values(), key=lambda t: t.name)
    # name-defined: mypy reads Envelope[...] as a type, and the payload class is a runtime value.
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (Envelope[t.payload], "validation") for t in registry]  # type: ignore[name-defined]
    keys, top = models_json_schema(models, ref_template=SCHEMA_REF)
    names: dict[str, str] = {}
    for t, (model, mode) in zip(registry, models, strict=True):
        ref = keys[(model, mode)]["$ref"]
        names[t.name] = ref.rsplit("/", 1)[-1]
    return names, dict(sorted(top.get("$defs", {}).items()))


def _message(t: Topic, schema_name: str) -> dict[str, Any]:
    return {
        "name": t.event_type,
        "title": t.event_type,
        "summary": t.description,
        "contentType": "application/json",
        "headers": {
            "type": "object",
            "description": "Kafka record headers set by attesta_platform.messaging "
                           "(absent on raw/tombstone records).",
            "properties": {
                "event_type": {"type": "string", "const": t.event_type},
                "schema_version": {"type": "string", "const": str(t.schema_version)},
            },
        },
        "payload": {"$ref": SCHEMA_REF.format(model=schema_name)},
        "bindings": {"kafka": {
            "key": {"type": "string", "description": f"the payload's `{t.key}` (per-entity order)"},
            "bindingVersion": KAFKA_BINDING_VERSION,
        }},
        "x-attesta-event-type": t.event_type,
        "x-attesta-schema-version": t.schema_version,
        "x-attesta-key": t.key,
        "x-attesta-schema-snapshot": f"libs/contracts/schemas/{t.name}.json",
    }


def _channel(t: Topic) -> dict[str, Any]:
    policy = "compact" if t.compacted else "delete"
    description = t.description
    if t.compacted:
        description += " Compacted: the latest record per key is kept; a null value deletes it."
    return {
        "address": t.name,
        "title": t.name,
        "description": description,
        "messages": {t.event_type: {"$ref": f"#/components/messages/{t.event_type}"}},
        "bindings": {"kafka": {
            "topic": t.name,
            "topicConfiguration": {"cleanup.policy": [policy]},
            "bindingVersion": KAFKA_BINDING_VERSION,
        }},
        "x-attesta-compacted": t.compacted,
    }


def _operation_id(role: Role, taken: set[str]) -> str:
    base = f"{role.service}.{role.action}.{role.topic}"
    op_id, n = base, 2
    while op_id in taken:
        op_id, n = f"{base}.{n}", n + 1
    taken.add(op_id)
    return op_id


def _operations(roles: list[Role]) -> dict[str, Any]:
    registry = all_topics()
    ops: dict[str, Any] = {}
    taken: set[str] = set()
    for role in roles:
        t = registry[role.topic]
        verb = "sends to" if role.action == "send" else "receives from"
        op: dict[str, Any] = {
            "action": role.action,
            "channel": {"$ref": f"#/channels/{t.name}"},
            "title": f"{role.service} {verb} {t.name}",
            "summary": f"{role.service} {verb} {t.name}"
                       + (f" in consumer group `{role.group_id}`" if role.group_id else ""),
            "messages": [{"$ref": f"#/channels/{t.name}/messages/{t.event_type}"}],
            "tags": [{"name": f"service:{role.service}"}],
            "x-attesta-service": role.service,
            "x-attesta-derived-from": role.source,
        }
        if role.group_id is not None:
            op["bindings"] = {"kafka": {
                "groupId": {"type": "string", "enum": [role.group_id]},
                "bindingVersion": KAFKA_BINDING_VERSION,
            }}
        ops[_operation_id(role, taken)] = op
    return ops


INFO_DESCRIPTION = """\
Every Kafka topic of Attesta, generated from the code (`python -m attesta_contracts.asyncapi \
--write`); do not edit by hand.

Every record value is a JSON envelope (`event_id`, `event_type`, `schema_version`, \
`occurred_at`, `correlation_id`, `causation_id`, `producer`, `payload`); the message payload \
schemas below are those envelopes. Delivery is at-least-once: consumers deduplicate by \
`event_id`, and a redelivered input yields the same output `event_id`.

Compatibility: within a topic version only additive optional fields appear; anything else \
(removal, rename, new required field, narrowed type) gets a new `.vN` topic. The check is \
`libs/contracts` (`attesta_contracts.compat`) against the committed schema snapshots.

Operations are per service and named `<service>.<send|receive>.<topic>`; `action` is from \
that service's point of view. They are the services' declared roles \
(`attesta_contracts.roles`), enforced by the messaging core at run time and by a scan of the \
services' source in the tests; a consumer that fails a message for good sends it to \
`messaging.dead-lettered.v1` through the shared messaging core. Topics are created with `ATTESTA_KAFKA_PARTITIONS` partitions (default 3). \
Internal teams: subscribe with your own consumer group."""


def build_document(roles: list[Role] | None = None) -> dict[str, Any]:
    """The AsyncAPI 3.0.0 document as a JSON-ready dict (deterministic)."""
    roles = declared_roles() if roles is None else roles
    names, schemas = _schemas()
    registry = sorted(all_topics().values(), key=lambda t: t.name)
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Attesta events",
            "version": DOC_VERSION,
            "description": INFO_DESCRIPTION,
            "license": {"name": "Proprietary (synthetic data only)"},
        },
        "defaultContentType": "application/json",
        "servers": {
            "local": {
                "host": "127.0.0.1:19092",
                "protocol": "kafka",
                "description": "Single-node KRaft broker started by `scripts/infra up` "
                               "(KAFKA_BOOTSTRAP_SERVERS).",
            },
        },
        "channels": {t.name: _channel(t) for t in registry},
        "operations": _operations(roles),
        "components": {
            "schemas": schemas,
            "messages": {t.event_type: _message(t, names[t.name]) for t in registry},
        },
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _parties(document: dict[str, Any], groupless: str = "") -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(senders, receivers)`` per topic; a receiver is ``service (`group`)``."""
    senders: dict[str, set[str]] = {}
    receivers: dict[str, set[str]] = {}
    for op in document["operations"].values():
        topic_name = op["channel"]["$ref"].rsplit("/", 1)[-1]
        service = op["x-attesta-service"]
        if op["action"] == "send":
            senders.setdefault(topic_name, set()).add(service)
        else:
            group = op.get("bindings", {}).get("kafka", {}).get("groupId", {}).get("enum", [None])[0]
            receivers.setdefault(topic_name, set()).add(
                f"{service} (`{group}`)" if group else service + groupless)
    return senders, receivers


def render_markdown(document: dict[str, Any]) -> str:
    """A one-page summary of the document for people: who sends and receives what."""
    senders, receivers = _parties(document)
    lines = [
        "# Attesta topics (generated from docs/asyncapi.json: do not edit)",
        "",
        "Regenerate both files with `python -m attesta_contracts.asyncapi --write`. Every value is",
        "a JSON envelope around the payload; schemas: `libs/contracts/schemas/<topic>.json` and",
        "`components.schemas` of `docs/asyncapi.json`. Senders and receivers are the services'",
        "declared roles (`libs/contracts/src/attesta_contracts/roles.py`); `-` means none (a",
        "topic for internal teams to subscribe to).",
        "",
        "| topic | event type | version | key | cleanup | sent by | received by (group) | what |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, channel in document["channels"].items():
        message = document["components"]["messages"][next(iter(channel["messages"]))]
        lines.append(
            f"| `{name}` | {message['name']} | {message['x-attesta-schema-version']} | "
            f"`{message['x-attesta-key']}` | "
            f"{channel['bindings']['kafka']['topicConfiguration']['cleanup.policy'][0]} | "
            f"{', '.join(sorted(set(senders.get(name, [])))) or '-'} | "
            f"{', '.join(sorted(set(receivers.get(name, [])))) or '-'} | {message['summary']} |")
    return "\n".join(lines) + "\n"


def render_readme_table(document: dict[str, Any]) -> str:
    """The README's topic table: key, payload, producer and consumers of every topic."""
    senders, receivers = _parties(document, groupless=" (replay, no group)")
    lines = ["| topic | key | payload | produced by | consumed by (group) | what |",
             "|---|---|---|---|---|---|"]
    for name, channel in document["channels"].items():
        message = document["components"]["messages"][next(iter(channel["messages"]))]
        produced = ", ".join(sorted(senders.get(name, ()))) or "-"
        if name == DEAD_LETTERED:
            produced = "every consumer (the messaging core)"
        lines.append(f"| `{name}` | `{message['x-attesta-key']}` | `{message['name']}` | {produced} | "
                     f"{', '.join(sorted(receivers.get(name, ()))) or '-'} | {message['summary']} |")
    return "\n".join(lines) + "\n"


def readme_with_table(readme: str, table: str) -> str:
    start, end = readme.index(README_BEGIN) + len(README_BEGIN), readme.index(README_END)
    return readme[:start] + "\n" + table + readme[end:]


def _differences(path: Path, wanted: str) -> list[str]:
    if not path.exists():
        return [f"missing: {path}"]
    committed = path.read_text(encoding="utf-8")
    if committed == wanted:
        return []
    diff = list(difflib.unified_diff(committed.splitlines(), wanted.splitlines(),
                                     fromfile=f"committed/{path.name}", tofile="code", lineterm="",
                                     n=1))
    return [f"out of date: {path}"] + ["    " + d for d in diff[:80]] + (
        [f"    ... {len(diff) - 80} more diff lines"] if len(diff) > 80 else [])


def check(path: Path = DOCUMENT_PATH) -> list[str]:
    """Differences between the committed document (and its .md summary) and the code (empty
    when current)."""
    document = build_document()
    problems = (_differences(path, render(document))
                + _differences(path.with_suffix(".md"), render_markdown(document)))
    if path == DOCUMENT_PATH and README_PATH.exists():
        readme = README_PATH.read_text(encoding="utf-8")
        problems += _differences(README_PATH, readme_with_table(readme, render_readme_table(document)))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attesta_contracts.asyncapi", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the committed document")
    mode.add_argument("--check", action="store_true", help="exit 1 if it is out of date")
    mode.add_argument("--print", action="store_true", help="print the document to stdout")
    parser.add_argument("--out", type=Path, default=DOCUMENT_PATH, help="document path")
    args = parser.parse_args(argv)
    if args.print:
        sys.stdout.write(render(build_document()))
        return 0
    if args.write:
        document = build_document()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(render(document), encoding="utf-8")
        args.out.with_suffix(".md").write_text(render_markdown(document), encoding="utf-8")
        print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
        if args.out == DOCUMENT_PATH and README_PATH.exists():
            readme = README_PATH.read_text(encoding="utf-8")
            README_PATH.write_text(readme_with_table(readme, render_readme_table(document)),
                                   encoding="utf-8")
            print(f"updated the topic table of {README_PATH}")
        return 0
    problems = check(args.out)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("\nregenerate with `python -m attesta_contracts.asyncapi --write` and review the diff",
              file=sys.stderr)
        return 1
    print(f"{args.out} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
