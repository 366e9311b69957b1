"""Pages people read: each ranked key with its row's first words, the legend's hole, time axes, the
registry's order.

The same pages drawn by Chromium at 1280 and 800 px: ``test_pages_in_chromium.py``.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime, timedelta

from ptah.core.report import EXCERPT_CHARS, Report, excerpt
from ptah.render.html import render_html
from ptah.render.timeaxis import time_axis
from ptah.render.trend import render_trend
from tests.render.reports import compared, document, mean

REGISTRY_ORDER = ["recall", "MRR", "nDCG", "MAP@10", "P@2"]


def with_p_at_2_first(data: dict) -> dict:
    """The report with P@2 measured too, written (as a request naming P@2 before MAP@10 writes it)
    before MAP@10."""
    data = copy.deepcopy(data)
    for run in data["runs"]:
        aggregates = run["aggregates"]
        run["aggregates"] = (
            {key: aggregates[key] for key in ("recall", "mrr", "ndcg")}
            | {"P@2": mean(0.5, 2), "MAP@10": aggregates["MAP@10"]}
            | {
                key: value
                for key, value in aggregates.items()
                if key not in ("recall", "mrr", "ndcg", "MAP@10")
            }
        )
        for case in run["cases"]:
            metrics = case["metrics"]
            case["metrics"] = {
                "recall": metrics["recall"],
                "mrr": metrics["mrr"],
                "ndcg": metrics["ndcg"],
                "P@2": 0.5,
                "MAP@10": metrics["MAP@10"],
            }
    for candidate in (data["comparison"] or {}).get("candidates", ()):
        measures = candidate["measures"]
        candidate["measures"] = {key: measures[key] for key in ("recall", "mrr", "ndcg")} | {
            "P@2": measures["recall"],
            "MAP@10": measures["MAP@10"],
        }
    return data


def with_excerpts(data: dict, excerpts: dict) -> dict:
    data = copy.deepcopy(data)
    data["format"] = "ptah-report@2"
    data["stale_judgements"] = []
    data["excerpts"] = excerpts
    return data


def test_the_report_page_follows_the_registry_not_the_reports_order():
    html = render_html(Report.from_dict(with_p_at_2_first(compared())))
    summary = html[html.index('<table id="summary">') :]
    assert (
        re.findall(r"<th>([^<Δ]+)</th><th>Δ</th>", summary[: summary.index("</thead>")])
        == REGISTRY_ORDER
    )
    assert (
        re.findall(r'name="chart-measure" value="[^"]+"[^>]*> ([^<]+)</label>', html)
        == REGISTRY_ORDER
    )
    significance = html[html.index('<table id="significance">') :]
    assert (
        re.findall(r'<tr><td class="l">worse</td><td class="l">([^<]+)</td>', significance)
        == REGISTRY_ORDER
    )
    assert (
        "<td>recall 1.0000 · MRR 0.5000 · nDCG 0.6309 · MAP@10 0.5000 · P@2 0.5000</td>"
    ) in html


def test_the_trend_page_follows_the_registry_not_the_reports_order():
    html = render_trend([Report.from_dict(with_p_at_2_first(document()))])
    assert re.findall(r"<h2>([^<]+)</h2>", html) == [*REGISTRY_ORDER, "Every point"]
    points = html[html.index('<table id="points">') :]
    assert (
        re.findall(r'<td class="l">base \[vector\]</td><td class="l">([^<]+)</td>', points)
        == REGISTRY_ORDER
    )


def test_the_time_axis_keeps_a_label_only_where_it_fits_beside_the_last():
    start = datetime(2026, 1, 1, 12, tzinfo=UTC)
    axis = time_axis([start + timedelta(days=day) for day in range(30)], 60, 620)
    ticks = axis.ticks()
    # 30 days in 620 px: 21.4 px a day; a date needs 10 * 7 + 10 = 80 px, so every fourth day is
    # labelled
    assert [label for _, label in ticks] == [f"2026-01-{day:02d}" for day in range(1, 31, 4)]
    assert all(b - a >= 80 for (a, _), (b, _) in zip(ticks, ticks[1:]))
    one_day = time_axis([start, start + timedelta(minutes=3), start + timedelta(minutes=7)], 0, 600)
    assert [label for _, label in one_day.ticks()] == ["12:00:00", "12:03:00", "12:07:00"]
    assert ">time of day, UTC, 2026-01-01</text>" in one_day.svg(100)
    alone = time_axis([datetime(2026, 1, 1)], 10, 100)  # no zone: read as UTC
    assert alone.ticks() == [(60.0, "00:00:00")]


def test_each_ranked_key_shows_its_rows_first_words_escaped_and_cut():
    long = "title: <b>Reset</b> your password · body: " + "word " * 100
    html = render_html(
        Report.from_dict(with_excerpts(compared(), {"d1": long, "d2": "title: Plans & prices"}))
    )
    assert (
        '<td class="k-relevant"><span class="mono">d1</span> <span class="meta">0.9000</span>'
        f'<span class="excerpt">{long[:EXCERPT_CHARS].replace("<", "&lt;").replace(">", "&gt;")}</span></td>'
    ) in html
    assert (
        '<td class=""><span class="mono">d2</span> <span class="meta">0.8000</span>'
        '<span class="excerpt">title: Plans &amp; prices</span></td>'
    ) in html
    assert '<td class=""><span class="mono">d3</span> <span class="meta">0.9000</span></td>' in html
    assert "Beside each key, the first words of its row (its judging text)." in html


def test_the_legend_explains_the_hole_marker():
    html = render_html(Report.from_dict(with_excerpts(compared(), {})))
    legend = html[html.index('<p class="legend" id="legend">') :]
    legend = legend[: legend.index("</p>")]
    assert (
        '<span class="k-hole">hole</span> a row nobody judged for this case: it counts as not relevant, and a '
        "mean's high bound counts it relevant."
    ) in legend
    assert "Beside each key, the first words of its row (its judging text)." in legend
    older = render_html(Report.from_dict(compared()))  # ptah-report@1: no holes listed, no excerpts
    assert "This report does not list its holes (ptah-report@1)" in older
    assert (
        "This report holds no words of its rows (made by an older ptah): the keys stand alone."
        in older
    )
    assert 'class="excerpt"' not in older


def test_an_excerpt_is_each_line_s_words_joined_and_cut():
    assert excerpt("title: Reset  your\tpassword\n\nbody: Open\n  Settings ") == (
        "title: Reset your password · body: Open · Settings"
    )
    cut = excerpt("x" * 500)
    assert len(cut) == EXCERPT_CHARS and cut == "x" * (EXCERPT_CHARS - 1) + "…"
