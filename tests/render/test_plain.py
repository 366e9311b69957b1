"""Output that is not a terminal is ptah's plain text (ptah.render.layout): no markup, tables as
columns, nothing cut."""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ptah.core.report import Report
from ptah.core.visible import visible
from ptah.render.layout import (
    PlainConsole,
    markup,
    output_console,
    print_table,
    table_lines,
    unmarked,
)
from tests.render.reports import document, plain_lines, plain_text, report
from tests.render.test_table import COLUMNS, ROWS

REPO = Path(__file__).resolve().parents[2]
PIECES = [
    "a",
    "x y",
    " ",
    "[",
    "]",
    "\\",
    "\\\\",
    "/",
    ":smile:",
    "é",
    "案",
    "[green]",
    "[/green]",
    "[bold red]",
    "[/]",
    "[link=x]",
    "[1]",
    "\t",
    "\x07",
    "\n",
    "\u202e",
    "…",
]


def test_a_small_report_prints_as_plain_columns():
    assert plain_lines(report(document())) == [
        "verdict: pass (exit 0) — the one gate passed",
        "corpus corpus.yaml: 2 cases",
        "means  recall     MRR    nDCG  MAP@10",
        "-----  ------  ------  ------  ------",
        "base   0.5000  0.2500  0.3155  0.5000",
        "detail: each run's cases, then the comparisons, the gates and the verdict",
        "corpus corpus.yaml (2 cases, sha256:abc)",
        "",
        "generation base sha256:0123456789ab… model ptah/deterministic, 3 rows, exact cosine",
        "case  k  recall     MRR    nDCG  MAP@10  status",
        "----  -  ------  ------  ------  ------  ------",
        "a     2  1.0000  0.5000  0.6309  0.5000  ok",
        "b     2  0.0000  0.0000  0.0000     N/A  ok",
        "  mean recall 0.5000  (1.0000 / 2 cases)",
        "  mean MRR    0.2500  (0.5000 / 2 cases)",
        "  mean nDCG   0.3155  (0.6309 / 2 cases)",
        "  mean MAP@10 0.5000  (0.5000 / 1 cases)",
        "  pass required (base): all required keys found",
        "verdict: pass — the one gate passed",
    ]


def test_keys_and_ids_are_printed_whole_and_as_they_are():
    data = document()
    long_id = "case-" + "x" * 300
    data["runs"][0]["cases"][0]["id"] = long_id
    data["runs"][0]["cases"][1]["id"] = "[bold]b[/bold] \\[x] :smile:"
    lines = plain_lines(report(data))
    assert lines[11].startswith(long_id + "  2  1.0000") and lines[11].endswith("  ok")
    assert lines[12].startswith("[bold]b[/bold] \\[x] :smile:".ljust(len(long_id)) + "  2  0.0000")
    assert len(lines[10]) == len(long_id) + len("  -  ------  ------  ------  ------  ------")


def test_a_title_heads_the_table_and_an_empty_table_keeps_its_headings():
    columns = [("case", "left"), ("ANN recall", "right")]
    assert plain_text(
        None, lambda _, console: print_table(console, columns, [], title="index against exact")
    ) == ("index against exact\ncase  ANN recall\n----  ----------\n")


def test_a_table_is_narrower_than_rich_laid_it_out():
    """Two spaces between columns where rich takes three: what fitted 80 columns still does."""
    buffer = io.StringIO()
    by_rich = Console(file=buffer, width=200, highlight=False, color_system=None)
    print_table(by_rich, COLUMNS, ROWS)
    ours = table_lines(COLUMNS, ROWS)
    assert max(map(len, ours)) < max(map(len, buffer.getvalue().splitlines()))
    baseline = Report.from_dict(
        json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
    )
    assert (
        max(
            map(
                len,
                table_lines(
                    [
                        ("case", "left"),
                        ("k", "right"),
                        ("recall", "right"),
                        ("MRR", "right"),
                        ("nDCG", "right"),
                        ("status", "left"),
                    ],
                    [
                        [markup(case.id), str(case.k), "0.0000", "0.0000", "0.0000", "ok"]
                        for case in baseline.runs[0].cases
                    ],
                ),
            )
        )
        <= 80
    )


def test_unmarked_reads_back_what_markup_escaped_and_markup_escapes_as_rich_does():
    draw = random.Random(1)
    for _ in range(4000):
        text = "".join(draw.choice(PIECES) for _ in range(draw.randint(0, 8)))
        assert markup(text) == escape(visible(text)), repr(text)
        if not (
            text.endswith("\\") and not text.endswith("\\\\")
        ):  # a lone trailing backslash is doubled
            assert unmarked(markup(text)) == visible(text), repr(text)
    assert unmarked("[bold red]FAIL[/bold red] \\[x] \\\\[dim]y[/dim]") == "FAIL [x] \\y"


def test_a_pipe_gets_plain_text_and_a_terminal_rich(monkeypatch):
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert isinstance(output_console(), PlainConsole)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert isinstance(output_console(), Console)
    monkeypatch.delenv("FORCE_COLOR")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    assert isinstance(output_console(), Console)
