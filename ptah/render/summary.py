"""The first screen of an evaluation on a terminal: what a reader needs before the detail.

The verdict with the exit code it gives, every gate that did not pass and
the required gate that passed over known misses;
one table of every run's means, each with its delta against the reference
run; every timed run's time per query (p50 / p95); one line per comparison
(each candidate against the reference, and each run against the baseline:
each measure's finding and what the run costs more a query); one line per
family of slice tests (its size, its correction and the findings that
survive it: :func:`ptah.render.slices.family_lines`); and the notes on where the baseline came
from (another generation identity, another snapshot of the source:
``baseline.comparisons[i].provenance``) and how it was re-scored from its
rankings (``baseline.rescored``). The
detail -- every case, the side-by-side statistics, the gates and the verdict
again -- follows (:mod:`ptah.render.table`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ptah.core.compared import CostDelta
from ptah.core.measures import Measure
from ptah.core.report import Gate, Report
from ptah.render.layout import PlainConsole, delta, markup, milliseconds, number, plain, print_table
from ptah.render.sentences import (
    finding_brief,
    gate_sentence,
    rescored_sentence,
    time_delta,
    verdict_sentence,
)
from ptah.render.slices import family_lines

if TYPE_CHECKING:
    from rich.console import Console

# The exit code of each verdict (ptah.core.errors: 0 ok, 1 negative, 4 inconclusive).
VERDICT_EXIT = {"pass": 0, "fail": 1, "inconclusive": 4}
COLOUR = {
    "pass": "green",
    "FAIL": "red",
    "INCONCLUSIVE": "yellow",
}  # of each verdict's and gate's word


def render_summary(report: Report, console: Console | PlainConsole) -> None:
    """Print the summary (see the module docs); at most a screen for a few runs and measures."""
    word, told = verdict_sentence(report)
    console.print(
        f"[bold {COLOUR[word]}]verdict: {word}[/bold {COLOUR[word]}] (exit {VERDICT_EXIT.get(report.verdict, 1)}) "
        f"— {told}"
    )
    for gate in report.gates:
        if not gate.passed or gate.known_misses:  # a known miss is said even where the gate passes
            console.print(gate_line(gate))
    corpus = report.corpus
    console.print(f"corpus {markup(corpus.path)}: {corpus.cases} cases")
    _means(report, console)
    timed = [(run.name, run.cost) for run in report.runs if run.cost is not None]
    if timed:
        console.print(
            "  time per query, p50 / p95: "
            + "; ".join(
                f"{markup(name)} {milliseconds(cost.p50_ms)} / {milliseconds(cost.p95_ms)}"
                for name, cost in timed
            )
        )
    for line in findings(report) + family_lines(report, plain):
        console.print("  " + line, highlight=False, markup=False)
    for line in provenance_notes(report):
        console.print(f"  [yellow]note[/yellow]: {markup(line)}")
    if rescored := rescored_sentence(report):
        console.print(f"  [yellow]note[/yellow]: {markup(rescored)}")
    console.print(
        "[dim]detail: each run's cases, then the comparisons, the gates and the verdict[/dim]"
    )


def gate_line(gate: Gate) -> str:
    """One gate as the terminal shows it: ``  pass|INCONCLUSIVE|FAIL NAME (GENERATION): DETAIL``
    (Rich markup)."""
    return "  " + gate_sentence(
        gate, markup, lambda word: f"[{COLOUR[word]}]{word}[/{COLOUR[word]}]"
    )


def _means(report: Report, console: Console | PlainConsole) -> None:
    keys = [Measure.parse(name).key for name in report.runs[0].means]
    deltas = {
        candidate.run: {key: entry.delta for key, entry in candidate.measures.items()}
        for candidate in (report.comparison.candidates if report.comparison is not None else ())
    }
    columns = [("means", "left"), *((Measure.parse(key).label, "right") for key in keys)]
    rows = []
    for run in report.runs:
        cells = []
        for key in keys:
            mean = run.means.get(str(Measure.parse(key)))
            cell = number(None if mean is None else mean.value)
            if run.name in deltas and key in deltas[run.name]:
                cell += " " + delta(deltas[run.name][key])
            cells.append(cell)
        rows.append([markup(run.name), *cells])
    print_table(console, columns, rows)
    if deltas and report.comparison is not None:
        console.print(
            f"  [dim](delta: against {markup(report.comparison.reference)}, the reference run)[/dim]"
        )


def findings(report: Report) -> list[str]:
    """One line per comparison, each measure's delta and finding, and the time it costs more a query
    when both runs were timed: every candidate against the reference run, then every run against the
    baseline's reference run (the sentences and intervals are in the detail)."""
    lines = []
    if report.comparison is not None:
        for candidate in report.comparison.candidates:
            lines.append(
                f"{plain(candidate.run)} vs {plain(report.comparison.reference)}: "
                + "; ".join(
                    [
                        finding_brief(key, entry.delta, entry)
                        for key, entry in candidate.measures.items()
                    ]
                    + _time(candidate.cost)
                )
            )
    for comparison in report.comparisons:
        significance = comparison.significance or {}
        if significance:
            lines.append(
                f"{plain(comparison.against or '')} vs the baseline's {plain(comparison.generation)}: "
                + "; ".join(
                    [
                        finding_brief(key, comparison.delta(key), entry)
                        for key, entry in significance.items()
                    ]
                    + _time(comparison.cost)
                )
            )
    return lines


def _time(cost: CostDelta | None) -> list[str]:
    return [] if cost is None else [time_delta(cost)]


def provenance_notes(report: Report) -> list[str]:
    """The baseline comparisons' notes on where the baseline came from, each said once."""
    notes: list[str] = []
    for comparison in report.comparisons:
        provenance = comparison.provenance
        for note in () if provenance is None else provenance.notes:
            if note not in notes:
                notes.append(note)
    return notes
