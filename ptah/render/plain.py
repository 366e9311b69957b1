"""Output that is not a terminal (a pipe, a file, a CI log): ptah's own plain text, never wrapped or cut.

Rich prints to a terminal. Elsewhere :class:`PlainConsole` prints the same
report as plain text: the markup dropped (:func:`ptah.render.text.unmarked`),
no colour, no line ever wrapped, and each table as columns two spaces apart
under a rule of dashes, every cell whole::

    case  k  recall     MRR  status
    ----  -  ------  ------  ------
    a     2  1.0000  0.5000  ok

It is a format of its own, not rich's: a script reads it line by line, a
person reads it in a CI log.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ptah.render.text import unmarked


class PlainConsole:
    """The part of rich's ``Console`` ptah's renderers use, printing plain text to stdout (or stderr)."""

    is_terminal = False

    def __init__(self, *, stderr: bool = False):
        self._stderr = stderr

    def print(self, text: str = "", *, markup: bool = True, highlight: bool = False) -> None:
        """One line (or more, where ``text`` holds line breaks); ``markup`` False prints ``text`` as it is."""
        stream = sys.stderr if self._stderr else sys.stdout
        stream.write((unmarked(text) if markup else text) + "\n")
        stream.flush()

    def table(self, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]], title: str | None = None) -> None:
        """``columns`` (heading, justify) and ``rows`` of markup cells as :func:`table_lines` lays them out."""
        self.print("\n".join(([title] if title else []) + table_lines(columns, rows)), markup=False)


def table_lines(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> list[str]:
    """The headings, a rule of dashes and a line per row: cells two spaces apart, each column as wide as its
    widest cell (right-aligned where its justify says ``right``), no space at the end of a line."""
    grid = [[heading for heading, _ in columns], *([unmarked(cell) for cell in row] for row in rows)]
    widths = [max(len(line[index]) for line in grid) for index in range(len(columns))]
    grid.insert(1, ["-" * width for width in widths])

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.rjust(width) if justify == "right" else cell.ljust(width)
                         for cell, width, (_, justify) in zip(cells, widths, columns)).rstrip()

    return [line(cells) for cells in grid]
