"""The ``ptah`` command line: a thin typer app with one error boundary.

Command modules import services lazily inside their functions, so that
``ptah --help`` and ``ptah corpus ...`` never import torch. The modules
themselves are imported when their commands are used: ``ptah inference
evaluate`` builds the app with the ``inference`` group alone, and anything
else -- ``ptah --help``, a root option, a misspelt command -- the whole app,
``ptah.cli.app``: ptah's own commands and the installed plugins', through the door
(hook ``register_commands``).
"""

from __future__ import annotations

import functools
import os
import sys

import typer

from ptah.cli.commands import ADD_ONS, PARTS, add_parts
from ptah.cli.display import error_text
from ptah.cli.streams import ReaderGone, guarded_streams, leave_quietly
from ptah.core.errors import EXIT_OPERATIONAL, InputError, PtahError
from ptah.core.visible import visible


def _version(asked: bool) -> None:
    if asked:
        from ptah import __version__

        typer.echo(f"ptah {__version__}")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print ptah's version and exit."
    ),
) -> None:
    """ptah: corpora, generations and their evaluation."""


def _app(names) -> typer.Typer:
    """The app with the groups and commands ``names`` (in the order of :data:`_PARTS`)."""
    made = typer.Typer(
        name="ptah",
        help="Keep text-embedding generations of a table and measure, honestly, whether they work.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    made.callback()(_root)
    add_parts(made, names)
    return made


@functools.cache
def _whole() -> typer.Typer:
    """Every command: ptah's own and the installed plugins', through the door."""
    from ptah.core import plugins

    made = _app(())
    plugins.fill("register_commands", installed=False, cli=made)
    plugins.fill("register_commands", installed=True, cli=made)
    return made


def __getattr__(name: str):
    if name == "app":  # the whole app (help tests walk it)
        return _whole()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(argv: list[str] | None) -> typer.Typer:
    """The app for a command line: the one group or command its first word names, else the whole app
    (whose root help, root options, shell completion and "no such command" need every part).
    InputError (exit 2) for a command of an add-on that is not installed, saying how to install
    it."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in PARTS and not os.environ.get("_PTAH_COMPLETE"):
        return _app((args[0],))
    whole = _whole()
    if args and args[0] in ADD_ONS and args[0] not in _names(whole):
        from ptah.core.plugins import not_installed

        raise InputError(not_installed(f"ptah {args[0]}", ADD_ONS[args[0]]))
    return whole


def _names(made: typer.Typer) -> set[str]:
    """The names of the groups and commands of ``made``, as the command line reads them."""
    return set(getattr(typer.main.get_command(made), "commands", {}))


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and turn every failure into a message and an exit code.

    Usage errors are click's (exit 2); ptah's typed errors carry their exit
    code; anything else is a bug, reported in one line (set ``PTAH_DEBUG=1``
    for the traceback) with exit 3. A closed pipe is exit 141
    (:mod:`ptah.cli.streams`). Messages quote input, so their controls are
    made visible (:mod:`ptah.cli.display`).
    """
    from ptah.adapters.embedders import LOADING

    said = LOADING.set(_say)
    try:
        with guarded_streams():
            typer.main.get_command(_app_for(argv))(
                args=argv, prog_name="ptah", standalone_mode=True
            )
    except ReaderGone:
        leave_quietly()
    except PtahError as exc:
        _fail(error_text(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # the boundary: no traceback reaches a user
        if os.environ.get("PTAH_DEBUG"):
            raise
        _fail(
            visible(
                f"ptah: internal error: {type(exc).__name__}: {exc} (set PTAH_DEBUG=1 to see where)"
            ),
            EXIT_OPERATIONAL,
        )
    finally:
        LOADING.reset(said)


def _say(text: str) -> None:
    """A notice on stderr, at once ("loading all-MiniLM-L6-v2 …" before the seconds a model takes to
    load)."""
    print(visible(text), file=sys.stderr, flush=True)


def _fail(message: str, code: int) -> None:
    try:
        print(message, file=sys.stderr)
    except BrokenPipeError:  # stderr's reader left too: the code is all that can still be said
        pass
    sys.exit(code)
