"""Values and tables as they read on a terminal: values from files made visible, numbers formatted,
and a table fitted by layout, never by cutting a name, a number or an interval.

Every case id, query, key, path, name and message that may quote one passes through :func:`plain`
or :func:`markup` on its way to a terminal (:mod:`ptah.core.visible` says what is escaped); files
ptah writes hold the exact values. :func:`column_widths` lets a column of single words never wrap
and a column of several words wrap at its spaces (folding a longer word, never cutting it); when
that leaves too little room, :func:`print_stacked` prints each row's first cell on its own line,
then ``heading value`` pairs packed to the terminal's width, a pair never split.

Output that is not a terminal gets ptah's own plain text (:class:`PlainConsole`, chosen by
:func:`output_console`), a format of its own, not rich's: no markup, colour or wrapping, each
table as columns two spaces apart under a rule of dashes::

    case  k  recall     MRR  status
    ----  -  ------  ------  ------
    a     2  1.0000  0.5000  ok
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from ptah.core.visible import visible

if TYPE_CHECKING:  # the report's modules import numpy: imported where a range is computed
    from rich.console import Console, JustifyMethod

    from ptah.core.compared import Interval
    from ptah.core.report import CaseResult, Run


# What rich reads as a tag, with the backslashes before it: ``[bold]``, ``\\[/red]`` (see
# :func:`markup`).
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?])")


def plain(value: object) -> str:
    """``value`` as one line for ``typer.echo``: controls, newlines included, written as escapes."""
    return visible(str(value))


def markup(value: object) -> str:
    """``value`` as one line for rich: controls escaped, and ``[…]`` kept from reading as markup.

    Escaped as ``rich.markup.escape`` escapes, without importing rich: a backslash before each tag,
    the backslashes already there doubled, and a trailing lone backslash doubled so that it escapes
    nothing that follows."""
    text = _TAG.sub(lambda found: found.group(1) * 2 + "\\" + found.group(2), visible(str(value)))
    return text + "\\" if text.endswith("\\") and not text.endswith("\\\\") else text


def unmarked(text: str) -> str:
    """Markup as plain text: its tags dropped and each escaped tag its text, the backslashes before
    a tag halved (what :func:`markup` escaped reads as the value again)."""
    return _TAG.sub(
        lambda found: (
            "\\" * (len(found.group(1)) // 2) + found.group(2) * (len(found.group(1)) % 2)
        ),
        text,
    )


def number(value: float | None) -> str:
    """A measure's value: four decimals, or ``N/A``."""
    return "N/A" if value is None else f"{value:.4f}"


def bounded(value: float | None, high: float | None) -> str:
    """A mean's judged value and, where the holes move it, its value with every hole relevant, the
    smaller first (nDCG's can be below the judged value): ``0.5000..0.7500``."""
    if high is None or value is None or high == value:
        return number(value)
    return f"{min(value, high):.4f}..{max(value, high):.4f}"


def ranged(value: float | None, bounds: tuple[float, float] | None) -> str:
    """A value and, where the holes move it, the least and the greatest it takes however they are
    judged (:func:`ptah.core.estimate.completions`): ``0.8503..1.0000``; the value alone where they do
    not move it."""
    if value is None or bounds is None or f"{bounds[0]:.4f}" == f"{bounds[1]:.4f}":
        return number(value)
    return f"{bounds[0]:.4f}..{bounds[1]:.4f}"


def case_range(case: CaseResult, name: str) -> str:
    """A case's value of measure ``name`` and its interval however its holes are judged
    (:func:`ranged`); a report that does not list the holes has only the two bounds
    (:func:`bounded`)."""
    from ptah.core.estimate import completions
    from ptah.core.measures import Measure

    if case.holes is None:
        return bounded(case.values.get(name), (case.highs or {}).get(name))
    return ranged(case.values.get(name), completions(case, Measure.parse(name)))


def mean_range(run: Run, name: str) -> str:
    """A run's mean of measure ``name`` and its interval however the holes of its cases are judged;
    a report that does not list the holes has only the two bounds (:func:`bounded`)."""
    from ptah.core.estimate import mean_completions
    from ptah.core.measures import Measure

    mean = run.means[name]
    if any(case.holes is None for case in run.cases):
        return bounded(mean.value, mean.high)
    return ranged(mean.value, mean_completions(run.cases, Measure.parse(name)))


def signed(value: float | None) -> str:
    """A difference with its sign, four decimals: ``+0.0625``, or ``N/A``."""
    return "N/A" if value is None else f"{value:+.4f}"


def interval(found: Interval | None) -> str:
    """An interval of differences as the files write it: ``[-0.1875, +0.0000]``, or ``N/A``."""
    return "N/A" if found is None else f"[{found.low:+.4f}, {found.high:+.4f}]"


def milliseconds(value: float | None, *, sign: bool = False) -> str:
    """A time in milliseconds, ``544.1 ms`` (``+180.2 ms`` with ``sign``): one decimal, two under 1
    ms so that a fast stage does not read 0; ``N/A`` when it was not timed."""
    if value is None:
        return "N/A"
    places = 1 if abs(value) >= 1 else 2
    return f"{value:{'+' if sign else ''},.{places}f} ms"


def delta(value: float | None) -> str:
    """A signed difference in rich markup: green when up, red when down, dim when none; ``N/A`` when
    undefined."""
    if value is None:
        return "N/A"
    colour = "green" if value > 0 else "red" if value < 0 else "dim"
    return f"[{colour}]{signed(value)}[/{colour}]"


WRAPPED_ROOM = 12  # the least a column of several words keeps before the table is stacked instead
GAP = 3  # between two columns of a table without edges: padding, the rule, padding


class PlainConsole:
    """The part of rich's ``Console`` ptah's renderers use, printing plain text to stdout."""

    is_terminal = False

    def print(self, text: str = "", *, markup: bool = True, highlight: bool = False) -> None:
        """One line (or more, where ``text`` holds line breaks); ``markup`` False prints ``text`` as
        it is."""
        sys.stdout.write((unmarked(text) if markup else text) + "\n")
        sys.stdout.flush()

    def table(
        self,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[str]],
        title: str | None = None,
    ) -> None:
        """``columns`` (heading, justify) and ``rows`` of markup cells as :func:`table_lines` lays
        them out."""
        self.print("\n".join(([title] if title else []) + table_lines(columns, rows)), markup=False)


def table_lines(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> list[str]:
    """The headings, a rule of dashes and a line per row: cells two spaces apart, each column as
    wide as its widest cell (right-aligned where its justify says ``right``), no space at the end of
    a line."""
    grid = [
        [heading for heading, _ in columns],
        *([unmarked(cell) for cell in row] for row in rows),
    ]
    widths = [max(len(line[index]) for line in grid) for index in range(len(columns))]
    grid.insert(1, ["-" * width for width in widths])

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if justify == "right" else cell.ljust(width)
            for cell, width, (_, justify) in zip(cells, widths, columns)
        ).rstrip()

    return [line(cells) for cells in grid]


def output_console() -> Console | PlainConsole:
    """The console to print a report on: rich's on a terminal (or where ``FORCE_COLOR`` or
    ``TTY_COMPATIBLE`` asks rich to decide), else ptah's plain text."""
    isatty = getattr(sys.stdout, "isatty", None)
    if (
        (isatty is not None and isatty())
        or "FORCE_COLOR" in os.environ
        or "TTY_COMPATIBLE" in os.environ
    ):
        from rich.console import Console

        console = Console(highlight=False)
        if console.is_terminal:
            return console
    return PlainConsole()


def _plain(console: Console, cell: str) -> str:
    return console.render_str(cell, highlight=False).plain


def column_widths(
    console: Console, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]
) -> list[int] | None:
    """Each column's width for a table in the console's width with no cell cut, or None when there
    is none.

    A column whose cells are single words keeps its full width; a column of
    several words may narrow (the widest first) to its longest word, or to
    :data:`WRAPPED_ROOM` when that is more.
    """
    widths, floors = [], []
    for index, (heading, _) in enumerate(columns):
        cells = [_plain(console, row[index]) for row in rows] + [heading]
        widest = max(
            console.render_str(cell, highlight=False).cell_len
            for cell in [row[index] for row in rows] + [heading]
        )
        widths.append(widest)
        if any(" " in cell.strip() for cell in cells[:-1]):
            longest_word = max((len(word) for cell in cells for word in cell.split()), default=0)
            floors.append(min(widest, max(longest_word, WRAPPED_ROOM)))
        else:
            floors.append(widest)
    excess = sum(widths) + GAP * (len(columns) - 1) - console.options.max_width
    while excess > 0:
        slack, index = max(
            (width - floor, index) for index, (width, floor) in enumerate(zip(widths, floors))
        )
        if slack <= 0:
            return None
        widths[index] -= 1
        excess -= 1
    return widths


def packed(pairs: Sequence[tuple[str, int]], width: int, indent: str = "    ") -> list[str]:
    """``(text, cells it takes)`` pairs packed into lines of ``indent`` and pairs two spaces apart,
    at most ``width`` cells each; a pair is never split (one wider than a line has a line of its
    own)."""
    lines, line, used = [], "", 0
    for text, size in pairs:
        if line and len(indent) + used + 2 + size > width:
            lines.append(indent + line)
            line, used = "", 0
        line, used = (f"{line}  {text}", used + 2 + size) if line else (text, size)
    return lines + ([indent + line] if line else [])


def stacked_text(headings: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Rows of plain text stacked as :func:`print_stacked` stacks markup: the first cell, then the
    others."""
    lines = []
    for row in rows:
        lines.append(row[0])
        lines += packed(
            [
                (f"{heading} {cell}", len(heading) + 1 + len(cell))
                for heading, cell in zip(headings[1:], row[1:])
                if cell
            ],
            width,
        )
    return lines


def print_stacked(
    console: Console,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[str]],
    title: str | None = None,
) -> None:
    """Each row as its first cell, then its other cells as ``heading value`` pairs on indented
    lines."""
    from rich.markup import escape

    if title:
        console.print(title)
    for row in rows:
        console.print(row[0])
        sizes = [console.render_str(cell, highlight=False).cell_len for cell in row[1:]]
        pairs = [
            (f"[dim]{escape(heading)}[/dim] {cell}", len(heading) + 1 + size)
            for (heading, _), cell, size in zip(columns[1:], row[1:], sizes)
            if size
        ]
        for line in packed(pairs, console.options.max_width):
            console.print(line)


def print_table(
    console: Console | PlainConsole,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[str]],
    **options,
) -> None:
    """A table of ``columns`` (heading, justify) and ``rows`` of markup cells, as
    ``Table(show_edge=False, pad_edge=False, **options)`` prints it, its single-word cells never cut
    (:func:`column_widths`); a table that cannot be laid out without cutting one is printed
    stacked. Output that is not a terminal gets ptah's plain table."""
    if isinstance(console, PlainConsole):
        console.table(columns, rows, options.get("title"))
        return
    from rich.table import Table

    widths = column_widths(console, columns, rows)
    if widths is None:
        print_stacked(console, columns, rows, options.get("title"))
        return
    table = Table(show_edge=False, pad_edge=False, **options)
    for (heading, justify), width in zip(columns, widths):
        table.add_column(
            heading, justify=cast("JustifyMethod", justify), width=width, overflow="fold"
        )
    for row in rows:
        table.add_row(*row)
    console.print(table)
