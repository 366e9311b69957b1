"""The report as its ``ptah-report@1`` JSON document: the file ``--output`` writes, and what ``--json`` prints.

:func:`report_json` is the file: indented by two, non-ASCII characters kept,
a trailing newline, and never a ``NaN`` or ``Infinity`` (which JSON lacks).
:func:`terminal_json` is the same text for a terminal: DEL, C1, bidi and
line separator characters written as ``\\uXXXX`` escapes
(:func:`ptah.core.visible.visible_json`), which JSON reads back as the same
strings.
"""

from __future__ import annotations

import json

from ptah.core.report import Report
from ptah.core.visible import visible_json


def report_json(report: Report) -> str:
    """The JSON document of ``report`` (``report.to_dict()``), as ``--output`` writes it."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def terminal_json(report: Report) -> str:
    """:func:`report_json` with the characters a terminal would act on escaped, for ``--json`` on stdout."""
    return visible_json(report_json(report))
