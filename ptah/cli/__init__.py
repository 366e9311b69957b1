"""The ``ptah`` command line: a thin typer app with one error boundary.

Command modules import services inside their functions, so ``ptah --help`` and ``ptah corpus
...`` never import torch, and are imported when their commands are used: ``ptah inference
evaluate`` builds the app with the ``inference`` group alone; anything else (``--help``, a root
option, a misspelt command) the whole app, ``ptah.cli.app``, ptah's own commands and the
installed plugins' through the door (hook ``register_commands``).

A reader that goes away (``ptah … | head -1``) ends ptah with exit 141 (128 + SIGPIPE), as any
Unix filter, never the 1 of a negative verdict (docs/exit-codes.md); files written before are
whole. The standard streams are wrapped so a broken pipe surfaces as :class:`ReaderGone`, which
is not an ``OSError`` and so passes click by; :func:`leave_quietly` points them at ``/dev/null``
so that Python's flush at exit cannot fail again and print a traceback.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import TextIO

import typer

from ptah.core.errors import EXIT_OPERATIONAL, InputError, PtahError
from ptah.core.plugins import hookimpl
from ptah.core.visible import visible

# Each name under ``ptah``, in the order the app adds them: the module holding its group (``app``)
# or command, imported only when a command line needs it. (``ptah.cli.judge`` adds holes, add and
# pin to the corpus group's app, ``ptah.cli.grading``, which imports it, grade, forbid, sample and
# judge-model, and ``ptah.cli.judge_aliases``, which imports both, judge; ``inference`` and
# ``report`` add evaluate and rebaseline themselves.)
PARTS = {
    "corpus": ("ptah.cli.judge_aliases", "app"),
    "inference": ("ptah.cli.inference", "app"),
    "import": ("ptah.cli.imports", "app"),
    "report": ("ptah.cli.report", "app"),
}

# The commands of the add-ons in ptah's repository (packages/), by name: the distribution that
# brings each, told to a user who asks for one that is not installed.
ADD_ONS = {"serve": "ptah-serve", "token": "ptah-serve"}


def add_parts(cli: typer.Typer, names: Iterable[str]) -> None:
    """Add the groups and commands ``names`` to ``cli``, in the order of :data:`PARTS`, each
    module imported only now."""
    names = set(names)
    for name, (module, attribute) in PARTS.items():
        if name in names:
            part = getattr(importlib.import_module(module), attribute)
            flatten_help(part)
            if isinstance(part, typer.Typer):
                cli.add_typer(part, name=name)
            else:
                cli.command(name)(part)


def flatten_help(part: typer.Typer | Callable) -> None:
    """Give each command of ``part`` (a group, recursively, or a command's function) its
    docstring as help with each paragraph's lines joined: the terminal wraps the text to its
    width, where the source wraps it at 100 columns. Indented lines (an example) stay as written.
    """
    if not isinstance(part, typer.Typer):
        part.__doc__ = joined(part.__doc__)
        return
    for info in part.registered_commands:
        if info.help is None and info.callback is not None:
            info.help = joined(info.callback.__doc__)
    for group in part.registered_groups:
        if group.typer_instance is not None:
            flatten_help(group.typer_instance)
    if isinstance(part.info.help, str):
        part.info.help = joined(part.info.help)


def joined(text: str | None) -> str | None:
    """``text`` (a docstring) with the lines of each paragraph joined by a space, but for a
    paragraph with an indented line or click's ``\\b`` (kept as written)."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph
        if paragraph.startswith("\b") or any(line[:1].isspace() for line in paragraph.splitlines())
        else " ".join(line.strip() for line in paragraph.splitlines())
        for paragraph in paragraphs
    )


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    add_parts(cli, PARTS)


EXIT_READER_GONE = 141


class ReaderGone(Exception):
    """The other end of stdout or stderr was closed."""


class _Guarded:
    """A text stream whose broken pipe raises :class:`ReaderGone`; everything else passes
    through."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def guarded_streams() -> Iterator[None]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` for the duration of one command."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Guarded(stdout), _Guarded(stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def leave_quietly() -> None:
    """Exit 141 with stdout and stderr sent to ``/dev/null``: there is nobody left to tell."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (
            OSError,
            ValueError,
            AttributeError,
        ):  # a stream without a descriptor (a test's capture)
            pass
    os.close(devnull)
    sys.exit(EXIT_READER_GONE)


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
    """The app with the groups and commands ``names`` (in the order of :data:`PARTS`)."""
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
    (:class:`ReaderGone`). Messages quote input, so their controls are
    made visible (:mod:`ptah.cli.display`).
    """
    quiet_blas_threads(os.environ)
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
        from ptah.cli.display import error_text

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


def quiet_blas_threads(environ: MutableMapping[str, str]) -> None:
    """Ask OpenBLAS's threads to sleep as soon as a product is done, unless ``environ`` says
    otherwise; set before numpy is imported (docs/design.md, "Exact search"). The API leaves the
    caller's process as it is."""
    environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # OpenBLAS's least: 2^4 cycles


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
