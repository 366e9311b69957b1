"""The ``ptah`` command line: a thin typer app with one error boundary.

Command modules import services lazily inside their functions, so that
``ptah --help`` and ``ptah corpus ...`` never import torch.
"""

from __future__ import annotations

import os
import sys

import typer

from ptah.cli import corpus as corpus_commands
from ptah.cli import evaluate as evaluate_command
from ptah.cli import imports
from ptah.cli import judge as judge_commands  # noqa: F401  (adds corpus holes, judge, add and pin)
from ptah.cli import inference as inference_commands
from ptah.cli import rebaseline as rebaseline_command
from ptah.cli import report as report_commands
from ptah.cli import serve as serve_commands
from ptah.cli.display import error_text
from ptah.cli.help import plain_metavars
from ptah.cli.streams import ReaderGone, guarded_streams, leave_quietly
from ptah.core.errors import EXIT_OPERATIONAL, PtahError
from ptah.core.visible import visible

app = typer.Typer(
    name="ptah",
    help="Keep text-embedding generations of a table and measure, honestly, whether they work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(corpus_commands.app, name="corpus")
inference_commands.app.command("evaluate")(evaluate_command.evaluate)
app.add_typer(inference_commands.app, name="inference")
app.add_typer(imports.app, name="import")
app.add_typer(report_commands.app, name="report")
report_commands.app.command("rebaseline")(rebaseline_command.rebaseline)
app.command("serve")(serve_commands.serve)
app.add_typer(serve_commands.token_app, name="token")


def _version(asked: bool) -> None:
    if asked:
        from ptah import __version__

        typer.echo(f"ptah {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print ptah's version and exit."),
) -> None:
    """ptah: corpora, generations and their evaluation."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and turn every failure into a message and an exit code.

    Usage errors are click's (exit 2); ptah's typed errors carry their exit
    code; anything else is a bug, reported in one line (set ``PTAH_DEBUG=1``
    for the traceback) with exit 3. A closed pipe is exit 141
    (:mod:`ptah.cli.streams`). Messages quote input, so their controls are
    made visible (:mod:`ptah.cli.display`).
    """
    try:
        with guarded_streams():
            plain_metavars(typer.main.get_command(app))(args=argv, prog_name="ptah", standalone_mode=True)
    except ReaderGone:
        leave_quietly()
    except PtahError as exc:
        _fail(error_text(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # the boundary: no traceback reaches a user
        if os.environ.get("PTAH_DEBUG"):
            raise
        _fail(visible(f"ptah: internal error: {type(exc).__name__}: {exc} (set PTAH_DEBUG=1 to see where)"), EXIT_OPERATIONAL)


def _fail(message: str, code: int) -> None:
    try:
        print(message, file=sys.stderr)
    except BrokenPipeError:  # stderr's reader left too: the code is all that can still be said
        pass
    sys.exit(code)
