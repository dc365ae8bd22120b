"""Architecture checks on source, by AST only (issue #27): nothing is imported or run.

One package at a time, given its directory (``services/x/src/attesta_x``):

- ``package_imports``: every import statement of every module, resolved to absolute module
  names, with where it sits (module level or inside a function body, under
  ``if TYPE_CHECKING:`` or not) and the comment next to it (same line or the line above);
- ``module_graph`` / ``import_cycles``: the package's own module graph and its strongly
  connected groups of more than one module (Tarjan), i.e. its import cycles;
- ``function_imports``: imports inside function bodies, each with its comment (the reason) or
  none;
- ``layer_imports``: which modules of given sub-packages (``domain``, ``service_layer``) import
  given modules (``fastapi``, ``asyncpg``...).

``tests/test_architecture.py`` applies these to every package; a service's own architecture
test may apply them with stricter settings (``services/classifier/tests/test_architecture.py``).
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Alembic's migration scripts sit in a service's src but are loaded by Alembic from their
# files, never imported as modules of the package: not part of its module graph.
NOT_MODULES = ("migrations",)


@dataclass(frozen=True)
class Import:
    """One import statement of a module of the package."""

    module: str  # the importing module, dotted (attesta_x.service_layer.handlers)
    path: Path
    line: int
    names: tuple[str, ...]  # absolute names it imports: base module and base.name for `from`
    is_from: bool  # `from base import ...` (names[0] is the base) rather than `import a, b`
    in_function: bool  # inside a function body (runs when called, not at import)
    type_checking: bool  # under `if TYPE_CHECKING:` (never runs)
    reason: str  # the comment on its lines or on the line above ("" when none)
    end: int = 0  # its last line

    @property
    def where(self) -> str:
        """The file relative to the repository (or as given) and the line."""
        try:
            shown = self.path.resolve().relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown.as_posix()}:{self.line}"


def packages(root: Path = ROOT) -> list[Path]:
    """Every product package: services/*/src/* and libs/*/src/* with an __init__.py."""
    found = [p.parent for pattern in ("services/*/src/*/__init__.py", "libs/*/src/*/__init__.py")
             for p in root.glob(pattern)]
    return sorted(found)


def package_modules(package: Path, exclude: Iterable[str] = ()) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package (not under `exclude` dirs)."""
    skip = set(exclude)
    found = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if skip & set(rel.parts[:-1]) or "__pycache__" in rel.parts:
            continue
        parts = [package.name, *rel.with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


_MARKERS = ("noqa", "type:", "pragma", "pylint:", "fmt:")


def _comments(source: str) -> dict[int, str]:
    """Line -> the comment on it, without tool markers (`# noqa: X` alone is no reason)."""
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            if not text.lower().startswith(_MARKERS):
                found[tok.start[0]] = text
    return found


def module_imports(package: Path, module: str, path: Path) -> list[Import]:
    """Every import statement of one module, relative imports resolved against the package."""
    stat = path.stat()
    return list(_module_imports(package, module, path, stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=4096)
def _module_imports(package: Path, module: str, path: Path, _mtime: int,
                    _size: int) -> tuple[Import, ...]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    comments = _comments(source)
    rel_parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    found: list[Import] = []

    def reason(node: ast.stmt) -> str:
        end = node.end_lineno or node.lineno
        own = [comments[n] for n in range(node.lineno, end + 1) if n in comments]
        above = node.lineno - 1
        if above >= 1 and lines[above - 1].strip().startswith("#") and above in comments:
            own.insert(0, comments[above])
        elif not own and found and found[-1].end == above:
            return found[-1].reason  # a block of imports under one comment shares it
        return " ".join(own)

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.Import):
                names = tuple(a.name for a in node.names)
            else:
                if node.level:
                    base_parts = rel_parts[:-node.level]
                    base = ".".join([*base_parts, node.module] if node.module else base_parts)
                else:
                    base = node.module or ""
                names = (base, *(f"{base}.{a.name}" for a in node.names if a.name != "*"))
            found.append(Import(module, path, node.lineno, names, isinstance(node, ast.ImportFrom),
                                in_function, type_checking, reason(node),
                                node.end_lineno or node.lineno))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, in_function, True)
            for child in node.orelse:
                visit(child, in_function, type_checking)
            return
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner, type_checking)

    visit(ast.parse(source, filename=str(path)), False, False)
    return tuple(found)


def package_imports(package: Path, exclude: Iterable[str] = ()) -> list[Import]:
    """Every import statement of every module of the package."""
    return [imp for module, path in package_modules(package, exclude).items()
            for imp in module_imports(package, module, path)]


def module_graph(package: Path, *, in_functions: bool = False,
                 type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports. Module-level imports only unless
    `in_functions`; imports under `if TYPE_CHECKING:` only if `type_checking`. `from a import b`
    is an edge to `a` (its __init__ runs) and to `a.b` when that is a module."""
    mods = package_modules(package, NOT_MODULES)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for imp in package_imports(package, NOT_MODULES):
        if (imp.in_function and not in_functions) or (imp.type_checking and not type_checking):
            continue
        graph[imp.module] |= {t for n in imp.names if (t := resolve(n)) and t != imp.module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return sorted(cycles)


def function_imports(package: Path) -> list[Import]:
    """Imports inside function bodies (the ones that run), migrations included."""
    return [imp for imp in package_imports(package) if imp.in_function and not imp.type_checking]


def layer_imports(package: Path, layers: Iterable[str], targets: Iterable[str], *,
                  type_checking: bool = True) -> set[tuple[str, str]]:
    """(file relative to the package's parent, imported module) for each import of a `targets`
    module (or a submodule of one) by a module under one of the `layers` sub-packages. Imports
    in function bodies count; those under `if TYPE_CHECKING:` only if `type_checking`."""
    wanted = tuple(targets)
    inside = set(layers)
    found = set()
    for imp in package_imports(package):
        if imp.type_checking and not type_checking:
            continue
        layer = imp.module.split(".")[1] if "." in imp.module else ""
        if layer not in inside:
            continue
        file = imp.path.relative_to(package.parent).as_posix()
        hits = [n for n in imp.names if any(n == t or n.startswith(t + ".") for t in wanted)]
        if imp.is_from and imp.names[0] in hits:
            hits = [imp.names[0]]  # `from fastapi import Response`: the module is fastapi
        found |= {(file, n) for n in hits}
    return found
