"""``breaking_changes`` on synthetic schema pairs."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from attesta_contracts.compat import breaking_changes

pytestmark = pytest.mark.unit


def obj(properties: dict, required: tuple[str, ...] = (), **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
NULL = {"type": "null"}
BASE = obj({"id": STR, "count": INT, "note": {"anyOf": [STR, NULL], "default": None}}, ("id",))


def test_identical_is_compatible():
    assert breaking_changes(BASE, BASE) == []


def test_removed_field():
    new = obj({"id": STR, "count": INT}, ("id",))
    [problem] = breaking_changes(BASE, new)
    assert "$.note" in problem and "removed" in problem


def test_renamed_field():
    new = obj({"id": STR, "count": INT, "comment": {"anyOf": [STR, NULL], "default": None}}, ("id",))
    [problem] = breaking_changes(BASE, new)
    assert "$.note" in problem and "removed" in problem and "renamed to 'comment'" in problem


def test_new_required_field():
    problems = breaking_changes(BASE, obj({**BASE["properties"], "tenant": STR}, ("id", "tenant")))
    assert problems == ["$.tenant: new required property"]


def test_existing_field_becomes_required():
    problems = breaking_changes(BASE, obj(BASE["properties"], ("id", "count")))
    assert problems == ["$.count: property newly required"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (NUM, INT),  # number -> integer
        (STR, INT),  # type changed
        ({"anyOf": [STR, NULL]}, STR),  # no longer nullable
        ({"anyOf": [STR, INT, NULL]}, {"anyOf": [STR, NULL]}),  # union lost a member
        ({"type": ["string", "integer"]}, STR),  # type list lost a member
        ({}, STR),  # any -> string
    ],
)
def test_narrowed_type(old, new):
    problems = breaking_changes(obj({"x": old}), obj({"x": new}))
    assert problems and all("$.x" in p for p in problems)


def test_enum_narrowed():
    old = obj({"s": {"enum": ["a", "b", "c"], "type": "string"}})
    new = obj({"s": {"enum": ["a", "b"], "type": "string"}})
    assert breaking_changes(old, new) == ["$.s: enum lost values ['c']"]
    assert breaking_changes(new, old) == []  # gaining a value is a widening


def test_enum_or_const_added_is_narrowing():
    assert breaking_changes(obj({"s": STR}), obj({"s": {"type": "string", "enum": ["a"]}}))
    assert breaking_changes(obj({"s": STR}), obj({"s": {"type": "string", "const": "a"}}))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"maxLength": 10}, {"maxLength": 5}),
        ({}, {"maxLength": 5}),
        ({"minLength": 1}, {"minLength": 2}),
        ({}, {"minLength": 1}),
        ({}, {"pattern": "^[a-z]+$"}),
        ({"pattern": "^[a-z]+$"}, {"pattern": "^[a-f]+$"}),
        ({}, {"format": "uri"}),
    ],
)
def test_string_constraint_tightened(old, new):
    problems = breaking_changes(obj({"s": {"type": "string", **old}}), obj({"s": {"type": "string", **new}}))
    assert len(problems) == 1 and problems[0].startswith("$.s:")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"maximum": 100}, {"maximum": 10}),
        ({"minimum": 0}, {"minimum": 1}),
        ({}, {"exclusiveMinimum": 0}),
    ],
)
def test_numeric_bound_tightened(old, new):
    assert breaking_changes(obj({"n": {"type": "number", **old}}), obj({"n": {"type": "number", **new}}))


def test_loosened_constraints_not_flagged():
    old = obj({"s": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^a"},
               "n": {"type": "integer", "minimum": 0, "maximum": 10}})
    new = obj({"s": {"type": "string", "maxLength": 50}, "n": {"type": "integer"}})
    assert breaking_changes(old, new) == []


def test_nested_narrowing_through_refs_and_arrays():
    def doc(score: dict) -> dict:
        return {
            "$defs": {
                "Inner": obj({"score": score}),
                "Outer": obj({"items": {"type": "array", "items": {"$ref": "#/$defs/Inner"}}}),
            },
            **obj({"payload": {"$ref": "#/$defs/Outer"}}, ("payload",)),
        }

    old = doc({"anyOf": [{"type": "number", "maximum": 100}, NULL]})
    new = doc({"anyOf": [{"type": "number", "maximum": 50}, NULL]})
    assert breaking_changes(old, new) == ["$.payload.items[].score: maximum lowered from 100 to 50"]
    assert breaking_changes(new, old) == []


def test_nested_property_removed_in_array_items():
    old = obj({"xs": {"type": "array", "items": obj({"a": STR, "b": STR})}})
    new = obj({"xs": {"type": "array", "items": obj({"a": STR})}})
    [problem] = breaking_changes(old, new)
    assert problem.startswith("$.xs[].b:") and "removed" in problem


def test_map_values_narrowed():
    old = obj({"m": {"type": "object", "additionalProperties": NUM}})
    new = obj({"m": {"type": "object", "additionalProperties": INT}})
    assert breaking_changes(old, new) == ["$.m{*}: type narrowed from number to integer"]


def test_additional_properties_closed():
    assert breaking_changes(obj({"a": STR}), obj({"a": STR}, additionalProperties=False))


def test_added_optional_field_not_flagged():
    new = obj({**BASE["properties"], "extra": {"anyOf": [STR, NULL], "default": None}}, ("id",))
    assert breaking_changes(BASE, new) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (INT, NUM),  # integer -> number
        (STR, {"anyOf": [STR, NULL]}),  # became nullable
        ({"anyOf": [STR, NULL]}, {"anyOf": [STR, INT, NULL]}),  # union gained a member
        (STR, {}),  # string -> any
        ({"type": "string", "enum": ["a"]}, STR),  # enum dropped entirely
    ],
)
def test_widened_type_not_flagged(old, new):
    assert breaking_changes(obj({"x": old}), obj({"x": new})) == []


def test_annotation_only_changes_not_flagged():
    old = obj({"x": {"type": "string", "title": "X", "default": "a"}})
    new = obj({"x": {"type": "string", "title": "Renamed", "description": "doc", "default": "b"}})
    assert breaking_changes(old, new) == []


def test_recursive_schema_terminates():
    node = {"$defs": {"Node": obj({"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                                   "v": INT})},
            "$ref": "#/$defs/Node"}
    narrowed = {"$defs": {"Node": obj({"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                                       "v": {"type": "integer", "minimum": 0}})},
                "$ref": "#/$defs/Node"}
    assert breaking_changes(node, node) == []
    assert breaking_changes(node, narrowed) == ["$.v: minimum raised from none to 0"]


# Pydantic-generated pairs: what an actual model edit would produce.


class V1(BaseModel):
    kind: Literal["a", "b"]
    score: float
    tags: list[str] = Field(default_factory=list)


class V2Additive(BaseModel):
    kind: Literal["a", "b", "c"]
    score: float
    tags: list[str] = Field(default_factory=list)
    note: str | None = None


class V2Narrowed(BaseModel):
    kind: Literal["a"]
    score: int
    tags: list[str] = Field(default_factory=list, max_length=3)


def test_pydantic_models():
    v1 = V1.model_json_schema()
    assert breaking_changes(v1, V2Additive.model_json_schema()) == []
    problems = breaking_changes(v1, V2Narrowed.model_json_schema())
    assert any(p.startswith("$.kind:") for p in problems)
    assert any(p.startswith("$.score:") and "number to integer" in p for p in problems)
    assert any(p.startswith("$.tags:") and "maxItems" in p for p in problems)
