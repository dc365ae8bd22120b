"""The collector's shape, checked on its source (issue #27): no import cycle inside the package
(imports in function bodies included), no HTTP in the domain or the service layer, every command
and query with a handler whose dependencies the real bootstrap provides, every domain error with
an HTTP status."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import attesta_collector
from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.bootstrap import build_bus
from attesta_collector.domain import commands
from attesta_collector.entrypoints.http import HTTP_ERRORS, api_error
from attesta_collector.service_layer import errors
from attesta_collector.service_layer.handlers import HANDLERS
from attesta_testing.collector import engine_checks, random_box
from attesta_platform.bus import Message

pytestmark = pytest.mark.unit
PACKAGE = Path(attesta_collector.__file__).parent
HTTP_MODULES = ("fastapi", "starlette", "attesta_platform.http")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if rel.parts[0] == "migrations":
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(("attesta_collector", *parts))] = path
    return out


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_import_cycle_inside_the_package():
    modules = _modules()
    graph = {name: {m for m in _imports(path) if m in modules and m != name}
             for name, path in modules.items()}
    cycles, state = [], dict.fromkeys(graph, 0)  # 0 new, 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state[nxt] == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif state[nxt] == 0:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if state[name] == 0:
            visit(name, [name])
    assert cycles == []


def test_no_http_in_domain_or_service_layer():
    found = [(name, m) for name, path in _modules().items()
             if name.split(".")[1:2] in (["domain"], ["service_layer"])
             for m in _imports(path) if m.split(".")[0] in HTTP_MODULES
             or any(m.startswith(h) for h in HTTP_MODULES)]
    assert found == []


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for v in vars(commands).values()
                if isinstance(v, type) and issubclass(v, Message) and v is not Message}
    assert messages == set(HANDLERS)
    bus = build_bus(lambda: None, brands=StaticBrandDirectory({}), engine_checks=engine_checks(),
                    sealer=random_box())
    assert bus.messages == messages  # bootstrap refuses a handler whose dependency is missing


def test_every_domain_error_has_an_http_status():
    kinds = [v for v in vars(errors).values()
             if isinstance(v, type) and issubclass(v, errors.ServiceError)]
    unmapped = [k.__name__ for k in kinds if not set(k.__mro__) & set(HTTP_ERRORS)]
    assert len(kinds) == 5 and unmapped == []
    err = api_error(errors.Conflict("duplicate_prompt", "exists"))
    assert (err.status, err.code, err.reason) == (409, "duplicate_prompt", "exists")
