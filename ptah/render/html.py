"""The report as one self-contained HTML page (``evaluate --html FILE``); the caller writes it
(``ptah.adapters.files``).

Everything is inline (CSS, a few lines of JavaScript, SVG charts) and a Content-Security-Policy
forbids every network resource, so the page reads the same offline, forever. Sections: the
verdict; the summary table (each run's means with deltas, interval and p against the reference, and under it what a run's
channel could not verify, ``data-note``);
each run's time per query (stages, difference, a variant's controls); each run against the
baseline; the slices (means, tests per slice under the family's correction, cases now failing or
worse); a chart of per-case deltas; each case's top results side by side, expected keys marked,
each key beside its ``excerpts`` text, a legend for every marker; the gates (with a drop gate's
power note). Measures follow the reference run's, labelled and ordered by the registry.

Every number of the summary table carries ``data-run``, ``data-measure`` (the report key),
``data-field`` and ``data-value`` (the float's ``repr``, or ``null``), so a test compares the page
with the JSON exactly. The script only toggles what is shown, and sets ``data-ready`` on
``<html>`` when it ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import TypeVar

from ptah.core.compared import (
    BaselineCaseChange,
    BaselineComparison,
    BaselineValue,
    MeasureComparison,
)
from ptah.core.comparison import case_deltas
from ptah.core.measures import Mean, Measure, registry_order
from ptah.core.report import EXCERPT_CHARS, CaseResult, Report, Run, counted
from ptah.core.significance import p_value_text
from ptah.render.cases import changes
from ptah.render.layout import case_range, interval, mean_range, milliseconds, number, signed
from ptah.render.sentences import (
    MEAN_RANGE,
    Slices,
    SliceTest,
    baseline_family,
    baseline_findings,
    candidate_findings,
    failing_phrases,
    family_sentence,
    finding_cell,
    gate_detail,
    gate_word,
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

T = TypeVar("T")
CHART_MEASURE = "ndcg"  # the report key of the measure the chart shows first
MAX_CHART_CASES = 200
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1d2430}
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:2rem 0 .5rem;border-bottom:1px solid #dde2ea;padding-bottom:.2rem}
.meta{color:#5b6578;font-size:.85rem}.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
table{border-collapse:collapse;margin:.4rem 0;display:block;max-width:100%;overflow-x:auto}th,td{padding:.25rem .6rem;border-bottom:1px solid #e6e9ef;text-align:right;vertical-align:top}
th:first-child,td:first-child,td.l,th.l{text-align:left}thead th{background:#f4f6f9}
.verdict{display:inline-block;padding:.3rem .8rem;border-radius:4px;font-weight:600;margin:.6rem 0}
.pass{background:#e3f5e8;color:#17602d}.fail{background:#fbe4e4;color:#8c1d1d}.inconclusive{background:#fdf3d8;color:#7a5300}
.better,.pos{color:#17602d}.worse,.neg{color:#a12020}.unclear,.zero{color:#6b7385}
ul.headlines{padding-left:1.2rem}
.case{border:1px solid #e6e9ef;border-radius:4px;margin:.5rem 0;padding:.3rem .6rem}.case summary{cursor:pointer}
.flip{font-weight:600;color:#a12020}.results td{text-align:left}
.k-hole{border-left:3px dotted #c99a00}.excerpt{display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden;color:#3d4657;font-size:.82rem;font-weight:400;max-width:32rem}.k-required{background:#dff3e4;font-weight:600}.k-relevant{background:#eef8f0}.k-forbidden{background:#fbe1e1;text-decoration:line-through}
.legend span{padding:0 .4rem}.legend{font-size:.85rem}
svg{max-width:100%;height:auto}.controls{margin:.4rem 0}.controls label{margin-right:1rem}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}.hidden{display:none}
"""

SCRIPT = """
(function () {
  var radios = document.querySelectorAll('input[name="chart-measure"]');
  function show(measure) {
    document.querySelectorAll('[data-chart-measure]').forEach(function (g) {
      g.classList.toggle('hidden', g.getAttribute('data-chart-measure') !== measure);
    });
  }
  radios.forEach(function (radio) {
    radio.addEventListener('change', function () { show(radio.value); });
  });
  var changedOnly = document.getElementById('changed-only');
  if (changedOnly) {
    changedOnly.addEventListener('change', function () {
      document.querySelectorAll('details.case').forEach(function (d) {
        d.classList.toggle('hidden', changedOnly.checked && d.getAttribute('data-changed') !== 'yes');
      });
    });
  }
  document.documentElement.setAttribute('data-ready', 'yes');
})();
"""


def _cell(
    run: str,
    measure: str,
    field: str,
    value: float | None,
    text: str | None = None,
    css: str = "",
    title: str = "",
) -> str:
    shown = text if text is not None else number(value)
    tip = f' title="{escape(title)}"' if title else ""
    return (
        f'<td class="{css}" data-run="{escape(run)}" data-measure="{escape(measure)}" data-field="{field}" '
        f'data-value="{_data(value)}"{tip}>{escape(shown)}</td>'
    )


def _data(value: float | None) -> str:
    """A number as ``data-value`` holds it: the report's float as Python's ``repr``, or ``null``."""
    return "null" if value is None else repr(float(value))


def _finding(finding: str) -> str:  # its CSS class
    return finding if finding in ("better", "worse") else "unclear"


def _sign(value: float | None) -> str:
    return "zero" if not value else "pos" if value > 0 else "neg"


def _measures(run: Run) -> list[tuple[str, str, str]]:
    """The run's measures as (string form, report key, the registry's label), in the registry's
    order."""
    return [
        (name, Measure.parse(name).key, Measure.parse(name).label)
        for name in registry_order(run.means)
    ]


def _ordered(by_measure: Mapping[str, T]) -> list[tuple[str, T]]:
    """The items of a mapping keyed by measure, in the registry's order."""
    return [(key, by_measure[key]) for key in registry_order(by_measure)]


def render_html(report: Report) -> str:
    """The whole page as one string (see the module docs)."""
    corpus = report.corpus
    title = f"ptah evaluation: {corpus.name or corpus.path or 'corpus'}"
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<div class="meta">corpus <span class="mono">{escape(str(corpus.path))}</span>, '
        f'{corpus.cases} cases, digest <span class="mono">{escape(corpus.digest)}</span>; '
        f"created {escape(report.created_at)}</div>",
        _verdict(report),
        _summary(report),
        _cost(report),
        _baseline_section(report),
        _slices(report),
        _chart(report),
        _cases(report),
        _gates(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def _baseline_delta(report: Report, index: int, key: str) -> float | None:
    """Run ``index``'s delta of measure ``key`` against the baseline (None: no baseline, or not
    measured)."""
    if index >= len(report.comparisons):
        return None
    entry = report.comparisons[index].aggregates.get(key)
    return None if entry is None else entry.delta


def _baseline_section(report: Report) -> str:
    """What the terminal shows of each run against ``--baseline``: per measure the baseline's mean,
    the run's, the delta, the interval, p and the finding, a sentence each, and every case that
    changed (empty without a baseline). Each number carries ``data-field`` ``baseline``,
    ``current``, ``baseline-delta`` or ``baseline-p``."""
    if not report.comparisons:
        return ""
    baseline = report.baseline
    path, digest = (None, None) if baseline is None else (baseline.path, baseline.digest)
    parts = [
        '<h2 id="baseline">Against the baseline</h2>',
        f'<p class="meta">baseline <span class="mono">{escape(str(path))}</span>, '
        f'corpus digest <span class="mono">{escape(str(digest))}</span>: each run against the '
        "baseline's reference run, paired by case.</p>",
    ]
    if rescored := rescored_sentence(report):
        parts.append(f'<p class="meta rescored">{escape(rescored[0].upper() + rescored[1:])}.</p>')
    for run, comparison in zip(report.runs, report.comparisons):
        parts.append(_baseline_run(run.name, run.channel, comparison, level_of(report)))
    return "".join(parts)


def _baseline_run(name: str, channel: str, compared: BaselineComparison, level: float) -> str:
    significance = compared.significance or {}
    rows = []
    for key, entry in _ordered(compared.aggregates):
        delta = entry.delta
        rows.append(
            f'<tr><td class="l">{escape(Measure.parse(key).label)}</td>'
            + _cell(name, key, "baseline", entry.baseline)
            + _cell(name, key, "current", entry.current)
            + _cell(name, key, "baseline-delta", delta, signed(delta), _sign(delta))
            + _tested(name, key, "baseline-p", significance.get(key))
            + "</tr>"
        )
    table = (
        f'<h3>{escape(name)} <span class="meta">({escape(channel)}) against {escape(str(compared.generation))}'
        '</span></h3><table class="baseline"><thead><tr><th class="l">measure</th><th>baseline</th><th>now</th>'
        '<th>Δ</th><th>95% CI</th><th>p</th><th>better</th><th>tied</th><th>worse</th><th class="l">finding</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        table
        + _headlines(baseline_findings(name, compared, level))
        + _baseline_changed(compared.cases_changed)
    )


def _tested(run: str, key: str, field: str, stats: MeasureComparison | None) -> str:
    """A paired test's cells: the interval, p (``data-field`` ``field``), the cases better, tied and
    worse, the finding (each empty, and the finding ``N/A``, where the measure was not tested)."""
    test = None if stats is None else stats.test
    counts = ("", "", "") if stats is None else (stats.wins, stats.ties, stats.losses)
    return (
        f"<td>{interval(None if stats is None else stats.interval)}</td>"
        + _cell(run, key, field, None if test is None else test.p_value, p_value_text(test))
        + "".join(f"<td>{count}</td>" for count in counts)
        + f'<td class="l {_finding("N/A" if stats is None else stats.finding)}">'
        f"{escape(finding_cell(stats))}</td>"
    )


def _slices(report: Report) -> str:
    """Each run's slice means (bounds and denominator) and judged@k, the slices too small to
    measure, then each comparison's tests per slice and measure under the family's correction, with
    each slice's cases now failing or worse (empty for a corpus without tags). Each number carries
    ``data-run``, ``data-slice``, ``data-measure``, ``data-slice-field`` (``slice-mean``,
    ``slice-judged``, ``slice-delta``, ``slice-p``, ``slice-adjusted-p``) and ``data-value``; a
    comparison's table and numbers carry ``data-against`` (the reference run, or ``baseline``)."""
    first = report.runs[0]
    if first.slices is None:
        return ""
    measures = _measures(first)
    head = "".join(f"<th>{escape(label)}</th>" for _, _, label in measures)
    rows = []
    for tag, _ in measured(first.slices):
        for run in report.runs:
            entry = (run.slices or {}).get(tag)
            if entry is None or entry.means is None:
                continue
            means = entry.means
            cells = "".join(
                _slice_cell(run.name, tag, key, "slice-mean", means.get(key))
                for _, key, _ in measures
            )
            judged = entry.judged
            rows.append(
                f'<tr data-run="{escape(run.name)}" data-slice="{escape(tag)}"><td class="l">{escape(tag)}</td>'
                f'<td>{entry.cases}</td><td class="l">{escape(run.name)}</td>{cells}'
                + _slice_cell(
                    run.name,
                    tag,
                    "judged",
                    "slice-judged",
                    judged,
                    lambda mean: number(None if mean is None else mean.value),
                )
                + "</tr>"
            )
    small = unmeasured_phrase(first.slices)
    parts = [
        f'<h2 id="slices">Slices</h2><p class="meta">Each slice\'s means over its cases: {MEAN_RANGE}; and '
        "(its denominator); hover a mean for its numerator.</p>",
        f'<table id="slice-means"><thead><tr><th>slice</th><th>cases</th><th class="l">run</th>{head}'
        f"<th>judged@k</th></tr></thead><tbody>{''.join(rows)}</tbody></table>",
        f'<p class="meta">{escape(small)}.</p>' if small else "",
    ]
    level = level_of(report)
    if report.comparison is not None:
        reference = str(report.comparison.reference)
        for candidate in report.comparison.candidates:
            parts.append(
                _slice_tests(str(candidate.run), reference, reference, candidate.slices, level)
            )
        if report.comparison.family is not None:
            parts.append(
                f'<p class="family">Slices against {escape(reference)}: '
                f"{escape(family_sentence(report.comparison.family))}.</p>"
            )
    for comparison in report.comparisons:
        against = f"the baseline {comparison.generation}"
        parts.append(
            _slice_tests(str(comparison.against), against, "baseline", comparison.slices, level)
        )
    if family := baseline_family(report):
        parts.append(
            f'<p class="family">Slices against the baseline: {escape(family_sentence(family))}.</p>'
        )
    return "".join(parts)


def _slice_cell(
    run: str, tag: str, key: str, field: str, mean: Mean | None, shown=mean_text
) -> str:
    tip = "" if mean is None else f' title="{mean.numerator:.4f} / {mean.denominator} cases"'
    return (
        f'<td data-run="{escape(run)}" data-slice="{escape(tag)}" data-measure="{escape(key)}" data-slice-field="{field}" '
        f'data-value="{_data(None if mean is None else mean.value)}"{tip}>{escape(shown(mean))}</td>'
    )


def _slice_tests(run: str, against: str, marker: str, slices: Slices | None, level: float) -> str:
    if slices is None:
        return ""

    def cell(test: SliceTest, field: str, value: float | None, text: str, css: str = "") -> str:
        return (
            f'<td class="{css}" data-run="{escape(run)}" data-against="{escape(marker)}" data-slice="{escape(test.tag)}" '
            f'data-measure="{escape(test.key)}" data-slice-field="{field}" data-value="{_data(value)}">{escape(text)}</td>'
        )

    rows = []
    tests = slice_tests(slices)
    tags, measures = (
        list(dict.fromkeys(test.tag for test in tests)),
        registry_order(dict.fromkeys(test.key for test in tests)),
    )
    for test in sorted(tests, key=lambda test: (tags.index(test.tag), measures.index(test.key))):
        entry, found = test.entry, test.entry.test
        rows.append(
            f'<tr><td class="l">{escape(test.tag)}</td><td>{test.cases}</td><td class="l">{escape(test.label)}</td>'
            + cell(test, "slice-delta", entry.delta, signed(entry.delta), _sign(entry.delta))
            + f"<td>{interval(entry.interval)}</td>"
            + cell(test, "slice-p", None if found is None else found.p_value, p_value_text(found))
            + cell(test, "slice-adjusted-p", entry.adjusted_p, test.adjusted)
            + f'<td class="l {_finding(entry.finding)}">{escape(finding_cell(entry))}</td>'
            f'<td class="l">{test.survives}</td></tr>'
        )
    notes = [f"not compared: {phrase}" for phrase in not_compared(slices)]
    notes += [f"now failing or worse in {phrase}" for phrase in failing_phrases(slices)]
    table = (
        f'<table class="slice-tests" data-run="{escape(run)}" data-against="{escape(marker)}"><thead><tr><th>slice</th>'
        f'<th>cases</th><th class="l">measure</th><th>Δ</th><th>{round(level * 100)}% CI</th><th>p</th>'
        '<th>adjusted p</th><th class="l">finding</th><th class="l">survives</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else ""
    )
    return (
        f'<h3>{escape(run)} <span class="meta">against {escape(against)}, by slice</span></h3>'
        + table
        + (_headlines(notes) if notes else "")
    )


def _baseline_changed(changed: tuple[BaselineCaseChange, ...]) -> str:
    if not changed:
        return '<p class="meta">No case changed against the baseline.</p>'
    failing = sum(1 for c in changed if c.passed.baseline and not c.passed.current)
    passing = sum(1 for c in changed if not c.passed.baseline and c.passed.current)
    keys = registry_order(changed[0].metrics)
    head = "".join(f"<th>{escape(Measure.parse(key).label)} was → now</th>" for key in keys)
    rows = []
    for change in changed:
        was, now = change.passed.baseline, change.passed.current
        flip = (
            ""
            if was == now
            else (
                ' <span class="flip">now failing</span>'
                if not now
                else ' <span class="better">now passing</span>'
            )
        )
        values = "".join(
            "<td>" + _pair(change.metrics[key]) + "</td>" if key in change.metrics else "<td></td>"
            for key in keys
        )
        rows.append(
            f'<tr data-case="{escape(change.id)}"><td class="l"><b>{escape(change.id)}</b>{flip}</td>'
            f"{values}</tr>"
        )
    cases = counted(len(changed), "case")
    return (
        f"<p>{cases} changed against the baseline ({failing} now failing, {passing} now passing):</p>"
        f'<table class="changed"><thead><tr><th class="l">case</th>{head}</tr></thead><tbody>{"".join(rows)}'
        "</tbody></table>"
    )


def _pair(entry: BaselineValue) -> str:
    delta = entry.delta
    return f"{number(entry.baseline)} → {number(entry.current)}" + (
        "" if delta is None else f" ({delta:+.4f})"
    )


def _verdict(report: Report) -> str:
    word, told = verdict_sentence(report)
    text = f"verdict: {word} — {told}"
    return f'<div id="verdict" class="verdict {report.verdict}" data-verdict="{report.verdict}">{escape(text)}</div>'


def _summary(report: Report) -> str:
    """Every run's means with deltas against the reference; then each candidate's significance per
    measure."""
    comparison = report.comparison
    candidates = {c.run: c for c in comparison.candidates} if comparison is not None else {}
    measures = _measures(report.runs[0])
    head = "".join(f"<th>{escape(label)}</th><th>Δ</th>" for _, _, label in measures)
    rows = []
    for index, run in enumerate(report.runs):
        name = run.name
        cells = [f'<td class="l">{escape(name)}</td><td class="l">{escape(run.channel)}</td>']
        candidate = candidates.get(name) if index else None
        for measure, key, _ in measures:
            mean = run.means.get(measure)
            if mean is None:
                cells.append("<td>N/A</td><td></td>")
                continue
            cells.append(
                _cell(
                    name,
                    key,
                    "mean",
                    mean.value,
                    mean_range(run, measure),
                    title=f"{mean.numerator:.4f} / {mean.denominator} cases"
                    + ("" if mean.high is None else f"; every hole relevant {mean.high:.4f}"),
                )
            )
            entry = None if candidate is None else candidate.measures.get(key)
            if entry is None and (comparison is not None or not report.comparisons):
                cells.append(
                    '<td class="unclear">reference</td>'
                    if index == 0 and comparison
                    else "<td></td>"
                )
                continue
            delta = (
                _baseline_delta(report, index, key) if entry is None else entry.delta
            )  # one run: the baseline's
            cells.append(_cell(name, key, "delta", delta, signed(delta), _sign(delta)))
        rows.append(f'<tr data-run="{escape(name)}">{"".join(cells)}</tr>')
    parts = [
        "<h2>Summary</h2>",
        f'<table id="summary"><thead><tr><th>run</th><th class="l">channel</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]
    parts += [  # what a run's channel could not verify (an outside retriever's coverage)
        f'<p class="meta" data-note="{escape(run.name)}">{escape(run.name)}: {escape(note)}</p>'
        for run in report.runs
        if (note := run.generation.verification.note)
    ]
    parts.append(
        '<p class="meta" id="judged">judged@k (judged rows in each top k; a mean a..b: the least and the greatest '
        "it takes however the holes are judged): "
        + "; ".join(
            f"{escape(run.name)} {number(run.judged.value)}, {run.holes} holes"
            for run in report.runs
            if run.judged is not None
        )
        + "</p>"
    )
    if comparison is None:
        against = "; Δ = run − baseline (see below)" if report.comparisons else ""
        parts.append(
            f'<p class="meta">Means over cases (hover a mean for its numerator and denominator){against}.</p>'
        )
        return "".join(parts)
    statistics = comparison.statistics
    level = round(statistics.bootstrap.level * 100)
    parts.append(
        f'<p class="meta">Means over cases (hover a mean for its numerator and denominator); '
        f"Δ = run − reference ({escape(str(comparison.reference))}).</p>"
        f'<h2>Is it more than noise?</h2><table id="significance"><thead><tr><th>run</th><th class="l">measure</th>'
        f"<th>Δ</th><th>{level}% CI</th><th>p</th><th>better</th><th>tied</th><th>worse</th>"
        f'<th class="l">finding</th></tr></thead><tbody>'
    )
    for candidate in comparison.candidates:
        name = str(candidate.run)
        for key, entry in _ordered(candidate.measures):
            parts.append(
                f'<tr><td class="l">{escape(name)}</td><td class="l">{escape(Measure.parse(key).label)}</td>'
                f'<td class="{_sign(entry.delta)}">{signed(entry.delta)}</td>'
                + _tested(name, key, "p", entry)
                + "</tr>"
            )
    parts.append("</tbody></table>")
    parts.append(
        f'<p class="meta">Paired by case. Interval: paired bootstrap percentile interval of the mean difference, '
        f"{statistics.bootstrap.resamples:,} resamples, seed {statistics.seed}. p: "
        f"{escape(statistics.permutation.alternative)} paired sign-flip (randomization) test, exact up to "
        f"{statistics.permutation.exact_limit} non-zero differences, else Monte Carlo (marked ~) with the same "
        f"resamples and seed. A run is called better or worse only when p &lt; {statistics.alpha:.2f}.</p>"
    )
    parts.append(
        _headlines(
            [
                sentence
                for candidate in comparison.candidates
                for sentence in candidate_findings(
                    candidate, comparison.reference, level_of(report)
                )
            ]
            + [
                f"{candidate.run}: {counted(candidate.flipped.now_failing, 'case')} now failing, "
                f"{candidate.flipped.now_passing} now passing"
                for candidate in comparison.candidates
            ]
        )
    )
    return "".join(parts)


def _cost(report: Report) -> str:
    """Each timed run's time per query (p50, p95), its difference from the reference run's, each
    stage's time and a variant's controls (empty when no run was timed). Each time carries
    ``data-run``, ``data-stage`` (``all``: every stage), ``data-cost`` (``p50_ms``, ``p95_ms``,
    ``delta_p50_ms``, ``delta_p95_ms``) and ``data-value`` (the report's float as Python's
    ``repr``)."""
    stages, timed = timed_runs(report)
    if not timed:
        return ""
    compared = report.comparison is not None

    def time(
        run: str, field: str, value: float | None, sign: bool = False
    ) -> str:  # a time of every stage
        return (
            f'<td data-run="{escape(run)}" data-stage="all" data-cost="{field}" data-value="{_data(value)}">'
            f"{escape(milliseconds(value, sign=sign))}</td>"
        )

    rows = []
    for run, cost, change in timed:
        cells = [
            f'<td class="l">{escape(run.name)}</td>',
            time(run.name, "p50_ms", cost.p50_ms),
            time(run.name, "p95_ms", cost.p95_ms),
        ]
        if compared:
            cells += (
                ["<td></td><td></td>"]
                if change is None
                else [
                    time(run.name, "delta_p50_ms", change.p50_ms, True),
                    time(run.name, "delta_p95_ms", change.p95_ms, True),
                ]
            )
        for name in stages:
            stage = cost.stages.get(name)
            cells.append(
                "<td></td>"
                if stage is None
                else f'<td class="l" data-run="{escape(run.name)}" data-stage="{escape(name)}">'
                f"{escape(stage_phrase(stage))}</td>"
            )
        controls = "" if run.variant is None else variant_sentence(run.variant)
        rows.append(
            f'<tr data-run="{escape(run.name)}">{"".join(cells)}<td class="l">{escape(controls)}</td></tr>'
        )
    head = (
        "<th>p50</th><th>p95</th>"
        + ("<th>Δ p50</th><th>Δ p95</th>" if compared else "")
        + "".join(f'<th class="l">{escape(name)}</th>' for name in stages)
    )
    against = (
        f"Δ = run − reference ({escape(str(report.comparison.reference))}). "
        if report.comparison is not None
        else ""
    )
    return (
        f'<h2>Time per query</h2><table id="cost"><thead><tr><th>run</th>{head}<th class="l">variant</th></tr>'
        f'</thead><tbody>{"".join(rows)}</tbody></table><p class="meta">{against}Measured inside the evaluation, '
        "each stage over the cases (p50, p95); a stage timed per batch charges each query an equal share of its "
        "batch; times are reported, and gated only with --max-p95-ms.</p>"
    )


def _headlines(sentences: list[str]) -> str:
    return (
        '<ul class="headlines">'
        + "".join(f"<li>{escape(sentence)}</li>" for sentence in sentences)
        + "</ul>"
    )


def _chart(report: Report) -> str:
    if report.comparison is None:
        return ""
    runs = {run.name: run for run in report.runs}
    reference = report.runs[0]
    measures = _measures(reference)
    radios = "".join(
        f'<label><input type="radio" name="chart-measure" value="{escape(key)}"{" checked" if key == CHART_MEASURE else ""}> '
        f"{escape(label)}</label>"
        for _, key, label in measures
    )
    parts = [
        "<h2>Per-case deltas</h2><p class=\"meta\">Each changed case's measure minus the reference's; "
        f'unchanged cases are left out.</p><div class="controls">{radios}</div>'
    ]
    for candidate in report.comparison.candidates:
        run = runs.get(str(candidate.run))
        if run is None:
            continue
        groups = [
            _bars(case_deltas(reference, run, name), key, label) for name, key, label in measures
        ]
        parts.append(
            f"<h3>{escape(str(candidate.run))} − {escape(reference.name)}</h3>" + "".join(groups)
        )
    return "".join(parts)


def _bars(deltas: list[tuple[str, float | None]], measure: str, label: str) -> str:
    changed = sorted(((d, case) for case, d in deltas if d), key=lambda item: item[0])
    hidden = "" if measure == CHART_MEASURE else " hidden"
    if not changed:
        return f'<div class="meta{hidden}" data-chart-measure="{escape(measure)}">no case changed on {escape(label)}</div>'
    more = len(changed) - MAX_CHART_CASES
    changed = (
        changed[: MAX_CHART_CASES // 2] + changed[-MAX_CHART_CASES // 2 :] if more > 0 else changed
    )
    row, left, half = 16, 220, 260
    width, height = left + 2 * half + 60, row * len(changed) + 30
    scale = max(abs(d) for d, _ in changed) or 1.0
    items = [
        f'<line x1="{left + half}" y1="0" x2="{left + half}" y2="{height - 20}" stroke="#8a93a5"/>'
    ]
    for i, (delta, case) in enumerate(changed):
        y = i * row + 2
        length = abs(delta) / scale * half
        x = left + half if delta > 0 else left + half - length
        colour = "#2f9a4f" if delta > 0 else "#c23b3b"
        items.append(
            f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{escape(case[:40])}</text>'
            f'<rect x="{x:.1f}" y="{y}" width="{max(length, 1):.1f}" height="{row - 4}" fill="{colour}">'
            f"<title>{escape(case)}: {delta:+.4f}</title></rect>"
            f'<text x="{left + 2 * half + 4}" y="{y + 11}">{delta:+.4f}</text>'
        )
    note = f'<p class="meta">{more} more changed cases not drawn.</p>' if more > 0 else ""
    return (
        f'<div class="chart{hidden}" data-chart-measure="{escape(measure)}"><svg '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)} delta per case">'
        + "".join(items)
        + f"</svg>{note}</div>"
    )


def _cases(report: Report) -> str:
    runs = report.runs
    found = changes(report)
    changed, flipped = (
        {entry.id for entry in found},
        {entry.id for entry in found if entry.flipped},
    )
    failing = {case.id for run in runs for case in run.cases if not case.passed}
    reference = runs[0].cases
    order = sorted(
        range(len(reference)),
        key=lambda i: (
            reference[i].id not in failing,
            reference[i].id not in flipped,
            reference[i].id not in changed,
        ),
    )
    by_run = [{case.id: case for case in run.cases} for run in runs]
    control = '<div class="controls"><label><input type="checkbox" id="changed-only"> only cases that changed</label></div>'
    parts = [
        "<h2>Cases</h2>",
        '<p class="meta">Failing cases first, then those that flipped, then those that changed.</p>',
        _legend(report),
        control if report.comparison is not None or report.comparisons else "",
    ]
    for i in order:
        case_id = reference[i].id
        parts.append(
            _case(
                reference[i],
                [lookup.get(case_id) for lookup in by_run],
                runs,
                case_id in flipped,
                case_id in changed,
                report.excerpts or {},
            )
        )
    return "".join(parts)


def _legend(report: Report) -> str:
    """What each marker of the case tables means; whether the report lists its holes and holds its
    rows' words."""
    holes = all(case.holes is not None for run in report.runs for case in run.cases)
    unmarked = (
        "Unmarked: a row judged not relevant."
        if holes
        else "This report does not list its holes (ptah-report@1): an unmarked row may be judged or not."
    )
    words = (
        "This report holds no words of its rows (made by an older ptah): the keys stand alone."
        if report.excerpts is None
        else "Beside each key, the first words of its row (its judging text)."
    )
    return (
        '<p class="legend" id="legend"><span class="k-required">required</span> a key the case requires; '
        '<span class="k-relevant">relevant</span> a key graded relevant; <span class="k-forbidden">forbidden</span> '
        'a key that must not be ranked; <span class="k-hole">hole</span> a row nobody judged for this case: it '
        "counts as not relevant, and a mean's high bound counts it relevant. "
        f"{escape(unmarked)} {escape(words)}</p>"
    )


def _case(
    first: CaseResult,
    cases: list[CaseResult | None],
    runs: tuple[Run, ...],
    flipped: bool,
    changed: bool,
    excerpts: Mapping[str, str],
) -> str:
    case_id = first.id
    required = set(first.required)
    relevant = {key for key, _ in first.relevant}
    forbidden = set(first.forbidden)
    status = " ".join(
        f"{escape(run.name)}: {'pass' if case and case.passed else 'FAIL'}"
        for run, case in zip(runs, cases)
    )
    failing = any(case is not None and not case.passed for case in cases)
    mark = ' <span class="flip">flipped</span>' if flipped else ""
    header = "".join(f'<th class="l">{escape(run.name)}</th>' for run in runs)
    depth = max(len(case.ranking) if case else 0 for case in cases)
    rows = []
    for rank in range(depth):
        cells = []
        for case in cases:
            if case is None or rank >= len(case.ranking):
                cells.append("<td></td>")
                continue
            result = case.ranking[rank]
            key = result.key
            css = (
                "k-forbidden"
                if key in forbidden
                else "k-required"
                if key in required
                else "k-relevant"
                if key in relevant
                else "k-hole"
                if key in {h.key for h in case.holes or ()}
                else ""
            )
            text = excerpts.get(key)
            shown = (
                ""
                if text is None
                else f'<span class="excerpt">{escape(text[:EXCERPT_CHARS])}</span>'
            )
            cells.append(
                f'<td class="{css}"><span class="mono">{escape(key)}</span> '
                f'<span class="meta">{result.score:.4f}</span>{shown}</td>'
            )
        rows.append(f"<tr><td>{rank + 1}</td>{''.join(cells)}</tr>")
    metrics = "".join(
        "<td>"
        + " · ".join(
            f"{escape(label)} {case_range(case, name)}" for name, _, label in _measures(run)
        )
        + "</td>"
        if case
        else "<td></td>"
        for run, case in zip(runs, cases)
    )
    missed = "".join(
        "<td>"
        + escape(
            "; ".join(f"missed {m.key} ({m.where})" for m in case.missed)
            + "".join(f"; leaked {h.key} (rank {h.rank})" for h in case.hits)
        )
        + "</td>"
        if case
        else "<td></td>"
        for case in cases
    )
    return (
        f'<details class="case" data-changed="{"yes" if changed else "no"}"{" open" if flipped or failing else ""}>'
        f"<summary><b>{escape(case_id)}</b>{mark} — {escape(first.query)} "
        f'<span class="meta">(k = {first.k}; {status})</span></summary>'
        f'<table class="results"><thead><tr><th>rank</th>{header}</tr></thead><tbody>{"".join(rows)}'
        f"<tr><td></td>{metrics}</tr><tr><td></td>{missed}</tr></tbody></table></details>"
    )


def _gates(report: Report) -> str:
    rows = "".join(
        f'<tr><td class="l">{escape(gate.name)}</td><td class="l">{escape(str(gate.generation))}</td>'
        f'<td class="l {gate_word(gate).lower()}">{gate_word(gate)}</td>'
        f'<td class="l">{escape(gate_detail(gate))}</td></tr>'
        for gate in report.gates
    ) + "".join(
        f'<tr class="stale"><td class="l">stale judgement</td><td class="l">{escape(stale.case)}</td>'
        f'<td class="l mono">{escape(stale.key)}</td><td class="l">{escape(stale.why)}</td></tr>'
        for stale in report.stale_judgements
    )
    bottom = _verdict(report).replace('id="verdict"', 'id="verdict-bottom"')
    return (
        '<h2>Gates</h2><table id="gates"><thead><tr><th>gate</th><th class="l">run</th><th class="l">verdict</th>'
        f'<th class="l">detail</th></tr></thead><tbody>{rows}</tbody></table>{bottom}'
    )


def pieces(report: Report, corpus=None) -> list[str]:
    """The ``html`` format (:mod:`ptah.render.formats`)."""
    return [render_html(report)]
