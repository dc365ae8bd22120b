"""The classifier's shape, checked on its source (issue #27): no import cycle inside the
package, no HTTP in the domain or the service layer, no database driver outside the adapters,
every command and query with a handler whose dependencies the bootstrap provides, every domain
error with an HTTP status."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import attesta_classifier
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import commands
from attesta_classifier.entrypoints.http import HTTP_ERRORS
from attesta_classifier.service_layer import errors
from attesta_classifier.service_layer.handlers import HANDLERS
from attesta_classifier.service_layer.pipeline import Heuristic
from attesta_platform.bus import Message

pytestmark = pytest.mark.unit
PACKAGE = Path(attesta_classifier.__file__).parent


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(path: Path) -> set[str]:
    """Every module name an import statement names (in function bodies too; not the ones under
    ``if TYPE_CHECKING:``, which never run)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module if node.level == 0 else ".".join(
                [*path.relative_to(PACKAGE.parent).with_suffix("").parts[:-node.level],
                 node.module])
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return names


def import_cycles(root: Path) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    mods = modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: {t for n in imported(p) if (t := resolve(n)) and t != m} for m, p in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                cycles.append(sorted([v, *group]))

    for v in edges:
        if v not in index:
            connect(v)
    return cycles


HTTP_IN_CODE = re.compile(r"\bHTTPException\b|\bstatus(_code)?\b[^\n=]*=\s*[1-5]\d\d\b")


def layer_problems(root: Path) -> list[str]:
    problems = []
    for name, path in modules(root).items():
        layer = name.split(".")[1] if "." in name else ""
        names = imported(path)
        if layer in ("domain", "service_layer"):
            http = sorted(n for n in names if n.split(".")[0] in ("fastapi", "starlette")
                          or n.startswith("attesta_platform.http"))
            if http or HTTP_IN_CODE.search(path.read_text(encoding="utf-8")):
                problems.append(f"{name}: HTTP in the {layer} {http}")
        if layer != "adapters" and any(n.split(".")[0] == "asyncpg" for n in names):
            problems.append(f"{name}: the database driver outside the adapters")
    return problems


def test_no_import_cycle_inside_the_package():
    assert import_cycles(PACKAGE) == []


def test_no_http_in_domain_or_service_layer_and_no_driver_outside_adapters():
    assert layer_problems(PACKAGE) == []


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for v in vars(commands).values()
                if isinstance(v, type) and issubclass(v, Message) and v is not Message}
    assert messages == set(HANDLERS)
    bus = build_bus(lambda: None, heuristic=Heuristic(lambda run, brand: None, "v"))
    assert bus.messages == messages  # bootstrap refuses a handler whose dependency is missing


def test_every_domain_error_has_an_http_status():
    kinds = [v for v in vars(errors).values()
             if isinstance(v, type) and issubclass(v, errors.ServiceError)]
    unmapped = [k.__name__ for k in kinds if not set(k.__mro__) & set(HTTP_ERRORS)]
    assert len(kinds) > 5 and unmapped == []
    assert HTTP_ERRORS[errors.NotFound] == (404, "not_found")
    assert errors.Unstorable.__mro__[1] is errors.Invalid and HTTP_ERRORS[errors.Invalid][0] == 422
