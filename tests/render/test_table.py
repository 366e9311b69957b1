"""The terminal table follows the measures a report holds: an extra MAP@10 is a column, a mean line
and a delta."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from ptah.core.report import Report
from ptah.render.layout import markup, print_table
from tests.render.reports import compared, document, report, rich_lines

REPO = Path(__file__).resolve().parents[2]


DETAIL = "detail: each run's cases, then the comparisons, the gates and the verdict"


def detail(value: Report) -> list[str]:
    """The lines after the one-screen summary (ptah.render.table)."""
    lines = rich_lines(value, 120)
    return lines[lines.index(DETAIL) + 1 :]


def test_a_report_with_map_at_10_shows_its_column_and_mean_line():
    assert rich_lines(report(), 120) == [
        "verdict: pass (exit 0) — the one gate passed",
        "corpus corpus.yaml: 2 cases",
        "means ┃ recall ┃    MRR ┃   nDCG ┃ MAP@10",
        "━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━",
        "base  │ 0.5000 │ 0.2500 │ 0.3155 │ 0.5000",
        DETAIL,
        "corpus corpus.yaml (2 cases, sha256:abc)",
        "",
        "generation base sha256:0123456789ab… model ptah/deterministic, 3 rows, exact cosine",
        "case ┃ k ┃ recall ┃    MRR ┃   nDCG ┃ MAP@10 ┃ status",
        "━━━━━╇━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━",
        "a    │ 2 │ 1.0000 │ 0.5000 │ 0.6309 │ 0.5000 │ ok    ",
        "b    │ 2 │ 0.0000 │ 0.0000 │ 0.0000 │    N/A │ ok    ",
        "  mean recall 0.5000  (1.0000 / 2 cases)",
        "  mean MRR    0.2500  (0.5000 / 2 cases)",
        "  mean nDCG   0.3155  (0.6309 / 2 cases)",
        "  mean MAP@10 0.5000  (0.5000 / 1 cases)",
        "  pass required (base): all required keys found",
        "verdict: pass — the one gate passed",
    ]


def test_a_report_without_it_shows_the_three_default_measures_with_mrr_spelt_out():
    lines = detail(
        Report.from_dict(json.loads((REPO / "examples" / "support" / "baseline.json").read_text()))
    )
    assert lines[3] == "case                   ┃  k ┃ recall ┃    MRR ┃   nDCG ┃ status"
    assert [line[:13] for line in lines if line.startswith("  mean ")] == [
        "  mean recall",
        "  mean MRR   ",
        "  mean nDCG  ",
    ]


def test_deltas_against_a_baseline_are_read_by_report_key_and_a_measure_it_lacks_has_none():
    data = document()
    data["baseline"] = {
        "path": "old.json",
        "digest": "sha256:abc",
        "comparisons": [
            {
                "generation": "base",
                "identity": "sha256:0123456789abcdef0123",
                "aggregates": {
                    "recall": {"baseline": 0.75, "current": 0.5, "delta": -0.25},
                    "mrr": {"baseline": 0.25, "current": 0.25, "delta": 0.0},
                    "ndcg": {"baseline": 0.3155, "current": 0.3155, "delta": 0.0},
                },
                "cases_changed": [
                    {
                        "id": "a",
                        "passed": {"baseline": False, "current": True},
                        "metrics": {
                            "recall": {"baseline": 0.5, "current": 1.0, "delta": 0.5},
                            "mrr": {"baseline": 0.5, "current": 0.5, "delta": 0.0},
                            "ndcg": {"baseline": None, "current": 0.6309, "delta": None},
                        },
                    }
                ],
                "against": "base",
                "significance": None,
            }
        ],
    }
    lines = detail(report(data))
    assert lines[7:13] == [
        "  mean recall 0.5000  (1.0000 / 2 cases)  baseline 0.7500  delta -0.2500",
        "  mean MRR    0.2500  (0.5000 / 2 cases)  baseline 0.2500  delta +0.0000",
        "  mean nDCG   0.3155  (0.6309 / 2 cases)  baseline 0.3155  delta +0.0000",
        "  mean MAP@10 0.5000  (0.5000 / 1 cases)",  # the baseline did not measure it
        "  cases changed against baseline (base):",
        "    a: recall +0.5000, MRR +0.0000, nDCG N/A now passing",
    ]


def test_runs_side_by_side_compare_every_measure_the_comparison_holds():
    lines = rich_lines(report(compared()), 120)
    start = lines.index(
        "run   ┃ channel   ┃ recall ┃   delta ┃    MRR ┃   delta ┃   nDCG ┃   delta ┃ MAP@10 ┃   delta"
    )
    assert lines[start + 2 : start + 4] == [
        "base  │ reference │ 0.5000 │         │ 0.2500 │         │ 0.3155 │         │ 0.5000 │        ",
        "worse │ vector    │ 0.2500 │ -0.2500 │ 0.0000 │ -0.2500 │ 0.1500 │ -0.1655 │ 0.0000 │ -0.5000",
    ]
    assert (
        "MAP@10  │ -0.5000 │ -1.0000..+0.0000 │ 0.5000 │     2 │    0 │    1 │      1 │ worse              "
        in lines
    )
    assert (
        "  worse is worse than base on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; "
        "0 cases better, 1 worse, 1 tied)"
    ) in lines
    assert "    a: recall -0.5000, MRR -0.5000, nDCG -0.5000, MAP@10 -0.5000 now failing" in lines


COLUMNS = [("case", "left"), ("k", "right"), ("nDCG", "right"), ("status", "left")]
# ids as markup() passes them, statuses with styles, a wide id, a long status that wraps when narrow
ROWS = [
    [markup("1"), "10", "0.3869", "[green]ok[/green]"],
    [
        markup("[bold]x[/bold]"),
        "10",
        "N/A",
        "[red]FAIL[/red] missed '7' (not retrieved) [yellow]tie at cutoff[/yellow]",
    ],
    [markup("案例 \\"), "5", "1.0000", "[green]ok[/green]"],
    [markup("ends with ["), "100", "0.0000", "[green]ok[/green] [yellow]tie at cutoff[/yellow]"],
    [markup(":smile: \\[x]"), "1", "0.5000", "[green]ok[/green]"],
]


def by_row(
    console: Console, columns: list[tuple[str, str]], rows: list[list[str]], **options
) -> None:
    """The table as rich lays it out with no widths set."""
    table = Table(show_edge=False, pad_edge=False, **options)
    for heading, justify in columns:
        table.add_column(heading, justify=justify)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def both_ways(rows: list[list[str]], width: int, colour: str | None = None, **options) -> list[str]:
    """What :func:`print_table` prints, and what rich prints row by row."""
    printed = []
    for draw in (print_table, by_row):
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=width,
            highlight=False,
            color_system=colour,
            force_terminal=colour is not None,
        )
        draw(console, COLUMNS, rows, **options)
        printed.append(buffer.getvalue())
    return printed


NATURAL = max(
    len(line) for line in both_ways(ROWS, 200)[1].splitlines()
)  # the table's width where nothing wraps


@pytest.mark.parametrize("colour", [None, "truecolor"])
def test_a_table_that_fits_prints_exactly_what_rich_prints(colour):
    """Every width where the table fits, with styles; narrower is laid out by ptah (the next test),
    since rich would cut cells there."""
    for width in range(NATURAL, 100):
        for options in ({}, {"title": "index against exact search", "title_justify": "left"}):
            ours, rich = both_ways(ROWS, width, colour, **options)
            assert ours == rich, (width, options)


def test_a_table_too_wide_for_the_terminal_is_laid_out_never_cut():
    """Rich fits a narrow terminal by cutting cells ("…"); ptah wraps a status at its spaces, keeps
    single-word cells whole and, when even that does not fit, stacks each row: every word of every
    cell is printed whole."""
    words = {
        word for row in ROWS for cell in row for word in Console().render_str(cell).plain.split()
    }
    layouts, cut_by_rich = set(), []
    for width in range(
        max(len(word) for word in words) + 4, NATURAL
    ):  # a word wider than the line must fold
        printed, rich = both_ways(ROWS, width)
        cut_by_rich += ["…" in rich]
        assert "…" not in printed, width
        assert all(len(line) <= width for line in printed.splitlines()), width
        assert words <= set(printed.split()), (width, words - set(printed.split()))
        layouts.add("stacked" if "\n    k 10" in printed else "table")
    assert layouts == {"stacked", "table"}  # both layouts were met on the way
    assert sum(cut_by_rich) >= 20  # widths where rich alone cuts cells


def test_no_rows_and_one_row_print_as_rich_prints_them():
    for rows in ([], ROWS[:1]):
        ours, rich = both_ways(rows, 80)
        assert ours == rich
