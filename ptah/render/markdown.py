"""The report as a Markdown summary for a pull-request comment (``evaluate --markdown FILE``).

In order: the verdict; each run's means (a range ``a..b`` where the holes move one, and judged@k; then what a
run's channel could not verify),
its slices' (:mod:`ptah.render.sentences`), a variant's controls and its time per query (p50,
p95, the difference from the reference, each stage's); with a baseline or a second run, the
baseline's means, deltas, bootstrap intervals, p-values, findings and each slice's tests and
cases now failing or worse; the gates (with a drop gate's power note); the :data:`TOP_CASES` cases
that flipped or regressed most (query, where its key went); the failing cases. It reads as plain
text too: pipe tables, no link, image or HTML.

Every value from a file or the source is shown in a code span (Markdown, HTML and autolinks are
not read inside one), its fence longer than any run of backticks in it, controls escaped
(:func:`ptah.core.visible.visible`), ``|`` escaped in tables, and cut past :data:`MAX_VALUE`.
"""

from __future__ import annotations

import re

from ptah.core.compared import BaselineComparison
from ptah.core.measures import Measure
from ptah.core.report import Report, Run
from ptah.core.significance import p_value_text
from ptah.core.visible import abbreviated, visible
from ptah.render.cases import changes, failed_cases, problems, whereabouts
from ptah.render.layout import interval, mean_range, milliseconds, number, signed
from ptah.render.sentences import (
    MEAN_RANGE,
    Slices,
    baseline_family,
    baseline_findings,
    candidate_findings,
    failing_phrases,
    family_sentence,
    finding_cell,
    gate_sentence,
    level_of,
    mean_text,
    measured,
    not_compared,
    rescored_sentence,
    slice_tests,
    stage_phrase,
    timed_runs,
    unmeasured_phrase,
    variant_sentence,
    verdict_sentence,
)

TOP_CASES = 10
MAX_VALUE = 160
MAX_DETAIL = (
    4000  # a gate's detail, ptah's own sentence, is never cut short of a hostile id's length
)
_TICKS = re.compile("`+")


def code(value: object, *, cell: bool = False, limit: int = MAX_VALUE) -> str:
    """``value`` as one inline code span (module docs); ``cell``: fit for a table cell."""
    text = abbreviated(visible(str(value)), limit)
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span


def _cell_code(value: object) -> str:
    return code(value, cell=True)


def run_label(run: Run) -> str:
    return f"{run.name} ({run.channel})"


def render_markdown(report: Report) -> str:
    """The summary as Markdown text (module docs), ending with a newline."""
    parts = [
        _verdict(report),
        _means(report),
        _slice_means(report),
        _variants(report),
        _cost(report),
    ]
    if rescored := rescored_sentence(report):
        parts.append(rescored[0].upper() + rescored[1:] + ".")
    parts += [
        _baseline(report, run, comparison)
        for run, comparison in zip(report.runs, report.comparisons)
    ]
    if family := baseline_family(report):
        parts.append(f"Slices against the baseline: {family_sentence(family)}.")
    if report.comparison is not None:
        parts.append(_side_by_side(report))
    parts += [_gates(report), _changed(report), _failing(report)]
    return "\n\n".join(part for part in parts if part) + "\n"


def _verdict(report: Report) -> str:
    word, told = verdict_sentence(report)
    corpus = report.corpus
    return (
        f"## ptah evaluate: {word}: {told}\n\ncorpus {code(corpus.path)}, {corpus.cases} cases, "
        f"digest {code(corpus.digest)}; created {code(report.created_at)}"
    )


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _means(report: Report) -> str:
    measures = list(report.runs[0].means)
    judged = any(run.judged is not None for run in report.runs)
    rows = [
        [
            code(run_label(run), cell=True),
            *(mean_range(run, name) if name in run.means else "N/A" for name in measures),
            *([] if not judged else [number(None if run.judged is None else run.judged.value)]),
        ]
        for run in report.runs
    ]
    note = (
        "\n\nA range a..b: the least and the greatest the mean takes however the unjudged keys in the top k "
        "are judged (relevant or not); "
        "judged@k: the share of the top k that is judged."
        if judged
        else ""
    )
    head = [
        "run",
        *(Measure.parse(name).label for name in measures),
        *(["judged@k"] if judged else []),
    ]
    unverified = [  # what a run's channel could not verify (an outside retriever's coverage)
        f"- {code(run_label(run))}: {code(said, limit=MAX_DETAIL)}"
        for run in report.runs
        if (said := run.generation.verification.note)
    ]
    told = "\n\n" + "\n".join(unverified) if unverified else ""
    return "### Means\n\n" + _table(head, rows) + note + told


def _variants(report: Report) -> str:
    """Each variant run's executed controls, a line each (empty when no run is a variant's)."""
    lines = [
        f"- {variant_sentence(run.variant, code)}" for run in report.runs if run.variant is not None
    ]
    return "### Variants\n\n" + "\n".join(lines) if lines else ""


def _cost(report: Report) -> str:
    """Each timed run's time per query, p50 and p95, its difference from the reference run's and
    each stage's time (empty when no run was timed: a report written before ptah timed them)."""
    stages, timed = timed_runs(report)
    if not timed:
        return ""
    compared = report.comparison is not None
    rows = []
    for run, cost, change in timed:
        deltas = (
            ["", ""]
            if change is None
            else [milliseconds(change.p50_ms, sign=True), milliseconds(change.p95_ms, sign=True)]
        )
        rows.append(
            [
                code(run_label(run), cell=True),
                milliseconds(cost.p50_ms),
                milliseconds(cost.p95_ms),
                *(deltas if compared else []),
                *(
                    stage_phrase(cost.stages[name], _cell_code) if name in cost.stages else ""
                    for name in stages
                ),
            ]
        )
    head = [
        "run",
        "p50",
        "p95",
        *(["Δ p50", "Δ p95"] if compared else []),
        *map(_cell_code, stages),
    ]
    against = (
        f"Δ: against {code(report.comparison.reference)}, the reference run. "
        if report.comparison is not None
        else ""
    )
    return (
        "### Time per query\n\n"
        + _table(head, rows)
        + f"\n\n{against}Measured inside the evaluation; "
        "a stage timed per batch charges each query an equal share of its batch."
    )


def _baseline(report: Report, run: Run, compared: BaselineComparison) -> str:
    significance = compared.significance or {}
    rows = []
    for key, entry in compared.aggregates.items():
        stats = significance.get(key)
        rows.append(
            [
                Measure.parse(key).label,
                number(entry.baseline),
                number(entry.current),
                signed(entry.delta),
                interval(None if stats is None else stats.interval),
                p_value_text(None if stats is None else stats.test),
                finding_cell(stats),
            ]
        )
    head = ["measure", "baseline", "now", "Δ", "95% CI", "p", "finding"]
    title = f"### {code(run_label(run))} against the baseline {code(compared.generation)}"
    return "\n\n".join(
        [
            title,
            _table(head, rows),
            *_bullets(baseline_findings(run.name, compared, level_of(report), code)),
            *_slice_tests(compared.slices, level_of(report)),
        ]
    )


def _side_by_side(report: Report) -> str:
    comparison = report.comparison
    assert comparison is not None, (
        "a side-by-side section is written only for a report with a comparison"
    )
    reference = comparison.reference
    parts = [f"### Side by side against {code(run_label(report.runs[0]))}"]
    for run, candidate in zip(report.runs[1:], comparison.candidates):
        rows = [
            [
                Measure.parse(key).label,
                number(entry.reference),
                number(entry.candidate),
                signed(entry.delta),
                interval(entry.interval),
                p_value_text(entry.test),
                finding_cell(entry),
            ]
            for key, entry in candidate.measures.items()
        ]
        parts.append(
            f"{code(run_label(run))}\n\n"
            + _table(["measure", "reference", "run", "Δ", "95% CI", "p", "finding"], rows)
        )
        parts += _bullets(candidate_findings(candidate, reference, level_of(report), code))
        parts += _slice_tests(candidate.slices, level_of(report))
    if comparison.family is not None:
        parts.append(f"Slices against {code(reference)}: {family_sentence(comparison.family)}.")
    return "\n\n".join(parts)


def _slice_means(report: Report) -> str:
    """Each slice's means in each run (bounds and denominator) and judged@k; the slices too small to
    measure (empty for a corpus without tags)."""
    first = report.runs[0]
    if first.slices is None:
        return ""
    measures = list(first.means)
    rows = [
        [
            code(tag, cell=True),
            str(entry.cases),
            code(run_label(run), cell=True),
            *(mean_text(entry.means.get(Measure.parse(name).key)) for name in measures),
            number(None if entry.judged is None else entry.judged.value),
        ]
        for tag, _ in measured(first.slices)
        for run in report.runs
        for entry in [(run.slices or {}).get(tag)]
        if entry is not None and entry.means is not None
    ]
    head = ["slice", "cases", "run", *(Measure.parse(name).label for name in measures), "judged@k"]
    small = unmeasured_phrase(first.slices, code)
    parts = [
        "### Slices",
        f"Each slice's means over its cases: {MEAN_RANGE}; and (its denominator).",
    ]
    return "\n\n".join(
        parts
        + ([_table(head, rows)] if rows else [])
        + ([small[0].upper() + small[1:] + "."] if small else [])
    )


def _slice_tests(slices: Slices | None, level: float) -> list[str]:
    """A comparison's tests per slice and measure, the slices not compared, and each slice's cases
    now failing or worse (nothing for a corpus without tags)."""
    if slices is None:
        return []
    rows = [
        [
            code(test.tag, cell=True),
            str(test.cases),
            test.label,
            signed(test.entry.delta),
            interval(test.entry.interval),
            p_value_text(test.entry.test),
            test.adjusted,
            finding_cell(test.entry),
            test.survives,
        ]
        for test in slice_tests(slices)
    ]
    head = [
        "slice",
        "cases",
        "measure",
        "Δ",
        f"{round(level * 100)}% CI",
        "p",
        "adjusted p",
        "finding",
        "survives",
    ]
    parts = ["By slice:", _table(head, rows)] if rows else []
    parts += _bullets(
        [f"not compared: {phrase}" for phrase in not_compared(slices, code)]
        + [f"now failing or worse in {phrase}" for phrase in failing_phrases(slices, code)]
    )
    return parts


def _bullets(sentences: list[str]) -> list[str]:
    return ["\n".join(f"- {sentence}" for sentence in sentences)] if sentences else []


def _gates(report: Report) -> str:
    lines = [
        "- "
        + gate_sentence(
            gate,
            lambda value: code(value, limit=MAX_DETAIL),
            lambda word: word if word == "pass" else f"**{word}**",
        )
        for gate in report.gates
    ]
    return "### Gates\n\n" + "\n".join(lines)


def _changed(report: Report) -> str:
    found = [entry for entry in changes(report) if entry.flipped or entry.drop > 0]
    if not found:
        return ""
    lines = []
    for entry in found[:TOP_CASES]:
        case = entry.after or entry.before
        what = f"now {entry.now}" if entry.flipped else f"fell by {entry.drop:.4f}"
        before = "" if entry.before is None else f"; before: {code(whereabouts(entry.before))}"
        query = f" query {code(case.query)}" if case is not None else ""
        lines.append(
            f"- {code(entry.id)} in {code(entry.run)} against {code(entry.against)}: **{what}**;"
            f"{query}; now: {code(whereabouts(entry.after))}{before}"
        )
    more = len(found) - TOP_CASES
    tail = f"\n\n{more} more changed cases are not listed here." if more > 0 else ""
    return (
        f"### Cases that flipped or regressed most ({min(len(found), TOP_CASES)} of {len(found)})\n\n"
        + "\n".join(lines)
        + tail
    )


def _failing(report: Report) -> str:
    failing = list(failed_cases(report))
    if not failing:
        return ""
    lines = [
        f"- {code(case.id)} in {code(run_label(run))}: query {code(case.query)}; {code('; '.join(problems(case)))}"
        for run, case in failing[:TOP_CASES]
    ]
    more = len(failing) - TOP_CASES
    tail = f"\n\n{more} more failing cases are not listed here." if more > 0 else ""
    return (
        f"### Failing cases ({min(len(failing), TOP_CASES)} of {len(failing)})\n\n"
        + "\n".join(lines)
        + tail
    )


def pieces(report: Report, corpus=None) -> list[str]:
    """The ``markdown`` format (:mod:`ptah.render.formats`)."""
    return [render_markdown(report)]
