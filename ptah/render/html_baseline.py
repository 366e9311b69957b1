"""The HTML page's baseline section: what the terminal shows of a run against ``--baseline``.

Per run: the baseline's mean, the run's mean, the delta, the paired bootstrap
interval, the p-value and the finding per measure, a sentence per measure,
and every case that changed against the baseline (flips first), each with
its values on both sides. Machine-checkable like the summary: each number
carries ``data-run``, ``data-measure``, ``data-field`` (``baseline``,
``current``, ``baseline-delta``, ``baseline-p``) and ``data-value``.
"""

from __future__ import annotations

from html import escape
from typing import Mapping

from ptah.core.measures import Measure
from ptah.core.report import Report
from ptah.core.significance import p_value_phrase, p_value_text


def baseline_delta(report: Report, index: int, key: str) -> float | None:
    """Run ``index``'s delta of measure ``key`` against the baseline (None: no baseline, or not measured)."""
    if index >= len(report.comparisons):
        return None
    entry = report.comparisons[index].data["aggregates"].get(key)
    return None if entry is None else entry["delta"]


def baseline_section(report: Report, cell, sign) -> str:
    """The section (empty without a baseline); ``cell`` and ``sign`` are the page's number cell and sign class."""
    if not report.comparisons:
        return ""
    baseline = report.baseline or {}
    parts = [
        '<h2 id="baseline">Against the baseline</h2>',
        f'<p class="meta">baseline <span class="mono">{escape(str(baseline.get("path")))}</span>, '
        f'corpus digest <span class="mono">{escape(str(baseline.get("digest")))}</span>: each run against the '
        "baseline's reference run, paired by case.</p>",
    ]
    for run, comparison in zip(report.runs, report.comparisons):
        parts.append(_run(run.name, run.channel, comparison.data, cell, sign))
    return "".join(parts)


def _run(name: str, channel: str, data: Mapping, cell, sign) -> str:
    significance = data.get("significance") or {}
    rows, sentences = [], []
    for key, entry in data["aggregates"].items():
        stats = significance.get(key) or {}
        interval, test = stats.get("interval"), stats.get("test")
        delta = entry["delta"]
        label = Measure.parse(key).label
        finding = stats.get("finding", "N/A")
        css = {"better": "better", "worse": "worse"}.get(finding, "unclear")
        rows.append(
            f'<tr><td class="l">{escape(label)}</td>'
            + cell(name, key, "baseline", entry["baseline"]) + cell(name, key, "current", entry["current"])
            + cell(name, key, "baseline-delta", delta, "N/A" if delta is None else f"{delta:+.4f}", sign(delta))
            + ("<td>N/A</td>" if interval is None else f"<td>[{interval['low']:+.4f}, {interval['high']:+.4f}]</td>")
            + cell(name, key, "baseline-p", None if test is None else test["p_value"], p_value_text(test))
            + f'<td>{stats.get("wins", "")}</td><td>{stats.get("ties", "")}</td><td>{stats.get("losses", "")}</td>'
            f'<td class="l {css}">{escape(finding)}</td></tr>'
        )
        if delta is not None and test is not None:
            sentences.append(f"{name} on {label}: {entry['baseline']:.4f} → {entry['current']:.4f} ({delta:+.4f}), "
                             f"{p_value_phrase(test)}: {finding}")
    table = (f'<h3>{escape(name)} <span class="meta">({escape(channel)}) against {escape(str(data.get("generation")))}'
             '</span></h3><table class="baseline"><thead><tr><th class="l">measure</th><th>baseline</th><th>now</th>'
             '<th>Δ</th><th>95% CI</th><th>p</th><th>better</th><th>tied</th><th>worse</th><th class="l">finding</th>'
             f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    headlines = '<ul class="headlines">' + "".join(f"<li>{escape(s)}</li>" for s in sentences) + "</ul>"
    return table + headlines + _changed(data["cases_changed"])


def _changed(changed: list) -> str:
    if not changed:
        return '<p class="meta">No case changed against the baseline.</p>'
    failing = sum(1 for c in changed if c["passed"]["baseline"] and not c["passed"]["current"])
    passing = sum(1 for c in changed if not c["passed"]["baseline"] and c["passed"]["current"])
    keys = list(changed[0]["metrics"])
    head = "".join(f"<th>{escape(Measure.parse(key).label)} was → now</th>" for key in keys)
    rows = []
    for change in changed:
        was, now = change["passed"]["baseline"], change["passed"]["current"]
        flip = "" if was == now else (' <span class="flip">now failing</span>' if not now
                                       else ' <span class="better">now passing</span>')
        values = "".join(
            "<td>" + _pair(change["metrics"][key]) + "</td>" if key in change["metrics"] else "<td></td>" for key in keys
        )
        rows.append(f'<tr data-case="{escape(change["id"])}"><td class="l"><b>{escape(change["id"])}</b>{flip}</td>'
                    f'{values}</tr>')
    cases = f'{len(changed)} case{"" if len(changed) == 1 else "s"}'
    return (f"<p>{cases} changed against the baseline ({failing} now failing, {passing} now passing):</p>"
            f'<table class="changed"><thead><tr><th class="l">case</th>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def _pair(entry: Mapping) -> str:
    def shown(value):
        return "N/A" if value is None else f"{value:.4f}"

    delta = entry["delta"]
    return f"{shown(entry['baseline'])} → {shown(entry['current'])}" + ("" if delta is None else f" ({delta:+.4f})")
