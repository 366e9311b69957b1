"""The formats a report is written in: one registry, filled here, behind ``ptah.Report.save(path,
format)``.

Each format is a module of :mod:`ptah.render` with a function
``pieces(report, corpus)`` that gives the file's text in pieces (``corpus``,
the corpus the report measured, or None); it is imported only when its
format is written. The CLI offers every registered format (``--save
FORMAT=PATH``; ``--output``, ``--html``, ``--junit``, ``--markdown`` and
``--trec-run`` are its spellings). A new format is a module and one line
below.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report


@dataclass(frozen=True)
class Format:
    name: str
    module: str  # the module whose pieces(report, corpus) make the text
    help: str

    def pieces(self, report: Report, corpus: Corpus | None = None) -> Iterable[str]:
        return importlib.import_module(self.module).pieces(report, corpus)


FORMATS: Registry[Format] = Registry("output format")
for _format in (
    Format("json", "ptah.render.json", "the JSON report, a baseline for later evaluations"),
    Format("html", "ptah.render.html", "a self-contained HTML page"),
    Format(
        "junit", "ptah.render.junit", "JUnit XML: a test case per corpus case and per gate, for CI"
    ),
    Format("markdown", "ptah.render.markdown", "a Markdown summary (a pull-request comment)"),
    Format("trec", "ptah.render.trec", "the reference run's ranked results as a TREC run file"),
):
    FORMATS.register(_format.name, _format)
