"""The report as its ``ptah-report@1`` JSON document: the file ``--output`` writes, and what
``--json`` prints.

:func:`report_json` is the file: non-ASCII characters kept, a trailing
newline, and never a ``NaN`` or ``Infinity`` (which JSON lacks). The document
is indented by two, except that each case is one line of its own; a case is
encoded by json's C encoder, one at a time (:func:`report_chunks`), so that
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
from collections.abc import Iterator

from ptah.core.report import Report
from ptah.core.visible import visible_json


def report_json(report: Report) -> str:
    """The JSON document of ``report`` (``report.to_dict()``), as ``--output`` writes it."""
    return "".join(report_chunks(report))


def report_chunks(report: Report) -> Iterator[str]:
    """:func:`report_json`'s text in pieces: the document without its cases indented by two, and in
    each run's ``cases`` one case a line, each encoded by itself.

    The document without its cases is encoded with a mark (a random token) in
    place of each run's ``cases``; the mark's line gives the member's indent.
    """
    mark = f"ptah-cases-{secrets.token_hex(16)}"
    shell = report.to_dict(cases=False)
    for index, run in enumerate(shell["runs"]):
        run["cases"] = f"{mark}-{index}"
    text = json.dumps(shell, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    position = 0
    for index, run in enumerate(report.runs):
        placeholder = f'"{mark}-{index}"'
        at = text.index(placeholder, position)
        yield text[position:at]
        position = at + len(placeholder)
        if not run.cases:
            yield "[]"
            continue
        line = text[text.rindex("\n", 0, at) + 1 : at]
        indent = "\n" + " " * (len(line) - len(line.lstrip(" ")))
        for number, case in enumerate(run.cases):
            yield (
                ("[" if number == 0 else ",")
                + indent
                + "  "
                + json.dumps(case.to_dict(), ensure_ascii=False, allow_nan=False)
            )
        yield indent + "]"
    yield text[position:]


def terminal_json(report: Report) -> str:
    """:func:`report_json` with the characters a terminal would act on escaped, for ``--json`` on
    stdout."""
    return visible_json(report_json(report))


def pieces(report: Report, corpus=None) -> Iterator[str]:
    """The ``json`` format (:mod:`ptah.render.formats`): :func:`report_chunks`."""
    return report_chunks(report)
