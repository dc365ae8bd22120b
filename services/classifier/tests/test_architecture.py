"""The classifier's shape, checked on its source (issue #27): no import cycle inside the
package, no HTTP in the domain or the service layer, no database driver outside the adapters,
every command and query with a handler whose dependencies the bootstrap provides, every domain
error with an HTTP status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import attesta_classifier
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands, commands
from attesta_classifier.entrypoints.http import HTTP_ERRORS
from attesta_classifier.service_layer import errors
from attesta_classifier.service_layer.handlers import HANDLERS
from attesta_classifier.service_layer.pipeline import Heuristic
from attesta_platform.bus import Message
from tests.architecture import (
    NOT_MODULES,
    import_cycles,
    layer_imports,
    module_graph,
    package_modules,
)

pytestmark = pytest.mark.unit
PACKAGE = Path(attesta_classifier.__file__).parent

HTTP_IN_CODE = re.compile(r"\bHTTPException\b|\bstatus(_code)?\b[^\n=]*=\s*[1-5]\d\d\b")
CORE_LAYERS = ("domain", "service_layer")


def layer_problems(root: Path) -> list[str]:
    """Stricter than the repo-wide rules (tests/test_architecture.py): HTTP status codes in the
    text of the domain and the service layer, and asyncpg anywhere outside the adapters."""
    modules = package_modules(root, NOT_MODULES)
    layers = {name.split(".")[1] if "." in name else "" for name in modules}
    http = layer_imports(root, CORE_LAYERS, ("fastapi", "starlette", "attesta_platform.http"),
                         type_checking=False)
    problems = [f"{file}: HTTP in the {file.split('/')[1]} {name}" for file, name in sorted(http)]
    for name, path in modules.items():
        layer = name.split(".")[1] if "." in name else ""
        if layer in CORE_LAYERS and HTTP_IN_CODE.search(path.read_text(encoding="utf-8")):
            problems.append(f"{name}: an HTTP status in the {layer}")
    driver = layer_imports(root, layers - {"adapters"}, ("asyncpg",), type_checking=False)
    problems += [f"{file}: the database driver outside the adapters" for file, _ in sorted(driver)]
    return problems


def test_no_import_cycle_inside_the_package():
    # imports in function bodies count here too (the repo-wide rule counts module level only)
    assert import_cycles(module_graph(PACKAGE, in_functions=True)) == []


def test_no_http_in_domain_or_service_layer_and_no_driver_outside_adapters():
    assert layer_problems(PACKAGE) == []


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for module in (commands, alert_commands) for v in vars(module).values()
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
