"""The terminal session of ``ptah corpus judge``, ``sample`` and ``add``: one row at a time, one key
each.

For each hole: the case's query, the row's key and text, and which runs
returned it at which rank. Keys: ``0`` not relevant, ``1``... the grades the
corpus already uses, in ascending order (``1`` grade 1 when it grades
nothing; :func:`answers`), ``r`` required (grade 1), ``f`` forbidden, ``s`` skip (asked again next
session), ``u`` undo the last answer (its row is shown again), ``q`` save and
quit. The end of the worklist, the end of input (Ctrl-D), Ctrl-C, the
terminal closing (SIGHUP) and SIGTERM (a CI job cancelled, ``timeout``,
``docker stop``; exit 0, as ``q``) save too: nothing judged is lost, and a later
session resumes with the rows still unjudged. On a terminal Ctrl-C is read
as a key, not taken as a signal, so it means the same wherever the session is
when it is pressed.

On a terminal a key is read as it is pressed; from a pipe, a line at a time (its first character). A
key that sends several bytes (Delete, F5, PageUp, an arrow: an escape sequence) and pasted text
arrive as a burst, not a key press: a burst is ignored whole, so no digit inside one is taken as a
grade. Text from the corpus and the source is printed with its controls made visible
(:mod:`ptah.cli.display`).
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import sys
import termios
import textwrap
import tty
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import typer

from ptah.cli.display import plain
from ptah.core.corpus import FORBIDDEN, REQUIRED, shown_key
from ptah.core.visible import visible
from ptah.core.worklist import Hole, WorkCase
from ptah.services.judging import Verdict

DEFAULT_SCALE = (1.0,)


def answers(scale: Sequence[float]) -> dict[str, tuple[float, str | None]]:
    """The keys of a session on the corpus's grade ``scale`` (ascending; at most 9): ``1``... its
    grades in order, ``0`` not relevant, ``r`` required (grade 1), ``f`` forbidden."""
    graded = {str(number): (grade, None) for number, grade in enumerate(scale[:9], start=1)}
    return {"0": (0.0, None), **graded, "r": (1.0, REQUIRED), "f": (0.0, FORBIDDEN)}


def legend(scale: Sequence[float]) -> str:
    """What each key of a session does, said once before the first row."""
    grades = ", ".join(
        f"{number} grade {grade:g}" for number, grade in enumerate(scale[:9], start=1)
    )
    return (
        "keys: 0 not relevant (kept in the judgement record, not the corpus); "
        f"{grades}: relevant at that grade on the corpus's scale (written into the case's relevant keys; "
        "compare with the grades the case already gives, shown with each row); r required: it must be in the "
        "top k (grade 1); f forbidden: it must not be in the top k; s skip: ask again next session; u undo the "
        "last answer; q save and quit"
    )


def uses(grades: Sequence[float]) -> str:
    """The grades a case already gives its relevant keys, best first: ``this case grades 2, 1``."""
    if not grades:
        return "this case grades no key relevant yet"
    return "this case grades " + ", ".join(
        f"{grade:g}" for grade in sorted(set(grades), reverse=True)
    )


def prompt(scale: Sequence[float]) -> str:
    """``[0 not relevant · 1 grade 0.5 · 2 grade 1 · r required · …]``: the keys on the corpus's
    scale."""
    grades = " · ".join(
        f"{number} grade {grade:g}" for number, grade in enumerate(scale[:9], start=1)
    )
    return f"[0 not relevant · {grades} · r required · f forbidden · s skip · u undo · q save and quit] "


_SAID = {None: "grade {grade:g}", REQUIRED: "required", FORBIDDEN: "forbidden"}
BURST = "\x1b"  # what the reader returns for an escape sequence or pasted text: ignored
_BURST_GAP_S = (
    0.05  # bytes following one another closer than this are one burst (no hand types that fast)
)


class HungUp(Exception):
    """The terminal closed (SIGHUP): the session ends and saves what was judged."""


class Terminated(Exception):
    """SIGTERM: the session ends and saves what was judged, saying so on a terminal still there."""


def _hung_up(_signum, _frame) -> None:
    """SIGHUP: the session ends (and saves)."""
    raise HungUp()


def _terminated(_signum, _frame) -> None:
    """SIGTERM: the session ends (and saves); another one while it unwinds is not a second
    interruption."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextmanager
def _ended_by_sigterm() -> Iterator[None]:
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silenced() -> None:
    """The terminal is gone: what is printed from now on (the save's lines) goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


@contextmanager
def key_reader() -> Iterator[Callable[[], str]]:
    """A function returning the next key pressed ('' at the end of input); a key at a time on a
    terminal. While it is open, SIGTERM raises :class:`Terminated` (and, on a terminal, SIGHUP
    :class:`HungUp`)."""
    with _ended_by_sigterm(), _keys() as read:
        yield read


@contextmanager
def _keys() -> Iterator[Callable[[], str]]:
    stream = sys.stdin
    if not stream.isatty():

        def next_line() -> str:
            line = stream.readline()
            return (line.strip()[:1] or " ") if line else ""

        yield next_line
        return
    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    previous = signal.signal(signal.SIGHUP, _hung_up)
    try:
        tty.setcbreak(fd)
        # Ctrl-C arrives as a key (\x03), read like q: a SIGINT could land anywhere, between the
        # prompt and read()
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~termios.ISIG
        termios.tcsetattr(fd, termios.TCSANOW, quiet)

        def next_key() -> str:
            try:
                data = os.read(fd, 1)
                if not data:
                    return ""
                burst = data == b"\x1b"
                while select.select([fd], [], [], _BURST_GAP_S)[
                    0
                ]:  # more bytes right behind it: one burst
                    more = os.read(fd, 4096)
                    if not more:
                        break
                    burst = True
            except OSError as exc:  # EIO: the terminal hung up before its SIGHUP was handled
                if exc.errno == errno.EIO:
                    raise HungUp() from None
                raise
            return BURST if burst else data.decode("ascii", "replace")

        yield next_key
    finally:
        signal.signal(signal.SIGHUP, previous)
        try:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        except (termios.error, OSError):  # the terminal is gone (SIGHUP): nothing to restore
            pass


def show(
    item: tuple[WorkCase, Hole], index: int, total: int, grades: Sequence[float] | None = None
) -> None:
    """The case (its query, what it already judges, the grades it gives: ``grades``, None when
    unknown) and the row: its key, where the runs ranked it, and its judging text wrapped to the
    terminal."""
    case, hole = item
    where = ", ".join(f"{plain(run)} #{rank}" for run, rank in hole.ranks.items())
    width = max(40, shutil.get_terminal_size().columns - 4)
    typer.echo("")
    typer.echo(f'[{index + 1}/{total}] case "{plain(case.id)}" (k {case.k}): {plain(case.query)}')
    if grades is not None:
        typer.echo(f"  {uses(grades)}")
    if case.judged:
        typer.echo(
            textwrap.fill(
                "already judged: " + ", ".join(plain(said) for said in case.judged),
                width + 2,
                initial_indent="  ",
                subsequent_indent="    ",
            )
        )
    typer.echo(f'  key "{plain(shown_key(hole.key))}" — {where}')
    for line in visible(hole.text, newlines=True).splitlines() or [""]:
        for part in textwrap.wrap(line, width) or [""]:
            typer.echo(f"  | {part}")


def run_session(
    items: Sequence[tuple[WorkCase, Hole]],
    read: Callable[[], str],
    scale: Sequence[float] = DEFAULT_SCALE,
    grades: Mapping[str, Sequence[float]] | None = None,
) -> list[Verdict]:
    """Ask for each ``(case, hole)`` in turn (module docs), offering the grades of the corpus's
    ``scale`` and saying what each key does first and, with each row, the grades its case gives
    (``grades``, by case id); returns the judgements made, in order."""
    verdicts: list[Verdict] = []
    typer.echo(legend(scale))
    try:
        _ask(items, read, verdicts, scale, grades or {})
    except Terminated:
        typer.echo("\nterminated (SIGTERM): saving what was judged")
    except (
        HungUp,
        OSError,
    ) as exc:  # the terminal closed, wherever the session was: save what was judged
        if isinstance(exc, OSError) and exc.errno != errno.EIO:
            raise
        _silenced()
    return verdicts


def _ask(
    items: Sequence[tuple[WorkCase, Hole]],
    read: Callable[[], str],
    verdicts: list[Verdict],
    scale: Sequence[float],
    grades: Mapping[str, Sequence[float]],
) -> None:
    keys, asked = answers(scale), prompt(scale)
    history: list[tuple[int, bool]] = []  # (item index, whether it was judged), for undo
    index = 0
    shown = -1
    while index < len(items):
        if shown != index:
            show(items[index], index, len(items), grades.get(items[index][0].id))
            shown = index
        typer.echo(asked, nl=False)
        try:
            key = read()
        except KeyboardInterrupt:  # from a pipe (on a terminal Ctrl-C is read as a key)
            key = "q"
        typer.echo(key if key.isprintable() and key.strip() else "")
        if key in ("", "q", "\x04", "\x03"):  # end of input; Ctrl-D and Ctrl-C read a key at a time
            break
        if key == BURST:
            typer.echo("  ignored: a special key or pasted text is not an answer")
            continue
        if key == "u":
            if not history:
                typer.echo("  nothing to undo")
                continue
            index, judged = history.pop()
            if judged:
                undone = verdicts.pop()
                typer.echo(f'  undone: "{plain(undone.key)}" in case "{plain(undone.case)}"')
            shown = -1
            continue
        if key == "s":
            history.append((index, False))
            index += 1
            continue
        if key not in keys:
            typer.echo(f"  {plain(key)!s} is not an answer")
            continue
        grade, mark = keys[key]
        case, hole = items[index]
        verdicts.append(Verdict(case.id, hole.key, grade, mark, hole.text_sha256))
        typer.echo("  → " + _SAID[mark].format(grade=grade))
        history.append((index, True))
        index += 1


def say_saved(saved, corpus: str) -> None:
    """The digest before and after, the lines written and the record, after a save."""
    typer.echo(f"corpus {plain(corpus)}: {saved.before} before")
    typer.echo(
        f"corpus {plain(corpus)}: {saved.after} after (+{saved.lines_added} lines, "
        f"{saved.lines_changed} changed)"
    )
    typer.echo(f"judgement record {plain(saved.record)}: {saved.judgements} judgements")
