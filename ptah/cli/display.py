"""How the CLI prints: values from a file or a database made visible, reports, what ``evaluate``
tells a CI, and ``--OPTION NAME=X`` options (``--detect nDCG=0.02``, :func:`measure_values`).

Every value that may quote a file or the source passes through
:func:`~ptah.render.layout.plain` or :func:`~ptah.render.layout.markup` on its way to a terminal;
``--json`` output through :func:`json_text`; files ptah writes hold the exact values.
:func:`report_to_ci`:

* ``GITHUB_ACTIONS=true``: an ``::error`` annotation on the corpus line of each failed case
  (:mod:`ptah.render.annotations`), on stderr, the file named relative to ``GITHUB_WORKSPACE``
  when the corpus lies inside it;
* ``GITHUB_STEP_SUMMARY`` set: the Markdown summary is appended to that file
  (:func:`ptah.adapters.files.append_text`: a regular file only, at most 1 MiB in all). When it
  cannot be, a one-line warning on stderr says why and the exit code stays the verdict's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ptah.core.errors import InputError, PtahError
from ptah.core.visible import visible, visible_json
from ptah.render.layout import markup, plain

if TYPE_CHECKING:  # types only: importing the report's module imports numpy, which help never needs
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report

__all__ = [
    "SPEC_HELP",
    "check_outputs",
    "error_text",
    "json_text",
    "markup",
    "plain",
    "show_report",
    "wrote",
]

SPEC_HELP = "The specification file (default: $PTAH_SPEC, else the nearest ptah.yaml in this folder or above)."


def wrote(path: object, *, err: bool = False) -> None:
    """Say where a file went: ``wrote report.html``, the last line of a command's output (``err``:
    on stderr, when stdout holds a ``--json`` document)."""
    import typer

    typer.echo(f"wrote {plain(path)}", err=err)


def json_text(value: object) -> str:
    """The indented JSON of ``value``, with DEL, C1 and bidi characters escaped as ``\\uXXXX``."""
    return visible_json(json.dumps(value, indent=2, ensure_ascii=False))


def error_text(exc: BaseException) -> str:
    """An error for stderr: one line per located problem, each with its controls made visible; its
    advice in the command line's flags and commands (:mod:`ptah.cli.words`)."""
    if isinstance(exc, PtahError) and exc.problems:
        return "\n".join(visible(str(problem)) for problem in exc.problems)
    if isinstance(exc, PtahError):
        from ptah.cli.words import COMMAND_LINE

        return visible(exc.said(COMMAND_LINE), newlines=True)
    return visible(str(exc), newlines=True)


def check_outputs(
    *pairs: tuple[str, str | os.PathLike | None], inputs: Sequence[tuple[str, str]] = ()
) -> None:
    """Refuse (exit 2), before any work, each ``(option, path)`` output ptah would refuse to write,
    two outputs on one file, and an output over one of the run's ``inputs`` (``(what, path)``,
    :func:`ptah.services.evidence.run_inputs`)."""
    from ptah.adapters.files import check_apart, check_output

    given = [(option, value) for option, value in pairs if value is not None]
    for option, value in given:
        check_output(value, option)
    check_apart(given, inputs)


SPELLINGS = {
    "--output": "json",
    "--html": "html",
    "--trec-run": "trec",
    "--junit": "junit",
    "--markdown": "markdown",
}
"""The options that are ``--save FORMAT=PATH`` spelled for one format."""


def save_help() -> str:
    from ptah.core.formats import FORMATS

    return (
        "FORMAT=PATH: also write the report here in FORMAT, one of "
        + ", ".join(FORMATS.names())
        + " (repeatable; --html PATH is --save html=PATH)."
    )


def outputs(
    spelled: dict[str, str | None], saves: list[str] | None, inputs: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """Each ``(format, path)`` to write: the spelled options given, then each ``--save
    FORMAT=PATH``; a path ptah would refuse, an unknown format, two outputs on one file or an output
    over one of the run's ``inputs`` (:func:`check_outputs`) is refused now (exit 2), before any
    work."""
    from ptah.core.errors import InputError
    from ptah.core.formats import FORMATS
    from ptah.core.visible import abbreviated

    chosen = [
        (SPELLINGS[option], path, option) for option, path in spelled.items() if path is not None
    ]
    for text in saves or ():
        name, sep, path = text.partition("=")
        if not (sep and path):
            raise InputError(
                f"--save {abbreviated(text)}: write FORMAT=PATH, e.g. --save html=report.html"
            )
        try:
            FORMATS.get(name)
        except InputError as exc:
            raise InputError(f"--save {abbreviated(text)}: {exc.message}") from None
        chosen.append((name, path, "--save"))
    check_outputs(*((option, path) for _, path, option in chosen), inputs=inputs)
    return [(name, path) for name, path, _ in chosen]


def show_report(report, *, json_output: bool, written: tuple = ()) -> None:
    """Print a report -- its ``--json`` document, or the summary and tables -- then ``wrote FILE``
    for each file written (on stderr beside ``--json``, whose stdout stays one document)."""
    import typer

    if json_output:
        from ptah.render.json import terminal_json

        typer.echo(terminal_json(report), nl=False)
    else:
        from ptah.render.layout import output_console
        from ptah.render.table import render

        render(report, output_console())
    for path in written:
        if path is not None:
            wrote(path, err=json_output)


def workspace_path(path: str, environ: Mapping[str, str]) -> str:
    """``path`` relative to ``GITHUB_WORKSPACE`` when it lies inside it; else as given."""
    workspace = environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return path
    absolute, root = os.path.realpath(path), os.path.realpath(workspace)
    if os.path.commonpath([absolute, root]) != root:
        return path
    return os.path.relpath(absolute, root)


def report_to_ci(report: Report, corpus: Corpus, environ: Mapping[str, str] | None = None) -> None:
    """Annotations and the step summary, as the environment asks (module docs)."""
    environ = os.environ if environ is None else environ
    if environ.get("GITHUB_ACTIONS") == "true" and not report.passed:
        from ptah.render.annotations import failure_annotations

        for line in failure_annotations(
            report, workspace_path(corpus.path or "corpus", environ), corpus.lines()
        ):
            print(line, file=sys.stderr)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from ptah.adapters.files import append_text
        from ptah.render.markdown import render_markdown

        try:
            append_text(
                summary, render_markdown(report) + "\n", label=f"GITHUB_STEP_SUMMARY {summary}"
            )
        except PtahError as exc:
            print(visible(f"ptah: warning: the summary was not appended: {exc}"), file=sys.stderr)


def measure_values(
    option: str,
    given: Iterable[str],
    value: Callable[[str], float],
    again: str,
    found: dict[str, float] | None = None,
    *,
    tagged: bool = False,
) -> dict[str, float]:
    """Each ``OPTION NAME=X`` in ``given`` added to ``found``, keyed by the measure's string form
    (``nDCG``, ``MAP@10``); X is what ``value`` makes of its text (a ``ValueError`` says what is
    wrong). ``tagged``: X may end in a slice's ``@TAG`` (``recall=0.02@billing``), keyed
    ``recall@billing``. ``InputError`` (exit 2) for an unknown measure, a bad X, or a measure named
    twice (``again`` formats that sentence with the measure)."""
    from ptah.core.measures import Measure
    from ptah.core.visible import abbreviated

    result = dict(found or {})
    for text in given:
        name, sep, number = text.partition("=")
        number, at, tag = number.partition("@") if tagged else (number, "", "")
        try:
            measure = str(Measure.parse(name)) + (f"@{tag}" if at else "")
            amount = value(number)
        except ValueError as exc:
            detail = str(exc) if sep and name else f"write NAME=X, e.g. {option} nDCG=0.02"
            raise InputError(f"{option} {abbreviated(text)}: {detail}") from None
        if measure in result:
            raise InputError(f"{option} {abbreviated(text)}: {again.format(measure)}")
        result[measure] = amount
    return result
