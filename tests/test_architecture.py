"""Every package's shape, checked on its source by AST (issue #27), with tests/architecture.py:

1. no import cycle between the modules of a package (module-level imports; those under
   ``if TYPE_CHECKING:`` never run and do not count);
2. no HTTP (fastapi, starlette, aiohttp, httpx, attesta_platform.http) in a service's
   ``domain/`` or ``service_layer/``;
3. no driver (asyncpg, redis, aiokafka, confluent_kafka, psycopg) in ``domain/`` or
   ``service_layer/``;
4. every import inside a function body in product code says why in a comment (on its line or
   the line above; a block of imports under one comment shares it);
5. no driver in a service's ``entrypoints/``: an adapter translates the driver's errors into
   the service layer's, so the edge maps domain errors only (``bootstrap.py`` is wiring and
   may import drivers).

Where today's code breaks a rule the violation is listed below with a one-line reason: allowed
while present, no new one is, and a listed one that is gone fails too (the lists only shrink).
Pure AST over ~250 files: well under a second. docs/architecture-checks.md has the counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.architecture import (
    ROOT,
    function_imports,
    import_cycles,
    layer_imports,
    module_graph,
    packages,
)

pytestmark = pytest.mark.unit

HTTP = ("fastapi", "starlette", "aiohttp", "httpx", "attesta_platform.http")
DRIVERS = ("asyncpg", "redis", "aiokafka", "confluent_kafka", "psycopg")
CORE_LAYERS = ("domain", "service_layer")
EDGE_LAYERS = ("entrypoints",)
PACKAGES = packages()
SERVICES = [p for p in PACKAGES if p.relative_to(ROOT).parts[0] == "services"]

# Rules 1-3 and 5: no violation today, so no exception (package -> cycle, or (file, module)).
KNOWN_CYCLES: dict[str, list[list[str]]] = {}
KNOWN_HTTP_IN_CORE: set[tuple[str, str]] = set()
KNOWN_DRIVERS_IN_CORE: set[tuple[str, str]] = set()
KNOWN_DRIVERS_IN_ENTRYPOINTS: set[tuple[str, str]] = set()

# Rule 4: imports inside function bodies with no comment saying why. file (relative to its src)
# -> (reason it is there, the modules imported, one entry per import). Empty since "#27 rule 4":
# the 101 found then (99 listed, 2 come in since) were moved to module level or given their
# reason. An entry would be allowed while present; no new one is. Add the comment (or move the
# import to module level), not an entry.
UNEXPLAINED_FUNCTION_IMPORTS: dict[str, tuple[str, list[str]]] = {}


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def drift(found: Counter[tuple[str, str]], known: Counter[tuple[str, str]]) -> dict[str, list]:
    """What differs between the violations found and the ones listed: new ones, and listed ones
    that no longer exist (both fail)."""
    return {"new (not allowed)": sorted((found - known).elements()),
            "listed but gone (delete from the list)": sorted((known - found).elements())}


def unexplained(package_dirs: list[Path]) -> Counter[tuple[str, str]]:
    """(file relative to its src, imported module) per import in a function body with no reason."""
    found: Counter[tuple[str, str]] = Counter()
    for package in package_dirs:
        for imp in function_imports(package):
            if not imp.reason:
                file = imp.path.relative_to(package.parent).as_posix()
                found.update((file, m) for m in (imp.names[:1] if imp.is_from else imp.names))
    return found


def test_every_package_is_checked():
    names = {p.name for p in PACKAGES}
    assert {"attesta_platform", "attesta_contracts", "attesta_kb", "attesta_classifier",
            "attesta_gateway", "attesta_evidence", "attesta_collector", "attesta_retrieval",
            "attesta_answer", "attesta_llm"} <= names
    assert len(SERVICES) >= 7


@pytest.mark.parametrize("package", PACKAGES, ids=_ids(PACKAGES))
def test_no_import_cycle_inside_the_package(package: Path):
    graph = module_graph(package)
    assert len(graph) > 1
    assert import_cycles(graph) == KNOWN_CYCLES.get(package.name, [])


@pytest.mark.parametrize("package", SERVICES, ids=_ids(SERVICES))
def test_no_http_in_domain_or_service_layer(package: Path):
    found = layer_imports(package, CORE_LAYERS, HTTP)
    known = {k for k in KNOWN_HTTP_IN_CORE if k[0].startswith(package.name + "/")}
    assert found == known


@pytest.mark.parametrize("package", PACKAGES, ids=_ids(PACKAGES))
def test_no_driver_in_domain_or_service_layer(package: Path):
    found = layer_imports(package, CORE_LAYERS, DRIVERS)
    known = {k for k in KNOWN_DRIVERS_IN_CORE if k[0].startswith(package.name + "/")}
    assert found == known


@pytest.mark.parametrize("package", SERVICES, ids=_ids(SERVICES))
def test_no_driver_in_entrypoints(package: Path):
    found = layer_imports(package, EDGE_LAYERS, DRIVERS)
    known = {k for k in KNOWN_DRIVERS_IN_ENTRYPOINTS if k[0].startswith(package.name + "/")}
    assert found == known


def test_every_import_in_a_function_body_says_why():
    known = Counter((file, m) for file, (_, mods) in UNEXPLAINED_FUNCTION_IMPORTS.items()
                    for m in mods)
    assert all(reason.strip() for reason, _ in UNEXPLAINED_FUNCTION_IMPORTS.values())
    assert drift(unexplained(PACKAGES), known) == {
        "new (not allowed)": [], "listed but gone (delete from the list)": []}


# Each rule can fail: the helper on small packages written for the test.


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "src" / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != root and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("", encoding="utf-8")
        path.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_is_found_and_type_checking_or_function_imports_do_not_make_one(tmp_path):
    package = _package(tmp_path, {
        "a.py": "from pkg import b\n",
        "b.py": "from .c import x\n",
        "c.py": "import pkg.a\nx = 1\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n",
        "e.py": "def f():\n    from . import d  # late on purpose\n",
    })
    graph = module_graph(package)
    assert graph["pkg.b"] == {"pkg.c"} and graph["pkg.d"] == set() and graph["pkg.e"] == set()
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert import_cycles(module_graph(package, in_functions=True)) == [
        ["pkg.a", "pkg.b", "pkg.c"]]
    assert import_cycles(module_graph(package, in_functions=True, type_checking=True)) == [
        ["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]


def test_http_or_a_driver_in_the_service_layer_is_found(tmp_path):
    package = _package(tmp_path, {
        "service_layer/handlers.py": "from fastapi import Response\n"
                                     "from attesta_platform import http, bus\n",
        "domain/model.py": "def f():\n    import asyncpg.exceptions  # why not\n",
        "adapters/postgres.py": "import asyncpg\nimport httpx\n",
        "entrypoints/http.py": "from fastapi import FastAPI\n",
    })
    assert layer_imports(package, CORE_LAYERS, HTTP) == {
        ("pkg/service_layer/handlers.py", "fastapi"),
        ("pkg/service_layer/handlers.py", "attesta_platform.http")}
    assert layer_imports(package, CORE_LAYERS, DRIVERS) == {
        ("pkg/domain/model.py", "asyncpg.exceptions")}


def test_a_driver_in_the_entrypoints_is_found_and_bootstrap_or_adapters_may_have_one(tmp_path):
    package = _package(tmp_path, {
        "entrypoints/http.py": "import asyncpg\nfrom fastapi import FastAPI\n",
        "entrypoints/consumers.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import aiokafka\n"
            "def f():\n    from redis.asyncio import Redis  # late\n"),
        "entrypoints/deps.py": "from pkg.service_layer import errors\n",
        "service_layer/errors.py": "class Invalid(Exception): ...\n",
        "adapters/postgres.py": "import asyncpg\n",
        "bootstrap.py": "import asyncpg\nimport redis.asyncio\n",
    })
    assert layer_imports(package, EDGE_LAYERS, DRIVERS) == {
        ("pkg/entrypoints/http.py", "asyncpg"), ("pkg/entrypoints/consumers.py", "aiokafka"),
        ("pkg/entrypoints/consumers.py", "redis.asyncio")}


def test_an_import_in_a_function_without_a_reason_is_found(tmp_path):
    package = _package(tmp_path, {"m.py": (
        "import os\n"
        "def f():\n"
        "    import json  # loaded late: rarely used\n"
        "    # the next two only when f runs\n"
        "    import csv\n"
        "    import math  # type: ignore[x]\n"
        "\n"
        "    import re  # noqa: PLC0415\n"
        "    from . import a\n"
        "class C:\n"
        "    async def g(self):\n"
        "        import shutil\n"
        "h = lambda: __import__('x')\n"
    ), "a.py": ""})
    found = function_imports(package)
    assert [(i.names[0], bool(i.reason)) for i in found] == [
        ("json", True), ("csv", True), ("math", True), ("re", False), ("pkg", False),
        ("shutil", False)]
    assert unexplained([package]) == Counter(
        {("pkg/m.py", "re"): 1, ("pkg/m.py", "pkg"): 1, ("pkg/m.py", "shutil"): 1})


def test_a_listed_exception_that_is_gone_fails_as_a_new_one_does():
    found = Counter({("p/a.py", "x"): 1, ("p/b.py", "y"): 2})
    assert drift(found, found.copy()) == {
        "new (not allowed)": [], "listed but gone (delete from the list)": []}
    assert drift(found, Counter({("p/a.py", "x"): 1, ("p/b.py", "y"): 1})) == {
        "new (not allowed)": [("p/b.py", "y")], "listed but gone (delete from the list)": []}
    assert drift(Counter({("p/a.py", "x"): 1}), found) == {
        "new (not allowed)": [],
        "listed but gone (delete from the list)": [("p/b.py", "y"), ("p/b.py", "y")]}
