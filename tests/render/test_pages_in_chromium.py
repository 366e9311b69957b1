"""The trend page drawn by headless Chromium at 1280 and 800 px: no text of a chart over another,
each chart in the window.

Screenshots: ``test-artifacts/pages/`` (:mod:`tests.render.pages`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from ptah.core.report import Report
from ptah.render.trend import render_trend
from tests.cli.test_html_report import needs_chromium
from tests.render.pages import WIDTHS, layout, text_overlaps
from tests.render.reports import compared


def daily_reports(days: int) -> list[Report]:
    """``days`` reports a day apart, two runs each (the trend page's two series)."""
    start = datetime(2026, 1, 1, 6, tzinfo=UTC)
    reports = []
    for day in range(days):
        data = copy.deepcopy(compared())
        data["created_at"] = (start + timedelta(days=day, minutes=7 * day)).isoformat()
        reports.append(Report.from_dict(data))
    return reports


@needs_chromium
@pytest.mark.parametrize("width", WIDTHS)
def test_the_trend_pages_dates_never_overprint(width):
    found = layout(render_trend(daily_reports(40)), "trend", width)
    charts = [chart for chart in found["charts"] if chart["label"].endswith("over time")]
    assert [chart["label"] for chart in charts] == [
        "recall over time",
        "MRR over time",
        "nDCG over time",
        "MAP@10 over time",
    ]
    for chart in charts:
        assert text_overlaps(chart) == []
        ticks = [text for text in chart["texts"] if text["cls"] == "x-tick"]
        # 40 days in 620 px: 15.9 px a day, a date needs 80: every sixth day is labelled
        assert [text["text"] for text in ticks] == [
            f"2026-01-{day:02d}" for day in range(1, 32, 6)
        ] + ["2026-02-06"]
        left, _, right, _ = chart["box"]
        assert (
            0 <= left and right <= width
        )  # the chart fits the window: it scales, its labels with it
        assert all(left <= text["box"][0] and text["box"][2] <= right for text in ticks)
    assert found["scrollWidth"] <= width
