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
:func:`output_console` gives it a console no line reaches the width of.
"""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

NO_WRAP_WIDTH = 1 << 20  # a pipe's width: no line of a report reaches it
WRAPPED_ROOM = 12  # the least a column of several words keeps before the table is stacked instead
GAP = 3  # between two columns of a table without edges: padding, the rule, padding


def output_console(*, stderr: bool = False) -> Console:
    """The console to print a report on: the terminal's, or one that never wraps when not on a terminal."""
    console = Console(highlight=False, stderr=stderr)
    if console.is_terminal:
        return console
    return Console(highlight=False, stderr=stderr, width=NO_WRAP_WIDTH, soft_wrap=True)


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


def print_stacked(console: Console, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]],
                  title: str | None = None) -> None:
    """Each row as its first cell, then its other cells as ``heading value`` pairs on indented lines."""
    width = console.options.max_width
    if title:
        console.print(title)
    for row in rows:
        console.print(row[0])
        line, used = "   ", 3
        for (heading, _), cell in zip(columns[1:], row[1:]):
            length = console.render_str(cell, highlight=False).cell_len
            if not length:
                continue
            pair, size = f"[dim]{escape(heading)}[/dim] {cell}", len(heading) + 1 + length
            if used > 3 and used + 2 + size > width:
                console.print(line)
                line, used = "   ", 3
            line, used = f"{line}{'  ' if used > 3 else ' '}{pair}", used + (2 if used > 3 else 1) + size
        if used > 3:
            console.print(line)
