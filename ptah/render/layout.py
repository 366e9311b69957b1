"""Fitting a table to a narrow terminal by layout, never by cutting a name, a number or an interval.

Rich fits a table wider than the terminal by shrinking its columns, and a
cell that cannot wrap -- a run name, ``+0.0625``, ``-0.1875..+0.0000`` -- is
then cut with an ellipsis. So ptah sets the widths (:func:`column_widths`): a column
whose cells are single words never wraps; a column of several words (a
status, a finding) may wrap at its spaces and folds a word longer than the
column rather than cutting it. When the single-word columns leave those too
little room, the table is printed stacked instead (:func:`print_stacked`):
each row's first cell on a line of its own, then ``heading value`` pairs
packed into indented lines of the terminal's width, a pair never split.

Output that is not a terminal (a pipe, a CI log) is never wrapped at all:
:func:`output_console` gives it ptah's plain text (:mod:`ptah.render.plain`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Sequence

from ptah.render.plain import PlainConsole

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

WRAPPED_ROOM = 12  # the least a column of several words keeps before the table is stacked instead
GAP = 3  # between two columns of a table without edges: padding, the rule, padding


def output_console(*, stderr: bool = False) -> Console | PlainConsole:
    """The console to print a report on: rich's on a terminal (or where ``FORCE_COLOR`` or ``TTY_COMPATIBLE``
    asks rich to decide), else ptah's plain text."""
    stream = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if (isatty is not None and isatty()) or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        from rich.console import Console

        console = Console(highlight=False, stderr=stderr)
        if console.is_terminal:
            return console
    return PlainConsole(stderr=stderr)


def _plain(console: Console, cell: str) -> str:
    return console.render_str(cell, highlight=False).plain


def column_widths(console: Console, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> list[int] | None:
    """Each column's width for a table in the console's width with no cell cut, or None when there is none.

    A column whose cells are single words keeps its full width; a column of
    several words may narrow (the widest first) to its longest word, or to
    :data:`WRAPPED_ROOM` when that is more.
    """
    widths, floors = [], []
    for index, (heading, _) in enumerate(columns):
        cells = [_plain(console, row[index]) for row in rows] + [heading]
        widest = max(console.render_str(cell, highlight=False).cell_len for cell in [row[index] for row in rows] + [heading])
        widths.append(widest)
        if any(" " in cell.strip() for cell in cells[:-1]):
            longest_word = max((len(word) for cell in cells for word in cell.split()), default=0)
            floors.append(min(widest, max(longest_word, WRAPPED_ROOM)))
        else:
            floors.append(widest)
    excess = sum(widths) + GAP * (len(columns) - 1) - console.options.max_width
    while excess > 0:
        slack, index = max((width - floor, index) for index, (width, floor) in enumerate(zip(widths, floors)))
        if slack <= 0:
            return None
        widths[index] -= 1
        excess -= 1
    return widths


def shape_columns(table: Table, widths: Sequence[int]) -> Table:
    """``table`` with each column at its width: a single-word column never wraps, one of several words folds a
    word longer than the column rather than cutting it."""
    for column, width in zip(table.columns, widths):
        column.width = width
        column.overflow = "fold"
    return table


def packed(pairs: Sequence[tuple[str, int]], width: int, indent: str = "    ") -> list[str]:
    """``(text, cells it takes)`` pairs packed into lines of ``indent`` and pairs two spaces apart, at most
    ``width`` cells each; a pair is never split (one wider than a line has a line of its own)."""
    lines, line, used = [], "", 0
    for text, size in pairs:
        if line and len(indent) + used + 2 + size > width:
            lines.append(indent + line)
            line, used = "", 0
        line, used = (f"{line}  {text}", used + 2 + size) if line else (text, size)
    return lines + ([indent + line] if line else [])


def stacked_text(headings: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Rows of plain text stacked as :func:`print_stacked` stacks markup: the first cell, then the others."""
    lines = []
    for row in rows:
        lines.append(row[0])
        lines += packed([(f"{heading} {cell}", len(heading) + 1 + len(cell))
                         for heading, cell in zip(headings[1:], row[1:]) if cell], width)
    return lines


def print_stacked(console: Console, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]],
                  title: str | None = None) -> None:
    """Each row as its first cell, then its other cells as ``heading value`` pairs on indented lines."""
    from rich.markup import escape

    if title:
        console.print(title)
    for row in rows:
        console.print(row[0])
        sizes = [console.render_str(cell, highlight=False).cell_len for cell in row[1:]]
        pairs = [(f"[dim]{escape(heading)}[/dim] {cell}", len(heading) + 1 + size)
                 for (heading, _), cell, size in zip(columns[1:], row[1:], sizes) if size]
        for line in packed(pairs, console.options.max_width):
            console.print(line)
