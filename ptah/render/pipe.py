"""Printing to a pipe without rich: the same bytes rich prints there, for a tenth of the time.

Output that is not a terminal (a pipe, a file, a CI log) gets a console that
never wraps and has no colours (:func:`ptah.render.layout.output_console`).
There rich's work is to drop the markup and pad the tables' cells, and
importing rich and laying out a table of 300 cases costs more than the
evaluation it reports. :class:`PipeConsole` does that work itself for the
text ptah prints -- its own tags (``[green]``, ``[bold red]``, ``[/dim]`` …),
escaped brackets, ASCII table cells -- and hands anything else to the rich
console :func:`~ptah.render.layout.output_console` would have made: an emoji
code such as ``:smile:``, a control character, a cell with wide or combining
characters, a table title, a tag it does not know. ``tests/render/test_pipe.py``
prints the same text and tables both ways and compares the bytes.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Sequence

# Rich's markup tag: backslashes, then ``[`` and a name starting [a-z#/@], up to the first ``]``.
_TAG = re.compile(r"(\\*)\[([a-z#/@][^\[]*?)]")
_EMOJI = re.compile(r":\S*?:")  # covers rich's emoji codes (:name: and :name-emoji:)
_UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # rich strips some controls and expands tabs: leave those to it
_STYLES = frozenset({"bold", "dim", "italic", "green", "red", "yellow", "bold green", "bold red", "bold yellow"})
# The boxes of ``Table(show_edge=False, pad_edge=False)`` (rich's HEAVY_HEAD): heading, rule under it, body.
_HEAD, _RULE, _CROSS, _BODY = "┃", "━", "╇", "│"


def plain_text(text: str, markup: bool = True) -> str | None:
    """What rich prints for ``text`` on a console without colours (its markup read when ``markup``), or None
    where that takes rich itself (see the module docs)."""
    if _UNSAFE.search(text):
        return None
    if markup and "[" in text:
        pieces, open_tags, position = [], [], 0
        for found in _TAG.finditer(text):
            start, end = found.span()
            pieces.append(text[position:start].replace("\\[", "["))
            position = end
            backslashes, escaped = divmod(len(found.group(1)), 2)
            pieces.append("\\" * backslashes)
            if escaped:  # \[name] is the text [name]
                pieces.append(f"[{found.group(2)}]")
                continue
            name = found.group(2)
            if name.startswith("/"):
                if not open_tags or name[1:] not in ("", open_tags[-1]):
                    return None  # a close rich would match elsewhere in the stack, or refuse
                open_tags.pop()
            elif name in _STYLES:
                open_tags.append(name)
            else:
                return None
        pieces.append(text[position:].replace("\\[", "["))
        text = "".join(pieces)
    if ":" in text and _EMOJI.search(text):
        return None
    return text


def table_lines(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> list[str] | None:
    """The lines rich prints for ``Table(show_edge=False, pad_edge=False)`` of ``columns`` (heading, justify)
    and ``rows`` of markup cells at their natural widths, or None where that takes rich itself."""
    if not rows or not columns:
        return None
    grid = []
    for row in [[heading for heading, _ in columns], *rows]:
        cells = []
        for cell in row:
            text = plain_text(cell)
            if text is None or not text.isascii() or text != text.strip() or "\n" in text:
                return None
            cells.append(text)
        grid.append(cells)
    widths = [max(len(row[index]) for row in grid) for index in range(len(columns))]
    if 0 in widths and len(columns) == 1:
        return None
    last = len(columns) - 1
    pads = [(index > 0, index < last) for index in range(len(columns))]

    def line(cells: Sequence[str], bar: str) -> str:
        parts = []
        for (_, justify), cell, width, (left, right) in zip(columns, cells, widths, pads):
            body = cell.rjust(width) if justify == "right" else cell.ljust(width)
            parts.append(" " * left + body + " " * right)
        return bar.join(parts)

    rule = _CROSS.join(_RULE * (width + left + right) for width, (left, right) in zip(widths, pads))
    return [line(grid[0], _HEAD), rule, *(line(cells, _BODY) for cells in grid[1:])]


class PipeConsole:
    """The subset of rich's ``Console`` ptah's renderers use, for output that is not a terminal: text and
    tables printed as :func:`plain_text` and :func:`table_lines` give them, everything else by the rich console
    made on first need (``rich``)."""

    is_terminal = False

    def __init__(self, *, stderr: bool = False):
        self._stderr = stderr
        self._rich = None

    def rich(self):
        """The rich console this one stands for: no colours, no wrapping (made, and rich imported, once)."""
        if self._rich is None:
            from rich.console import Console

            from ptah.render.layout import NO_WRAP_WIDTH

            self._rich = Console(highlight=False, stderr=self._stderr, width=NO_WRAP_WIDTH, soft_wrap=True)
        return self._rich

    def print(self, *objects, **options) -> None:
        text = None
        if len(objects) == 1 and isinstance(objects[0], str) and set(options) <= {"highlight", "markup"}:
            text = plain_text(objects[0], options.get("markup") is not False)
        if text is None:
            self.rich().print(*objects, **options)
        else:
            self.write(text + "\n")

    def table(self, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> bool:
        """Print the table as :func:`ptah.render.table.print_table` would; False (nothing printed) where that
        takes rich."""
        if not self._boxes_drawn():
            return False
        lines = table_lines(columns, rows)
        if lines is None:
            return False
        self.write("\n".join(lines) + "\n")
        return True

    def write(self, text: str) -> None:
        """Write and flush, as rich does after each ``print``; a reader gone is handled as rich handles it."""
        file = self._file()
        if file is None:  # no stream at all (pythonw): rich writes nowhere too
            return
        try:
            file.write(text)
            file.flush()
        except BrokenPipeError:  # rich's Console.on_broken_pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(1) from None

    def _file(self):
        file = sys.stderr if self._stderr else sys.stdout
        return getattr(file, "rich_proxied_file", file)

    def _boxes_drawn(self) -> bool:
        """Rich draws the boxes as they are only for a UTF encoding (else in ASCII)."""
        encoding = getattr(self._file(), "encoding", "utf-8") or "utf-8"
        return encoding.lower().startswith("utf")

    def __getattr__(self, name: str):  # options, render_str …: what only rich's console has
        if name.startswith("_"):  # this object's own, not yet set (a copy being made): never rich's
            raise AttributeError(name)
        return getattr(self.rich(), name)


def is_plain_pipe(stderr: bool = False) -> bool:
    """True where rich would make a console that is not a terminal, by the rules rich reads (its environment
    variables, Jupyter, IDLE, the stream's ``isatty``); False where rich should decide."""
    import builtins

    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    environ = os.environ
    if "TTY_COMPATIBLE" in environ or "FORCE_COLOR" in environ:
        return False
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return False
    file = sys.stderr if stderr else sys.stdout
    file = getattr(file, "rich_proxied_file", file)
    if file is None:
        return False
    isatty = getattr(file, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:
        return False
