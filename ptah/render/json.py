"""The report as its ``ptah-report@1`` JSON document: the file ``--output`` writes, and what ``--json`` prints.

:func:`report_json` is the file: indented by two, non-ASCII characters kept,
a trailing newline, and never a ``NaN`` or ``Infinity`` (which JSON lacks);
:func:`report_chunks` is the same text in pieces, a case at a time, so that
``--output`` writes a report of 50,000 cases (about 90 MB) without holding it,
or a dict of every case, in memory.
:func:`terminal_json` is the same text for a terminal: DEL, C1, bidi and
line separator characters written as ``\\uXXXX`` escapes
(:func:`ptah.core.visible.visible_json`), which JSON reads back as the same
strings.
"""

from __future__ import annotations

import json
import secrets
from json.encoder import encode_basestring
from typing import Iterator

from ptah.core.report import Report
from ptah.core.visible import visible_json

_INFINITY = float("inf")
_DEEPEST = 100  # levels; deeper (or circular) values are left to json, which refuses a circle


class _Unusual(Exception):
    """A value :func:`indented` leaves to json: NaN or an infinity, a subclass, a key that is not a string …"""


def report_json(report: Report) -> str:
    """The JSON document of ``report`` (``report.to_dict()``), as ``--output`` writes it."""
    return "".join(report_chunks(report))


def report_chunks(report: Report) -> Iterator[str]:
    """:func:`report_json`'s text in pieces: exactly ``json.dumps(report.to_dict(), indent=2, ensure_ascii=False,
    allow_nan=False) + "\\n"``, with each run's cases encoded one at a time.

    The document without its cases is encoded with a mark (a random token) in
    place of each run's ``cases``; the mark's line gives the member's indent,
    and each case's own two-space-indented text, every line moved right by the
    list's item indent, is what the whole document's encoding holds there (JSON
    strings never hold a raw line break: json escapes it).
    """
    mark = f"ptah-cases-{secrets.token_hex(16)}"
    shell = report.to_dict(cases=False)
    for index, run in enumerate(shell["runs"]):
        run["cases"] = f"{mark}-{index}"
    text = indented(shell) + "\n"
    position = 0
    for index, run in enumerate(report.runs):
        placeholder = f'"{mark}-{index}"'
        at = text.index(placeholder, position)
        yield text[position:at]
        position = at + len(placeholder)
        if not run.cases:
            yield "[]"
            continue
        line = text[text.rindex("\n", 0, at) + 1:at]
        indent = " " * (len(line) - len(line.lstrip(" ")))
        item = "\n" + indent + "  "
        for number, case in enumerate(run.cases):
            yield ("[" if number == 0 else ",") + item + indented(case.to_dict(), item)
        yield "\n" + indent + "]"
    yield text[position:]


def indented(value: object, newline: str = "\n") -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``, each line after the first starting
    with ``newline`` (a line break and the indent the value sits at), three times as fast.

    json indents in pure Python, a generator per container: 0.065 s of a 300-case report's 0.08 s. This is one
    function per container over the same rules -- strings by json's own encoder, floats by ``float.__repr__``
    -- and hands json every value those rules do not settle, so that its refusals (NaN, a key or a type JSON
    lacks, a circle) stay json's."""
    try:
        scalar = _SCALARS.get(type(value))
        return scalar(value) if scalar is not None else _container(value, newline, 0)
    except _Unusual:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
        return text.replace("\n", newline)  # JSON strings hold no raw line break: every one is indentation


def _float(value: float) -> str:
    if value != value or value in (_INFINITY, -_INFINITY):
        raise _Unusual
    return float.__repr__(value)


_SCALARS = {str: encode_basestring, float: _float, int: int.__repr__, bool: lambda value: "true" if value else "false",
            type(None): lambda value: "null"}


def _container(value: object, newline: str, depth: int) -> str:
    if depth > _DEEPEST:
        raise _Unusual
    inner, kind, scalars = newline + "  ", type(value), _SCALARS
    parts = []
    if kind is dict:
        if not value:
            return "{}"
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            scalar = scalars.get(type(item))
            parts.append(f"{encode_basestring(key)}: "
                         f"{scalar(item) if scalar is not None else _container(item, inner, depth + 1)}")
        return "{" + inner + ("," + inner).join(parts) + newline + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        for item in value:
            scalar = scalars.get(type(item))
            parts.append(scalar(item) if scalar is not None else _container(item, inner, depth + 1))
        return "[" + inner + ("," + inner).join(parts) + newline + "]"
    raise _Unusual


def terminal_json(report: Report) -> str:
    """:func:`report_json` with the characters a terminal would act on escaped, for ``--json`` on stdout."""
    return visible_json(report_json(report))
