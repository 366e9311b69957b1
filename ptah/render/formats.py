"""ptah's own report formats, registered through the door (hook ``register_formats``) in
:data:`ptah.core.formats.FORMATS`, behind ``ptah.Report.save(path, format)``: each a module of
:mod:`ptah.render` with a function ``pieces(report, corpus)``.
"""

from __future__ import annotations

from collections.abc import Callable

from ptah.core.formats import Format
from ptah.core.plugins import hookimpl


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
