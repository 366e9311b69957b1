"""Reading a ``ptah-report@1`` JSON file (a baseline) that may have been written by anyone.

:func:`parse_report` turns the text into a document that has the report's
shape, or raises ``ReportError`` (exit 2) saying where it does not:

* JSON that Python would take but a report never holds is refused: a number
  literal longer than :data:`MAX_NUMBER_CHARS` characters (Python refuses
  integers of more than 4,300 digits only after reading them), one that
  overflows to infinity (``1e400``), the non-JSON constants ``NaN`` and
  ``Infinity``, and nesting deeper than Python's recursion limit;
* the document is validated against ``ptah/schemas/report.schema.json`` with
  ``jsonschema-rs`` (``jsonschema`` where that wheel is missing), imported
  only when a baseline is read; the first problem is named by its JSON path,
  such as ``runs[0].generation``, in a sentence of ptah's own.

The report's agreement with itself (means against cases) is checked in core
(``ptah.core.report_checks``). How many bytes are read is the caller's bound.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from importlib import resources
from typing import Any

from ptah.core.baseline import check_report_format
from ptah.core.errors import ReportError

MAX_NUMBER_CHARS = 64
_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")
_SURROGATE_ESCAPE = re.compile(
    r"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})"
)  # a run of backslashes, then uD800..uDFFF


class _Refused(ValueError):
    """A number or constant the parse hooks refuse; turned into a ReportError with the file's
    name."""


class _TooLong(_Refused):
    """A number literal longer than MAX_NUMBER_CHARS; its line is found afterwards."""


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _TooLong(f"holds a number {len(text)} characters long (at most {MAX_NUMBER_CHARS})")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _TooLong(f"holds a number {len(text)} characters long (at most {MAX_NUMBER_CHARS})")
    value = float(text)
    if math.isinf(value):
        raise _Refused(f"holds the number {text}, too large for a float")
    return value


def _no_constant(name: str) -> float:
    raise _Refused(f"holds {name}, which is not JSON and never in a report")


def _line_of_long_number(text: str) -> str:
    """``:LINE`` of the first number literal longer than MAX_NUMBER_CHARS (only after one was
    refused)."""
    for match in _NUMBER.finditer(text):
        if match.end() - match.start() > MAX_NUMBER_CHARS:
            return f":{text.count(chr(10), 0, match.start()) + 1}"
    return ""


def lone_surrogate_escape(text: str) -> re.Match | None:
    """The first ``\\uD800``-``\\uDFFF`` escape that is not half of a pair (JSON joins a high escape
    followed at once by a low one into one character; any other becomes a lone surrogate, which is
    not text)."""
    high: re.Match | None = None
    for match in _SURROGATE_ESCAPE.finditer(text):
        if len(match.group(1)) % 2 == 0:
            continue  # an escaped backslash, then the letters "u", "d"...: no escape
        low = int(match.group(2), 16) >= 0xDC00
        if high is not None:
            if (
                low and high.end() == match.end() - 6
            ):  # the low half right after the high one: a pair
                high = None
                continue
            return high
        if low:
            return match
        high = match
    return high


def parse_report(text: str, path: str) -> dict:
    """The report in ``text`` (the file ``path``), parsed and checked against the report schema
    (module docs)."""
    try:
        document = json.loads(
            text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant
        )
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); pass a report written by --output"
        ) from None
    except _Refused as exc:
        where = _line_of_long_number(text) if isinstance(exc, _TooLong) else ""
        raise ReportError(f"{path}{where}: {exc}; the report is damaged") from None
    except RecursionError:
        raise ReportError(f"{path}: is nested too deeply to be a ptah report") from None
    lone = lone_surrogate_escape(text)
    if lone is not None:
        line = text.count("\n", 0, lone.start()) + 1
        raise ReportError(
            f"{path}:{line}: holds the unpaired surrogate escape \\u{lone.group(2).lower()}, which is not text; "
            "the report is damaged"
        )
    check_report_format(document, path)
    _check_schema(document, path)
    return document


_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a text",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "null": "null",
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
# what each library says about a keyword: jsonschema-rs names it in kind.as_dict() under these keys
_RS_DETAIL = {
    "type": "types",
    "enum": "options",
    "const": "expected_value",
    "pattern": "pattern",
    "minimum": "limit",
    "maximum": "limit",
    "minItems": "limit",
    "required": "property",
    "additionalProperties": "unexpected",
}


def json_path(parts: Iterable[object]) -> str:
    """``runs[0].aggregates.recall.value`` for the parts ``runs, 0, aggregates, recall, value``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.fullmatch(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += (
                f"[{json.dumps(str(part)[:64])}]"  # escapes control characters; a long key is cut
            )
    return text or "the top level"


def _type_name(value: object) -> str:
    """What a parsed value is, in words: a number with no fractional part is an integer (as JSON
    Schema says)."""
    if isinstance(value, float) and value.is_integer():
        return _TYPE_NAMES["integer"]
    kinds = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return _TYPE_NAMES[kinds.get(type(value), "null")]


def _violation(path: list, keyword: str, expected: Any, value: object) -> str:
    """The sentence for one schema violation: ``FIELD what is wrong``, never echoing a long
    value."""
    if keyword in ("required", "additionalProperties"):
        path = [*path, expected]
    if keyword == "type":
        what = f"is {_type_name(value)}, not " + " or ".join(
            _TYPE_NAMES[name] for name in _TYPE_NAMES if name in expected
        )
    elif keyword == "enum":
        what = f"is not one of {', '.join(json.dumps(option) for option in expected)}"
    else:
        what = {
            "required": "is missing",
            "additionalProperties": "is not a known field",
            "const": f"is not {json.dumps(expected)}",
            "pattern": f"is not well-formed (it must match {expected})",
            "minimum": f"is {value!r}, below the minimum {expected!r}",
            "maximum": f"is {value!r}, above the maximum {expected!r}",
            "minItems": f"has fewer than {expected} items",
        }.get(keyword, f"does not match the report schema ({keyword})")
    return f"{json_path(path)} {what}"


@lru_cache(maxsize=1)
def _validator() -> Callable[[object], str | None]:
    """The report schema's first violation in a document, as a sentence (None: it matches): with
    jsonschema-rs where its wheel is installed, else with jsonschema (the same sentences,
    slower)."""
    schema = json.loads(
        resources.files("ptah").joinpath("schemas/report.schema.json").read_text(encoding="utf-8")
    )
    try:
        import jsonschema_rs
    except ImportError:
        return _jsonschema_validator(schema)
    validator = jsonschema_rs.validator_for(schema)

    def first_violation(document: object) -> str | None:
        try:
            validator.validate(document)
        except jsonschema_rs.ValidationError as error:
            keyword = error.kind.name
            expected: Any = error.kind.as_dict().get(_RS_DETAIL.get(keyword, ""))
            if keyword == "additionalProperties":
                expected = expected[0]
            return _violation(list(error.instance_path), keyword, expected, error.instance)
        return None

    return first_violation


def _jsonschema_validator(schema: dict) -> Callable[[object], str | None]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)

    def first_violation(document: object) -> str | None:
        error = next(validator.iter_errors(document), None)
        if error is None:
            return None
        keyword, expected, value = error.validator, error.validator_value, error.instance
        if keyword == "required":
            expected = next(name for name in expected if name not in value)
        elif keyword == "additionalProperties":
            expected = next(
                name for name in value if name not in error.schema.get("properties", {})
            )
        return _violation(list(error.absolute_path), keyword, expected, value)

    return first_violation


def _check_schema(document: dict, path: str) -> None:
    violation = _validator()(document)
    if violation is not None:
        raise ReportError(f"{path}: {violation}; the report is damaged")
