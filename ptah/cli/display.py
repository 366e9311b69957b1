"""How the CLI prints what came from a file or a database: controls made visible, rich markup
escaped.

Every case id, query, key, path, generation, table or column name and every
message that may quote one passes through :func:`plain` or :func:`markup`
(from :mod:`ptah.render.text`, shared with the report's renderers) on its way
to a terminal (see :mod:`ptah.core.visible` for what is escaped and how).
``--json`` output goes through :func:`json_text`; files ptah writes (reports,
runs, pages) hold the exact values and are not touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from ptah.core.errors import PtahError
from ptah.core.visible import visible, visible_json
from ptah.render.text import markup, plain

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
    :func:`ptah.services.inputs.run_inputs`)."""
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
    from ptah.render.formats import FORMATS

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
    from ptah.core.visible import abbreviated
    from ptah.render.formats import FORMATS

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
