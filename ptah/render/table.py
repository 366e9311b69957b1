"""The report for people on a terminal: its first screen, then a table of cases per run, the means,
deltas, comparisons and the verdict.

:func:`render_summary` is the first screen: the verdict with its exit code, every gate that did
not pass (and the required gate passed over known misses); one table of every run's means with
its delta against the reference run; each timed run's p50 / p95 time per query; one line per
comparison (each measure's finding and the cost more a query); one line per family of slice tests
(:func:`ptah.render.sentences.family_lines`); and the notes on the baseline's provenance and
re-scoring. :func:`render` is the detail: under each run's header a variant's controls, under its
means its time per query (:mod:`ptah.render.sentences`), every case, the side-by-side statistics,
the gates and the verdict again.

Columns, mean lines and deltas follow the measures each run holds (labelled by the measure
registry), so ``MAP@10`` gets a column. Every value from a file or the source passes through
:func:`~ptah.render.layout.markup` (:func:`~ptah.render.layout.plain` where markup is off).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ptah.core.compared import BaselineValue, CostDelta
from ptah.core.measures import Measure
from ptah.core.report import BaselineComparison, CaseResult, Comparison, Gate, Report, Run, counted
from ptah.core.side_by_side import PairComparison, PairValue
from ptah.core.significance import p_value_phrase, p_value_text
from ptah.render.layout import (
    PlainConsole,
    case_range,
    delta,
    markup,
    mean_range,
    milliseconds,
    number,
    plain,
    print_table,
)
from ptah.render.sentences import (
    MEAN_RANGE,
    Slices,
    baseline_family,
    baseline_findings,
    candidate_findings,
    cost_sentence,
    failing_phrases,
    family_lines,
    family_sentence,
    finding_brief,
    finding_cell,
    gate_sentence,
    interval_text,
    level_of,
    mean_text,
    measured,
    model_phrase,
    not_compared,
    rescored_sentence,
    slice_tests,
    time_delta,
    unmeasured_phrase,
    variant_sentence,
    verdict_sentence,
)

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


FINDING_STYLE = {"better": "green", "worse": "red"}


def _labels(keys: Iterable[str]) -> list[tuple[str, str]]:
    """Each measure named in ``keys`` (report keys or string forms) with its label, in order."""
    return [(key, Measure.parse(key).label) for key in keys]


def _changed(
    case_id: str,
    metrics: Mapping[str, BaselineValue] | Mapping[str, PairValue],
    before: bool,
    after: bool,
) -> str:
    """A changed case's line: ``    ID: recall +0.5000, MRR N/A, … now failing`` (the flip, where it
    passed before and fails now or the other way)."""
    flip = (
        ""
        if before == after
        else " [red]now failing[/red]"
        if not after
        else " [green]now passing[/green]"
    )
    deltas = ", ".join(f"{label} {delta(metrics[key].delta)}" for key, label in _labels(metrics))
    return f"    {markup(case_id)}: {deltas}{flip}"


def render(report: Report, console: Console | PlainConsole) -> None:
    """The human report: a one-screen summary (:func:`render_summary`), then a table of cases
    per run, the means with denominators, deltas, the gates and the verdict."""
    render_summary(report, console)
    corpus = report.corpus
    console.print(f"corpus {markup(corpus.path)} ({corpus.cases} cases, {markup(corpus.digest)})")
    comparisons = report.comparisons
    for index, run in enumerate(report.runs):
        _render_run(
            console, run, comparisons[index] if index < len(comparisons) else None, level_of(report)
        )
    if family := baseline_family(report):
        console.print(f"\nslices against the baseline: {family_sentence(family)}")
    if report.comparison is not None:
        render_comparison(report.comparison, console)
    for stale in report.stale_judgements:
        console.print(
            f"  [yellow]stale judgement[/yellow] case {markup(stale.case)} key {markup(repr(stale.key))}: "
            f"{markup(stale.why)}"
        )
    for gate in report.gates:
        console.print(gate_line(gate))
    word, told = verdict_sentence(report)
    console.print(f"[bold {COLOUR[word]}]verdict: {word}[/bold {COLOUR[word]}] — {told}")


def _render_run(
    console: Console | PlainConsole, run: Run, comparison: BaselineComparison | None, level: float
) -> None:
    generation = run.generation
    stale = (
        ""
        if generation.verification.ok
        else " [yellow](incomplete or stale, measured with --allow-stale)[/yellow]"
    )
    console.print(
        f"\ngeneration [bold]{markup(generation.name)}[/bold] {markup(generation.identity[:19])}… "
        f"{model_phrase(run, markup)}, {generation.rows} rows, "
        f"{markup(run.search.mode)} {markup(run.search.similarity)}{stale}"
    )
    if run.variant is not None:
        console.print("  " + variant_sentence(run.variant, markup))
    note = generation.verification.note
    if note:  # what a channel could not verify (an outside retriever's coverage and freshness)
        console.print(f"  [yellow]{markup(note)}[/yellow]")
    measures = _labels(run.means)
    columns = [
        ("case", "left"),
        ("k", "right"),
        *((label, "right") for _, label in measures),
        ("status", "left"),
    ]
    rows = [
        [
            markup(case.id),
            str(case.k),
            *(case_range(case, name) for name, _ in measures),
            _status(case),
        ]
        for case in run.cases
    ]
    print_table(console, columns, rows)
    for name, label in measures:
        mean = run.means[name]
        line = f"  mean {label:<6} {number(mean.value)}  ({mean.numerator:.4f} / {mean.denominator} cases)"
        if mean.high is not None and mean.high != mean.value:
            line += (
                f"  however judged {mean_range(run, name)}  every hole relevant {number(mean.high)}"
            )
        key = Measure.parse(name).key
        if comparison is not None and (
            entry := comparison.aggregates.get(key)
        ):  # None: not in the baseline
            line += f"  baseline {number(entry.baseline)}  delta {delta(entry.delta)}"
            found = (comparison.significance or {}).get(key)
            if found and found.interval and found.test:
                line += f"  CI {interval_text(found.interval)}  {p_value_phrase(found.test)}  {finding_cell(found)}"
        console.print(line)
    for sentence in (
        baseline_findings(run.name, comparison, level, plain) if comparison is not None else ()
    ):
        console.print("  " + sentence, markup=False)
    if run.judged is not None:
        holed = sum(1 for case in run.cases if case.holes)
        console.print(
            f"  judged@k    {number(run.judged.value)}  ({run.judged.numerator:.4f} / {run.judged.denominator} cases); "
            f"{counted(run.holes, 'hole')} in {counted(holed, 'case')}"
            + (
                " (a value a..b: the least and the greatest it takes however the holes are judged)"
                if run.holes
                else ""
            )
        )
    forbidden = run.forbidden
    if forbidden.cases:
        console.print(
            f"  forbidden leakage {forbidden.leaking} of {forbidden.cases} cases (rate {number(forbidden.rate)})"
        )
    if run.cost is not None:
        console.print("  " + cost_sentence(run.cost, markup))
    if (
        run.search.index
    ):  # --search index|both: the index, and with both its ANN recall against exact
        render_index_search(console, run)
    lost = comparison.baseline_holes_lost if comparison is not None else None
    if lost:
        console.print(
            f"  baseline holes lost: {counted(lost, 'row')} in the baseline's top k that nobody judged "
            "and this run no longer returns (they could hide a regression)"
        )
    if comparison is not None and comparison.cases_changed:
        console.print(f"  cases changed against baseline ({markup(comparison.generation)}):")
        for change in comparison.cases_changed:
            passed = change.passed
            console.print(_changed(change.id, change.metrics, passed.baseline, passed.current))
    if run.slices is not None:
        render_slice_means(console, run)
    if comparison is not None and comparison.slices is not None:
        render_slice_tests(
            console,
            comparison.slices,
            f"against the baseline ({markup(comparison.generation)})",
            level,
        )


# --- slices ----------------------------------------------------------------------


def render_slice_means(console: Console | PlainConsole, run: Run) -> None:
    """Each slice's means (bounds and denominator) and judged@k, then the slices too small to
    measure."""
    found = measured(run.slices)
    keys = [Measure.parse(name).key for name in run.means]
    if found:
        console.print(
            f"  slices of {markup(run.name)} (each mean {MEAN_RANGE}; and its denominator):"
        )
        columns = [
            ("slice", "left"),
            ("cases", "right"),
            *((Measure.parse(key).label, "right") for key in keys),
            ("judged@k", "right"),
        ]
        print_table(
            console,
            columns,
            [
                [
                    markup(tag),
                    str(entry.cases),
                    *(mean_text((entry.means or {}).get(key)) for key in keys),
                    number(None if entry.judged is None else entry.judged.value),
                ]
                for tag, entry in found
            ],
        )
    small = unmeasured_phrase(run.slices, markup)
    if small:
        console.print(f"  slices {small}")


def render_slice_tests(
    console: Console | PlainConsole, slices: Slices, against: str, level: float
) -> None:
    """A comparison's tests per slice and measure (the adjusted p and whether the finding survives
    the family's correction), the slices not compared and why, and each slice's cases now failing or
    worse."""
    tests = slice_tests(slices)
    if tests:
        console.print(f"  slices {against}:")
        headings = (
            "slice",
            "cases",
            "measure",
            "delta",
            f"{round(level * 100)}% CI",
            "p",
            "adjusted p",
            "finding",
            "survives",
        )
        columns = [
            (
                heading,
                "left"
                if heading in ("slice", "measure", "p", "adjusted p", "finding", "survives")
                else "right",
            )
            for heading in headings
        ]
        rows = []
        for test in tests:
            entry = test.entry
            style = FINDING_STYLE.get(entry.finding, "dim")
            rows.append(
                [
                    markup(test.tag),
                    str(test.cases),
                    test.label,
                    delta(entry.delta),
                    interval_text(entry.interval),
                    p_value_text(entry.test),
                    test.adjusted,
                    f"[{style}]{markup(finding_cell(entry))}[/{style}]",
                    test.survives,
                ]
            )
        print_table(console, columns, rows)
    for phrase in not_compared(slices, markup):
        console.print(f"  slices not compared: {phrase}")
    failing = failing_phrases(slices, markup)
    if failing:
        console.print("  cases now failing or worse, by slice:")
        for phrase in failing:
            console.print(f"    {phrase}")


def _status(case: CaseResult) -> str:
    problems = [f"missed {markup(repr(miss.key))} ({markup(miss.where)})" for miss in case.missed]
    problems += [f"leaked {markup(repr(hit.key))} (rank {hit.rank})" for hit in case.hits]
    ties = case.ties
    note = " [yellow]tie at cutoff[/yellow]" if ties.straddles_cutoff or ties.expected_tied else ""
    if case.holes:
        note += f" [dim]{counted(len(case.holes), 'hole')}[/dim]"
    if problems:
        return "[red]FAIL[/red] " + "; ".join(problems) + note
    return "[green]ok[/green]" + note


# --- --search index|both -------------------------------------------------------


def render_index_search(console: Console | PlainConsole, run: Run) -> None:
    """The index line; with ``--search both``, each case's ANN recall and deltas, then the means."""
    search = run.search
    index = search.index
    if index is None:
        return
    if index.kind == "ivfflat":  # a table's own index (an external generation's)
        shape, at = f"lists {index.lists}", f"probes {index.probes}"
    else:
        shape, at = (
            f"m {index.m}, ef_construction {index.ef_construction}",
            f"ef_search {search.ef_search}",
        )
    console.print(
        f"  searched with index {markup(index.name)} ({markup(index.kind)}, {shape}) at {at}"
    )
    ann = run.ann
    if ann is None:
        return
    measures = _labels(ann.delta)
    columns = [
        ("case", "left"),
        ("ANN recall", "right"),
        *((f"Δ{label}", "right") for _, label in measures),
        ("missed from exact top k", "left"),
    ]
    rows = []
    for case in run.cases:
        entry = case.ann
        if entry is None:
            continue
        missed = ", ".join(markup(key) for key in entry.missed[:5]) + (
            " …" if len(entry.missed) > 5 else ""
        )
        rows.append(
            [
                markup(case.id),
                number(entry.recall),
                *(delta(entry.delta[key]) for key, _ in measures),
                missed,
            ]
        )
    print_table(console, columns, rows, title="index against exact search", title_justify="left")
    recall = ann.recall
    console.print(
        f"  mean ANN recall {number(recall.value)}  ({recall.numerator:.4f} / {recall.denominator} cases)"
    )
    for key, label in measures:
        mean = run.means.get(str(Measure.parse(key)))
        console.print(
            f"  mean {label:<6} index {number(None if mean is None else mean.value)}  "
            f"exact {number(ann.exact[key].value)}  delta {delta(ann.delta[key])}"
        )


# --- several runs side by side -------------------------------------------------


def render_comparison(comparison: Comparison, console: Console | PlainConsole) -> None:
    """Print the means of every run with deltas against the reference, then each candidate's
    statistics."""
    statistics = comparison.statistics
    bootstrap, permutation = statistics.bootstrap, statistics.permutation
    level = bootstrap.level
    reference = comparison.reference
    console.print(
        f"\n[bold]side by side[/bold] against [bold]{markup(reference)}[/bold] (the reference): paired by case; "
        f"{round(level * 100)}% CI by paired bootstrap ({bootstrap.resamples:,} resamples, seed {statistics.seed}); "
        f"p by {permutation.alternative} {permutation.test} test "
        f"(exact up to {permutation.exact_limit} non-zero differences, else Monte Carlo, marked ~)"
    )
    first = comparison.candidates[0].measures
    measures = _labels(first)
    columns = [
        ("run", "left"),
        ("channel", "left"),
        *(column for _, label in measures for column in ((label, "right"), ("delta", "right"))),
    ]
    rows = [
        [
            markup(reference),
            "reference",
            *[cell for key, _ in measures for cell in (number(first[key].reference), "")],
        ]
    ]
    for candidate in comparison.candidates:
        entries = candidate.measures
        cells = [
            cell
            for key, _ in measures
            for cell in (number(entries[key].candidate), delta(entries[key].delta))
        ]
        rows.append([markup(candidate.run), markup(candidate.channel or ""), *cells])
    print_table(console, columns, rows)
    for candidate in comparison.candidates:
        _render_candidate(console, candidate, reference, level)
    if comparison.family is not None:
        console.print(f"\nslices against {markup(reference)}: {family_sentence(comparison.family)}")


def _render_candidate(
    console: Console | PlainConsole, candidate: PairComparison, reference: str | None, level: float
) -> None:
    console.print(f"\n[bold]{markup(candidate.run)}[/bold] vs [bold]{markup(reference)}[/bold]")
    headings = (
        "measure",
        "delta",
        f"{round(level * 100)}% CI",
        "p",
        "cases",
        "wins",
        "ties",
        "losses",
        "finding",
    )
    columns = [
        (heading, "left" if heading in ("measure", "p", "finding") else "right")
        for heading in headings
    ]
    measures = _labels(candidate.measures)
    rows = []
    for key, label in measures:
        entry = candidate.measures[key]
        style = FINDING_STYLE.get(entry.finding, "dim")
        rows.append(
            [
                label,
                delta(entry.delta),
                interval_text(entry.interval),
                p_value_text(entry.test),
                str(entry.cases),
                str(entry.wins),
                str(entry.ties),
                str(entry.losses),
                f"[{style}]{markup(finding_cell(entry))}[/{style}]",
            ]
        )
    print_table(console, columns, rows)
    for sentence in candidate_findings(candidate, reference, level, plain):
        console.print("  " + sentence, markup=False)
    flipped = candidate.flipped
    changed = candidate.cases_changed
    if not changed:
        console.print("  no case changed")
    else:
        console.print(
            f"  cases changed: {len(changed)} ({flipped.now_failing} now failing, {flipped.now_passing} now passing)"
        )
    for change in changed:
        passed = change.passed
        console.print(_changed(change.id, change.metrics, passed.reference, passed.candidate))
    if candidate.slices is not None:
        render_slice_tests(console, candidate.slices, f"against {markup(reference)}", level)
