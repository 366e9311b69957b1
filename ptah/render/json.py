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
from typing import Iterator

from ptah.core.report import Report
from ptah.core.visible import visible_json


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
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False)
    mark = f"ptah-cases-{secrets.token_hex(16)}"
    shell = report.to_dict(cases=False)
    for index, run in enumerate(shell["runs"]):
        run["cases"] = f"{mark}-{index}"
    text = encoder.encode(shell) + "\n"
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
            yield ("[" if number == 0 else ",") + item + encoder.encode(case.to_dict()).replace("\n", item)
        yield "\n" + indent + "]"
    yield text[position:]


def terminal_json(report: Report) -> str:
    """:func:`report_json` with the characters a terminal would act on escaped, for ``--json`` on stdout."""
    return visible_json(report_json(report))
