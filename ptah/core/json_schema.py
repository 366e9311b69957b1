"""A JSON Schema validator for the subset of draft 2020-12 that ptah's own schemas use.

Why not ``jsonschema``: a baseline report can hold 50,000 cases of 100
results each, and ``jsonschema`` takes minutes over one; this subset is
compiled once into plain functions and checks such a report in seconds.

Supported keywords: ``type``, ``properties``, ``required``,
``additionalProperties`` (``false`` or a schema), ``items``, ``minItems``,
``const``, ``enum``, ``pattern``, ``minimum``, ``maximum``, ``oneOf`` and
``$ref`` to ``#/$defs/NAME``; ``$schema``, ``$id``, ``$defs``, ``title`` and
``description`` are annotations. A schema using any other keyword is refused
when compiled (``ValueError``), so the schema cannot outgrow the validator
silently. Semantics are the standard's: ``integer`` is any number with no
fractional part, a boolean is never a number, ``pattern`` searches (it is not
anchored), and a keyword applies only to the types it constrains.

:func:`compile_schema` returns a function that raises :class:`SchemaViolation`
at the first problem it meets (keywords in the schema's order, arrays in
order), with the JSON path of the value (see
:func:`json_path`) and a sentence that never echoes a long value.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Iterable

Check = Callable[[Any], None]

ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})
KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "minItems", "const", "enum",
                      "pattern", "minimum", "maximum", "oneOf", "$ref"}) | ANNOTATIONS
TYPE_NAMES = {"object": "an object", "array": "an array", "string": "a text", "boolean": "a boolean",
              "integer": "an integer", "number": "a number", "null": "null"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


class SchemaViolation(Exception):
    """A value that does not match the schema: ``parts`` lead to it from the top; ``what`` is wrong with it."""

    def __init__(self, what: str, parts: list | None = None):
        super().__init__(what)
        self.what = what
        self.parts = parts if parts is not None else []  # innermost first while unwinding; see field

    @property
    def field(self) -> str:
        return json_path(reversed(self.parts))


def json_path(parts: Iterable[object]) -> str:
    """``runs[0].aggregates.recall.value`` for the parts ``runs, 0, aggregates, recall, value``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.fullmatch(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(str(part)[:64])}]"  # escapes control characters; a long key is cut
    return text or "the top level"


def json_type(value: object) -> str:
    """The JSON type of a parsed value: ``integer`` for a number with no fractional part."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if math.isfinite(value) and value.is_integer() else "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def _is(value: object, wanted: str) -> bool:
    found = json_type(value)
    return found == wanted or (wanted == "number" and found == "integer")


def _same(a: object, b: object) -> bool:
    """JSON equality: a boolean equals only a boolean (in Python, True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def compile_schema(schema: dict) -> Check:
    """A function that raises :class:`SchemaViolation` when its argument does not match ``schema``."""
    definitions = schema.get("$defs", {})
    compiled: dict[str, Check] = {}

    def reference(target: str) -> Check:
        name = target.removeprefix("#/$defs/")
        if target == name or name not in definitions:
            raise ValueError(f"unsupported $ref {target!r}: only #/$defs/NAME")

        def check(value: object) -> None:
            if name not in compiled:
                compiled[name] = build(definitions[name])
            compiled[name](value)

        return check

    def build(node: dict) -> Check:
        unknown = set(node) - KEYWORDS
        if unknown:
            raise ValueError(f"schema keywords {sorted(unknown)} are not supported by ptah.core.json_schema")
        checks = [make(keyword, node[keyword], node) for keyword in node if keyword not in ANNOTATIONS]
        checks = [c for c in checks if c is not None]
        if len(checks) == 1:
            return checks[0]

        def check(value: object) -> None:
            for one in checks:
                one(value)

        return check

    def make(keyword: str, expected: Any, node: dict) -> Check | None:
        if keyword == "$ref":
            return reference(expected)
        if keyword == "type":
            return _type_check([expected] if isinstance(expected, str) else list(expected))
        if keyword == "properties":
            children = {name: build(child) for name, child in expected.items()}
            return _properties_check(children)
        if keyword == "additionalProperties":
            known = set(node.get("properties", {}))
            return _additional_check(known, None if expected is False else build(expected))
        if keyword == "items":
            return _items_check(build(expected))
        if keyword == "oneOf":
            return _one_of_check([(branch, build(branch)) for branch in expected])
        return _simple_check(keyword, expected)

    return build(schema)


_PYTHON_TYPES = {"object": {dict}, "array": {list}, "string": {str}, "boolean": {bool}, "null": {type(None)},
                 "number": {int, float}, "integer": {int}}


def _type_check(wanted: list[str]) -> Check:
    if not set(wanted) <= set(_PYTHON_TYPES):
        raise ValueError(f"unknown JSON type in {wanted}")
    exact = set().union(*(_PYTHON_TYPES[name] for name in wanted))  # fast path; bool is its own type
    integral_floats = "integer" in wanted and "number" not in wanted

    def check(value: object) -> None:
        if type(value) in exact:
            return
        if not (integral_floats and _is(value, "integer")):
            names = " or ".join(TYPE_NAMES.get(name, name) for name in wanted)
            raise SchemaViolation(f"is {TYPE_NAMES.get(json_type(value), 'a value')}, not {names}")

    return check


def _within(part: str | int, child: Check, value: object) -> None:
    """``child(value)``, a violation found there located under ``part``."""
    try:
        child(value)
    except SchemaViolation as violation:
        violation.parts.append(part)
        raise


def _properties_check(children: dict[str, Check]) -> Check:
    def check(value: object) -> None:
        if isinstance(value, dict):
            for name, child in children.items():
                if name in value:
                    _within(name, child, value[name])

    return check


def _additional_check(known: set[str], child: Check | None) -> Check:
    def check(value: object) -> None:
        if isinstance(value, dict):
            for name in value:
                if name in known:
                    continue
                if child is None:
                    raise SchemaViolation("is not a known field", [name])
                _within(name, child, value[name])

    return check


def _items_check(child: Check) -> Check:
    def check(value: object) -> None:
        if isinstance(value, list):
            for index, item in enumerate(value):
                _within(index, child, item)

    return check


def _one_of_check(branches: list[tuple[dict, Check]]) -> Check:
    def check(value: object) -> None:
        failures: list[tuple[dict, SchemaViolation]] = []
        for branch, branch_check in branches:
            try:
                branch_check(value)
            except SchemaViolation as violation:
                failures.append((branch, violation))
        if len(failures) == len(branches) - 1:
            return
        if len(failures) < len(branches) - 1:
            raise SchemaViolation("matches more than one of the forms it may take")
        # none matched: the branch meant for this type of value says why; else name the types allowed
        for branch, violation in failures:
            if any(_is(value, name) for name in _types_of(branch)):
                raise violation
        names = " or ".join(TYPE_NAMES.get(name, name) for branch, _ in failures for name in _types_of(branch))
        raise SchemaViolation(f"is {TYPE_NAMES.get(json_type(value), 'a value')}, not {names or 'any form allowed'}")

    return check


def _types_of(branch: dict) -> list[str]:
    types = branch.get("type", [])
    return [types] if isinstance(types, str) else list(types)


def _simple_check(keyword: str, expected: Any) -> Check:
    if keyword == "required":
        def check(value: object) -> None:
            if isinstance(value, dict):
                for name in expected:
                    if name not in value:
                        raise SchemaViolation("is missing", [name])
    elif keyword == "const":
        def check(value: object) -> None:
            if not _same(value, expected):
                raise SchemaViolation(f"is not {json.dumps(expected)}")
    elif keyword == "enum":
        def check(value: object) -> None:
            if not any(_same(value, option) for option in expected):
                raise SchemaViolation(f"is not one of {', '.join(json.dumps(option) for option in expected)}")
    elif keyword == "pattern":
        pattern = re.compile(expected)

        def check(value: object) -> None:
            if isinstance(value, str) and not pattern.search(value):
                raise SchemaViolation(f"is not well-formed (it must match {expected})")
    elif keyword in ("minimum", "maximum"):
        def check(value: object) -> None:
            if _is(value, "number") and (value < expected if keyword == "minimum" else value > expected):
                raise SchemaViolation(f"is {value!r}, {'below the minimum' if keyword == 'minimum' else 'above the maximum'} {expected!r}")
    elif keyword == "minItems":
        def check(value: object) -> None:
            if isinstance(value, list) and len(value) < expected:
                raise SchemaViolation(f"has fewer than {expected} items")
    else:
        raise ValueError(f"schema keyword {keyword!r} is not supported by ptah.core.json_schema")
    return check
