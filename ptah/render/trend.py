"""Means over time: one self-contained HTML page from several saved reports (``ptah report trend``).

One chart per measure (the measures of the first report's first run, in the
measure registry's order): x is each report's ``created_at`` on a time axis
whose labels never overlap (:mod:`ptah.render.timeaxis`), y the mean (0 to 1);
one line per series --
a generation name and channel -- through its means, each with its interval:
the percentile bootstrap interval of the mean over the run's case values
(:data:`RESAMPLES` resamples, seed 0, the report's level when it recorded
one, else 95%). A table lists every point with its corpus digest and
generation identity; when the reports measured different corpora (or a
series' identity changed) the page says so, since a mean moves with its
corpus as much as with its model.

Self-contained like the report page: inline CSS and SVG, no script, and a
Content-Security-Policy that forbids every network resource. Each point
carries ``data-series``, ``data-measure``, ``data-created`` and
``data-value`` (Python's ``repr`` of the mean, or ``null``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from ptah.core.measures import Measure, registry_order
from ptah.core.report import Report, Run
from ptah.core.significance import DEFAULT_LEVEL, paired_bootstrap
from ptah.render.timeaxis import time_axis

RESAMPLES = 1000
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
COLOURS = ("#1f6fb4", "#d2691e", "#2f9a4f", "#8e44ad", "#c23b3b", "#4f6d7a", "#b8860b", "#17a2b8")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 900, 300, 60, 220, 20, 50

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1d2430}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin:2rem 0 .5rem;border-bottom:1px solid #dde2ea}
.meta{color:#5b6578;font-size:.85rem}.mono{font-family:ui-monospace,Menlo,monospace}.warn{color:#8c1d1d}
table{border-collapse:collapse}th,td{padding:.2rem .6rem;border-bottom:1px solid #e6e9ef;text-align:right}
th:first-child,td:first-child,td.l,th.l{text-align:left}svg text{font:11px system-ui,sans-serif;fill:#1d2430}
svg{max-width:100%;height:auto}
"""


def created(report: Report) -> datetime:
    """When the report was made (``ValueError`` when ``created_at`` is not ISO 8601); UTC when it
    names no zone."""
    when = datetime.fromisoformat(report.created_at.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def series_name(run: Run) -> str:
    return f"{run.name} [{run.channel}]"


def interval(run: Run, measure: str, level: float) -> tuple[float, float] | None:
    """The bootstrap interval of the run's mean of ``measure`` over its defined case values."""
    values = [case.values.get(measure) for case in run.cases]
    defined = [value for value in values if value is not None]
    found = paired_bootstrap(defined, RESAMPLES, 0, level) if defined else None
    return None if found is None else (found.low, found.high)


@dataclass(frozen=True)
class Point:
    """One run's mean of one measure in one report: when the report was made (and as it says so),
    the run's series, the measure, the mean (None: N/A) and its interval, the corpus digest and the
    generation identity."""

    when: datetime
    created_at: str
    series: str
    measure: str
    value: float | None
    interval: tuple[float, float] | None
    digest: str
    identity: str


def points(reports: Sequence[Report]) -> list[Point]:
    """Every (report, run, measure) point, oldest report first."""
    found = []
    for report in sorted(reports, key=created):
        level = DEFAULT_LEVEL
        if report.comparison is not None:
            level = report.comparison.statistics.bootstrap.level
        for run in report.runs:
            for name in registry_order(run.means):
                mean = run.means[name]
                found.append(
                    Point(
                        when=created(report),
                        created_at=report.created_at,
                        series=series_name(run),
                        measure=name,
                        value=mean.value,
                        interval=interval(run, name, level),
                        digest=report.corpus.digest,
                        identity=run.generation.identity,
                    )
                )
    return found


def render_trend(reports: Sequence[Report]) -> str:
    """The page (module docs)."""
    found = points(reports)
    measures = registry_order(reports[0].runs[0].means) if reports else []
    series = list(dict.fromkeys(point.series for point in found))
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(series)}
    digests = list(dict.fromkeys(point.digest for point in found))
    identities: dict[str, set[str]] = {}
    for point in found:
        identities.setdefault(point.series, set()).add(point.identity)
    notes = []
    if len(digests) > 1:
        notes.append(
            f"These reports measured {len(digests)} different corpora (digests in the table): "
            "a mean that moves where the digest changes may have moved with the corpus."
        )
    changed = [name for name, seen in identities.items() if len(seen) > 1]
    if changed:
        notes.append(
            "The generation identity changed within "
            + ", ".join(changed)
            + " (a new model or text)."
        )
    body = [
        "<h1>ptah: means over time</h1>",
        f'<p class="meta">{len(reports)} reports, {len(series)} series; each mean with its {RESAMPLES:,}-resample '
        "bootstrap interval over its cases.</p>",
        *(f'<p class="warn">{escape(note)}</p>' for note in notes),
        *(_chart(found, measure, series, colour) for measure in measures),
        _table(found),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>ptah: means over time</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _chart(found: list[Point], measure: str, series: list[str], colour: dict) -> str:
    mine = [point for point in found if point.measure == measure]
    label = Measure.parse(measure).label
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    axis = time_axis([point.when for point in mine] or [datetime.now(UTC)], LEFT, plot_w)

    def x(point: Point) -> float:
        return axis.x(point.when)

    def y(value: float) -> float:
        return TOP + (1 - value) * plot_h

    items = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        items.append(
            f'<line x1="{LEFT}" y1="{y(tick):.1f}" x2="{LEFT + plot_w}" y2="{y(tick):.1f}" stroke="#e6e9ef"/>'
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>'
        )
    items.append(axis.svg(HEIGHT - BOTTOM + 18))
    for index, name in enumerate(series):
        # each point of the series with a mean, and the mean
        line = [
            (point, value)
            for point in mine
            if point.series == name and (value := point.value) is not None
        ]
        if len(line) > 1:
            path = " ".join(f"{x(p):.1f},{y(value):.1f}" for p, value in line)
            items.append(
                f'<polyline points="{path}" fill="none" stroke="{colour[name]}" stroke-width="2"/>'
            )
        for point, value in line:
            px = x(point)
            if point.interval is not None:
                low, high = point.interval
                items.append(
                    f'<path d="M{px:.1f},{y(high):.1f}V{y(low):.1f}M{px - 5:.1f},{y(high):.1f}h10'
                    f'M{px - 5:.1f},{y(low):.1f}h10" stroke="{colour[name]}" stroke-opacity="0.6" fill="none"/>'
                )
            shown = (
                ""
                if point.interval is None
                else f" [{point.interval[0]:.4f}, {point.interval[1]:.4f}]"
            )
            items.append(
                f'<circle cx="{px:.1f}" cy="{y(value):.1f}" r="4" fill="{colour[name]}" '
                f'data-series="{escape(name)}" data-measure="{escape(Measure.parse(measure).key)}" '
                f'data-created="{escape(point.created_at)}" data-value="{value!r}">'
                f"<title>{escape(name)} {escape(point.created_at)}: {label} {value:.4f}{shown}</title></circle>"
            )
        ly = TOP + 14 * index + 6
        items.append(
            f'<rect x="{WIDTH - RIGHT + 16}" y="{ly - 8}" width="10" height="10" fill="{colour[name]}"/>'
            f'<text x="{WIDTH - RIGHT + 32}" y="{ly + 1}">{escape(name[:28])}</text>'
        )
    return (
        f'<h2>{escape(label)}</h2><svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)} over time">' + "".join(items) + "</svg>"
    )


def _table(found: list[Point]) -> str:
    rows = []
    for point in found:
        value = "N/A" if point.value is None else f"{point.value:.4f}"
        bounds = (
            "N/A"
            if point.interval is None
            else f"[{point.interval[0]:.4f}, {point.interval[1]:.4f}]"
        )
        rows.append(
            f'<tr><td class="l">{escape(point.created_at)}</td><td class="l">{escape(point.series)}</td>'
            f'<td class="l">{escape(Measure.parse(point.measure).label)}</td><td>{value}</td><td>{bounds}</td>'
            f'<td class="l mono">{escape(str(point.digest)[:19])}…</td>'
            f'<td class="l mono">{escape(str(point.identity)[:19])}…</td></tr>'
        )
    return (
        '<h2>Every point</h2><table id="points"><thead><tr><th>created</th><th class="l">series</th>'
        '<th class="l">measure</th><th>mean</th><th>interval</th><th class="l">corpus digest</th>'
        f'<th class="l">identity</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
