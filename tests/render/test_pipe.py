"""A pipe's console prints, without rich, exactly the bytes rich prints there (ptah.render.pipe).

Rich is the oracle: every string and table goes both ways -- through
:class:`PipeConsole` (which may hand it to rich) and through the rich console
``output_console`` made for a pipe before -- and the outputs are compared.
"""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape

from ptah.core.report import Report
from ptah.core.visible import visible
from ptah.render.layout import NO_WRAP_WIDTH, output_console
from ptah.render.pipe import PipeConsole, is_plain_pipe, plain_text, table_lines
from ptah.render.table import print_table, render
from ptah.render.text import markup
from tests.render.reports import compared, document, report

REPO = Path(__file__).resolve().parents[2]
PIECES = ["a", "b", "x y", " ", "  ", "[", "]", "\\", "\\\\", "/", ":", "smile", "#", "@", "=", "1", "é", "案",
          "[green]", "[/green]", "[bold red]", "[/bold red]", "[dim]", "[/dim]", "[/]", "[yellow]", "[/yellow]",
          "[link=x]", "[/link]", "[on red]", "[1]", "\t", "\x07", "\r", "\n", "…", "Δ", ":smile:", "ok", "N/A"]


def strings(count: int, seed: int, longest: int = 8) -> list[str]:
    draw = random.Random(seed)
    return ["".join(draw.choice(PIECES) for _ in range(draw.randint(0, longest))) for _ in range(count)]


def rich_pipe(buffer: io.StringIO) -> Console:
    """The console output_console made for a pipe before ptah printed there itself."""
    return Console(file=buffer, highlight=False, width=NO_WRAP_WIDTH, soft_wrap=True)


def both(monkeypatch, draw) -> tuple[str, str]:
    """What ``draw(console)`` prints on a PipeConsole over stdout, and on rich's console for a pipe."""
    ours, theirs = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", ours)
    try:
        draw(PipeConsole())
    except Exception as exc:  # rich refused the markup (the pipe's console left it to rich)
        ours.write(repr(exc))
    monkeypatch.undo()
    try:
        draw(rich_pipe(theirs))
    except Exception as exc:
        theirs.write(repr(exc))
    return ours.getvalue(), theirs.getvalue()


def rich_plain(text: str, markup_on: bool = True) -> str | Exception:
    buffer = io.StringIO()
    try:
        rich_pipe(buffer).print(text, markup=markup_on)
    except Exception as exc:  # rich refuses some markup; ptah must then leave it to rich
        return exc
    return buffer.getvalue()


def test_markup_escapes_as_rich_escapes():
    for text in strings(4000, 1):
        assert markup(text) == escape(visible(text)), repr(text)


@pytest.mark.parametrize("markup_on", [True, False])
def test_plain_text_is_what_rich_prints_or_none(markup_on):
    handled = 0
    for text in strings(4000, 2) + [markup(text) for text in strings(2000, 3)]:
        ours = plain_text(text, markup_on)
        if ours is None:
            continue
        handled += 1
        assert ours + "\n" == rich_plain(text, markup_on), repr(text)
    assert handled > 1500  # the fast path is the common one


def test_ptahs_own_lines_take_the_fast_path():
    for text in ["[bold green]verdict: pass[/bold green] (exit 0) — all 2 gates passed",
                 "  [green]pass[/green] recall (minilm): no drop", "[dim]detail: each run's cases[/dim]",
                 f"corpus {markup('corp[us]/x.yaml')}: 3 cases", "  [yellow]note[/yellow]: a \\[bracket]"]:
        assert plain_text(text) + "\n" == rich_plain(text)


def test_tables_print_as_rich_prints_them(monkeypatch):
    draw = random.Random(4)
    simple = ["1", "10", "0.5000", "N/A", "", "[green]ok[/green]", "[red]FAIL[/red] missed '7' (not retrieved)",
              "[green]ok[/green] [dim]9 holes[/dim]", markup("[bold]x"), "0.3869..1.0000", "[green]+0.1000[/green]",
              "a b", markup("x\\")]
    odd = simple + ["[/]", " lead", "trail ", "案例", ":smile:", "é", "x\ty", "[blink]x[/blink]", "[red]x[/green]"]
    fast = 0
    for _ in range(400):
        cells = simple if draw.random() < 0.7 else odd
        columns = [(draw.choice(["case", "k", "nDCG", "status", "", "Δ" if cells is odd else "p"]),
                    draw.choice(["left", "right"])) for _ in range(draw.randint(1, 5))]
        rows = [[draw.choice(cells) for _ in columns] for _ in range(draw.choice([0, 1, 2, 7]))]
        fast += table_lines(columns, rows) is not None
        ours, theirs = both(monkeypatch, lambda console: print_table(console, columns, rows))
        assert ours == theirs, (columns, rows)
    assert fast > 50


@pytest.mark.parametrize("data", [document(), compared()])
def test_a_whole_report_prints_as_rich_prints_it(monkeypatch, data):
    ours, theirs = both(monkeypatch, lambda console: render(report(data), console))
    assert ours == theirs
    assert "━━━━━━╇" in ours


def test_the_example_baseline_prints_as_rich_prints_it_without_importing_rich(monkeypatch):
    baseline = Report.from_dict(json.loads((REPO / "examples" / "support" / "baseline.json").read_text()))
    console = PipeConsole()
    ours, theirs = both(monkeypatch, lambda console: render(baseline, console))
    assert ours == theirs
    render(baseline, console)  # on stdout (pytest's capture): the fast path throughout
    assert console._rich is None


def test_a_pipe_gets_the_plain_console_only_where_rich_would_see_no_terminal(monkeypatch):
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert is_plain_pipe() and isinstance(output_console(), PipeConsole)
    assert not Console().is_terminal
    for variable, value in (("FORCE_COLOR", "1"), ("FORCE_COLOR", ""), ("TTY_COMPATIBLE", "0"), ("TTY_COMPATIBLE", "1")):
        monkeypatch.setenv(variable, value)
        assert not is_plain_pipe() and isinstance(output_console(), Console)
        monkeypatch.delenv(variable)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    assert not is_plain_pipe() and isinstance(output_console(), Console)


def test_a_table_on_a_pipe_that_is_not_utf8_is_left_to_rich(monkeypatch):
    class Latin1(io.StringIO):
        encoding = "latin-1"

    columns, rows = [("case", "left"), ("k", "right")], [["a", "1"], ["b", "2"]]
    theirs = Latin1()
    monkeypatch.setattr(sys, "stdout", Latin1())
    print_table(PipeConsole(), columns, rows)
    ours = sys.stdout.getvalue()
    monkeypatch.undo()
    print_table(rich_pipe(theirs), columns, rows)
    assert ours == theirs.getvalue()
    assert "━" not in ours  # rich's ASCII box
