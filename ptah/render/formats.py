"""The formats a report is written in: one registry, filled through the door (hook
``register_formats``), behind ``ptah.Report.save(path, format)``.

Each format is a module of :mod:`ptah.render` with a function
``pieces(report, corpus)`` that gives the file's text in pieces (``corpus``,
the corpus the report measured, or None); it is imported only when its
format is written. The CLI offers every registered format (``--save
FORMAT=PATH``; ``--output``, ``--html``, ``--junit``, ``--markdown`` and
``--trec-run`` are its spellings). A new format is a module and one
``register`` call in a plugin (ptah's own are registered below).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptah.core.plugins import hookimpl
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


FORMATS: Registry[Format] = Registry("output format", hook="register_formats")


@hookimpl
def register_formats(register: Callable) -> None:
    register(
        Format("json", "ptah.render.json", "the JSON report, a baseline for later evaluations")
    )
    register(Format("html", "ptah.render.html", "a self-contained HTML page"))
    register(
        Format(
            "junit",
            "ptah.render.junit",
            "JUnit XML: a test case per corpus case and per gate, for CI",
        )
    )
    register(
        Format("markdown", "ptah.render.markdown", "a Markdown summary (a pull-request comment)")
    )
    register(
        Format("trec", "ptah.render.trec", "the reference run's ranked results as a TREC run file")
    )
