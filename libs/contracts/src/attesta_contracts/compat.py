"""Breaking-change detection between two JSON Schemas of one topic, as a consumer sees it.

``breaking_changes(old, new)`` lists what would break a consumer built against ``old`` (or a
consumer replaying messages written under ``old``) once producers move to ``new``:

* a property removed (or renamed: removed under one name, added under another);
* a property newly required;
* a type narrowed: a union (``anyOf``/``oneOf``/type list) losing a member, ``number`` ->
  ``integer``, an enum/const losing values, a new enum/const/type where there was none;
* a tighter constraint: ``maxLength``/``maxItems``/``maxProperties``/``maximum`` lowered or added,
  ``minLength``/``minItems``/``minProperties``/``minimum`` raised or added, ``pattern``/``format``/
  ``multipleOf`` added or changed, ``additionalProperties`` closed or narrowed;

recursing through ``$ref``/``$defs``, nested objects, unions, array items and
``additionalProperties``. Additive optional properties and widenings are not reported.
Annotations (title, description, default, examples) are ignored.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

_UNION_KEYS = ("anyOf", "oneOf")
# Lower bounds: raising (or adding) one narrows. Upper bounds: lowering (or adding) one narrows.
_LOWER_BOUNDS = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")
_UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
_EXACT = ("pattern", "format", "multipleOf")
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly",
                "writeOnly", "$comment", "discriminator"}


def breaking_changes(old_schema: Schema, new_schema: Schema) -> list[str]:
    """Human-readable breaking changes from ``old_schema`` to ``new_schema`` (empty: compatible)."""
    return _Comparer(old_schema, new_schema).compare(old_schema, new_schema, "$", frozenset())


def is_compatible(old_schema: Schema, new_schema: Schema) -> bool:
    return not breaking_changes(old_schema, new_schema)


class _Comparer:
    def __init__(self, old_root: Schema, new_root: Schema) -> None:
        self.old_root = old_root
        self.new_root = new_root

    # -- $ref resolution ---------------------------------------------------------------------

    @staticmethod
    def _resolve(node: Any, root: Schema, seen: tuple[str, ...] = ()) -> tuple[Schema, str | None]:
        """Follow local ``$ref``s; sibling keywords next to a ``$ref`` are merged over the target.
        Returns the resolved node and the last ref followed (for cycle detection)."""
        if not isinstance(node, dict):
            return ({} if node is True else {"not": {}}), None
        ref_name = None
        while "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise ValueError(f"only local $refs are supported, got {ref!r}")
            if ref in seen:
                break
            seen = (*seen, ref)
            target: Any = root
            for part in ref[1:].split("/"):
                if part:
                    target = target[part.replace("~1", "/").replace("~0", "~")]
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings}
            ref_name = ref
        # pydantic (older versions) wraps a ref with a default as ``allOf: [ {$ref} ]``.
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            inner, inner_ref = _Comparer._resolve(all_of[0], root, seen)
            node = {**inner, **{k: v for k, v in node.items() if k != "allOf"}}
            ref_name = inner_ref or ref_name
        return node, ref_name

    # -- union handling ----------------------------------------------------------------------

    def _alternatives(self, node: Schema, root: Schema, seen: tuple[str, ...]) -> list[Schema]:
        """Flatten a node into the alternatives it accepts (anyOf/oneOf members, type lists)."""
        for key in _UNION_KEYS:
            members = node.get(key)
            if isinstance(members, list):
                rest = {k: v for k, v in node.items() if k != key}
                out: list[Schema] = []
                for member in members:
                    resolved, _ = self._resolve(member, root, seen)
                    merged = {**rest, **resolved} if rest else resolved
                    out.extend(self._alternatives(merged, root, seen))
                return out
        types = node.get("type")
        if isinstance(types, list) and len(types) > 1:
            return [{**node, "type": t} for t in types]
        return [node]

    # -- comparison --------------------------------------------------------------------------

    def compare(self, old: Any, new: Any, path: str, stack: frozenset[tuple[str, str]]) -> list[str]:
        old_node, old_ref = self._resolve(old, self.old_root)
        new_node, new_ref = self._resolve(new, self.new_root)
        if old_ref is not None or new_ref is not None:
            key = (old_ref or "", new_ref or "")
            if key in stack:  # recursive schema: this pair is already being compared
                return []
            stack = stack | {key}

        old_alts = self._alternatives(old_node, self.old_root, ())
        new_alts = self._alternatives(new_node, self.new_root, ())
        if len(old_alts) == 1 and len(new_alts) == 1:
            return self._compare_single(old_alts[0], new_alts[0], path, stack)

        problems: list[str] = []
        for old_alt in old_alts:
            results = [self._compare_single(old_alt, n, path, stack) for n in new_alts]
            if any(not r for r in results):
                continue  # some new member accepts everything this old member did
            same_kind = [r for n, r in zip(new_alts, results, strict=True)
                         if _types(old_alt) and _types(old_alt) <= _widen(_types(n))]
            if len(same_kind) == 1:
                problems.extend(same_kind[0])
            else:
                problems.append(f"{path}: union lost member {_describe(old_alt)}")
        return problems

    def _compare_single(self, old: Schema, new: Schema, path: str,
                        stack: frozenset[tuple[str, str]]) -> list[str]:
        problems: list[str] = []
        if "not" in old and old["not"] == {}:
            return []  # old accepted nothing: nothing can be narrowed
        old_keys = {k for k in old if k not in _ANNOTATIONS}
        if not old_keys and any(k not in _ANNOTATIONS for k in new):
            # "any" became constrained. Describe the narrowing, then keep checking details.
            problems.append(f"{path}: narrowed from any value to {_describe(new)}")
            return problems

        # type
        old_types, new_types = _types(old), _types(new)
        if new_types and not old_types:
            problems.append(f"{path}: type constrained to {_fmt_types(new_types)}")
        elif old_types and new_types:
            lost = {t for t in old_types if t not in _widen(new_types)}
            if lost:
                problems.append(
                    f"{path}: type narrowed from {_fmt_types(old_types)} to {_fmt_types(new_types)}"
                )

        # enum / const
        old_enum, new_enum = _enum(old), _enum(new)
        if new_enum is not None:
            if old_enum is None:
                problems.append(f"{path}: values restricted to enum {_fmt_values(new_enum)}")
            else:
                lost_values = [v for v in old_enum if not _contains(new_enum, v)]
                if lost_values:
                    problems.append(f"{path}: enum lost values {_fmt_values(lost_values)}")

        # numeric and length bounds
        for key in _LOWER_BOUNDS:
            if key in new and (key not in old or _gt(new[key], old[key])):
                was = f"{old[key]!r}" if key in old else "none"
                problems.append(f"{path}: {key} raised from {was} to {new[key]!r}")
        for key in _UPPER_BOUNDS:
            if key in new and (key not in old or _gt(old[key], new[key])):
                was = f"{old[key]!r}" if key in old else "none"
                problems.append(f"{path}: {key} lowered from {was} to {new[key]!r}")
        for key in _EXACT:
            if key in new and old.get(key) != new[key]:
                if key in old:
                    problems.append(f"{path}: {key} changed from {old[key]!r} to {new[key]!r}")
                else:
                    problems.append(f"{path}: {key} {new[key]!r} added")
        if new.get("uniqueItems") is True and old.get("uniqueItems") is not True:
            problems.append(f"{path}: uniqueItems added")

        # objects
        if "properties" in old or "properties" in new or "required" in new:
            problems.extend(self._compare_object(old, new, path, stack))
        problems.extend(self._compare_additional(old, new, path, stack))

        # arrays
        if "items" in old or "items" in new:
            if isinstance(new.get("items"), (dict, bool)):
                problems.extend(self.compare(old.get("items", {}), new["items"], f"{path}[]", stack))
        old_prefix, new_prefix = old.get("prefixItems") or [], new.get("prefixItems") or []
        for i, new_item in enumerate(new_prefix):
            old_item = old_prefix[i] if i < len(old_prefix) else old.get("items", {})
            problems.extend(self.compare(old_item, new_item, f"{path}[{i}]", stack))
        return problems

    def _compare_object(self, old: Schema, new: Schema, path: str,
                        stack: frozenset[tuple[str, str]]) -> list[str]:
        problems: list[str] = []
        old_props: dict[str, Any] = old.get("properties") or {}
        new_props: dict[str, Any] = new.get("properties") or {}
        old_required = set(old.get("required") or [])
        new_required = set(new.get("required") or [])

        removed = [name for name in old_props if name not in new_props]
        added = [name for name in new_props if name not in old_props]
        for name in removed:
            candidates = [a for a in added
                          if not self.compare(old_props[name], new_props[a], f"{path}.{a}", stack)]
            hint = f" (renamed to {', '.join(repr(c) for c in candidates)}?)" if candidates else ""
            problems.append(f"{_join(path, name)}: property removed{hint}")
        for name in sorted(new_required - old_required):
            if name in old_props or name in new_props:
                what = "property newly required" if name in old_props else "new required property"
                problems.append(f"{_join(path, name)}: {what}")
            else:
                problems.append(f"{_join(path, name)}: newly required")
        for name, old_prop in old_props.items():
            if name in new_props:
                problems.extend(self.compare(old_prop, new_props[name], _join(path, name), stack))
        return problems

    def _compare_additional(self, old: Schema, new: Schema, path: str,
                            stack: frozenset[tuple[str, str]]) -> list[str]:
        if "additionalProperties" not in new:
            return []
        new_ap = new["additionalProperties"]
        old_ap = old.get("additionalProperties", True)
        if new_ap is False:
            if old_ap is False:
                return []
            return [f"{path}: additionalProperties closed (extra keys now rejected)"]
        if new_ap is True:
            return []
        return self.compare({} if old_ap is True else old_ap, new_ap, f"{path}{{*}}", stack)


# -- helpers ---------------------------------------------------------------------------------


def _types(node: Schema) -> frozenset[str]:
    t = node.get("type")
    if isinstance(t, str):
        return frozenset({t})
    if isinstance(t, list):
        return frozenset(t)
    if "const" in node and "type" not in node:
        return frozenset({_json_type(node["const"])})
    return frozenset()


def _widen(types: frozenset[str]) -> frozenset[str]:
    """Types accepted by a schema of ``types`` (an integer is a number)."""
    return types | {"integer"} if "number" in types else types


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _enum(node: Schema) -> list[Any] | None:
    if "const" in node:
        return [node["const"]]
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    return None


def _contains(values: list[Any], value: Any) -> bool:
    """``value in values`` without treating True/False as 1/0."""
    return any(v == value and isinstance(v, bool) == isinstance(value, bool) for v in values)


def _gt(a: Any, b: Any) -> bool:
    try:
        return bool(a > b)
    except TypeError:
        return bool(a != b)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}"


def _fmt_types(types: frozenset[str]) -> str:
    return "|".join(sorted(types))


def _fmt_values(values: list[Any]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def _describe(node: Schema) -> str:
    enum = _enum(node)
    if enum is not None:
        return f"enum {_fmt_values(enum)}"
    types = _types(node)
    if types:
        return f"type {_fmt_types(types)}"
    return "(unconstrained)" if not any(k not in _ANNOTATIONS for k in node) else "(schema)"
