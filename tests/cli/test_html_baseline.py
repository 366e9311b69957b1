"""The HTML page of one run with ``--baseline``, and the trend page: rendered and photographed in
headless Chromium.

The page must show what the terminal shows against a baseline: the baseline's
means, the deltas (in the summary's Δ columns too), the intervals, the
p-values, the findings and the cases that changed, with failing cases first.
The test reads the DOM Chromium rendered (``--dump-dom``) and compares every
baseline number with the JSON report, and takes a screenshot of both pages
(``--screenshot``), checked to be a PNG of the window's size.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.cli.ci_project import evaluate, make_ci_project
from tests.cli.test_ci_outputs import ptah
from tests.cli.test_html_report import Numbers, needs_chromium, render_in_chromium

WINDOW = (1280, 1800)


def screenshot(page: Path, png: Path) -> tuple[int, int]:
    """Photograph ``page`` in headless Chromium; the PNG's (width, height)."""
    render_in_chromium(page, f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={png}")
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = make_ci_project(tmp_path_factory.mktemp("baseline-page"))
    code, _out, _err = ptah(
        *evaluate(
            folder,
            "-g",
            "small",
            "--baseline",
            folder / "base.json",
            "--max-recall-drop",
            "0.1",
            "--output",
            folder / "now.json",
            "--html",
            folder / "now.html",
        )
    )
    assert code == 1
    code, _out, _err = ptah(
        "report",
        "trend",
        folder / "base.json",
        folder / "now.json",
        "--html",
        folder / "trend.html",
    )
    assert code == 0
    return folder


@needs_chromium
def test_the_single_run_page_shows_every_baseline_number_the_terminal_shows(pages):
    report = json.loads((pages / "now.json").read_text())
    dom, console = render_in_chromium(pages / "now.html")
    assert console == []
    parser = Numbers()
    parser.feed(dom)
    found = {(c["data-run"], c["data-measure"], c["data-field"]): c for c in parser.cells}
    comparison = report["baseline"]["comparisons"][0]
    for key, entry in comparison["aggregates"].items():
        stats = comparison["significance"][key]
        expected = {
            "baseline": entry["baseline"],
            "current": entry["current"],
            "baseline-delta": entry["delta"],
            "delta": entry["delta"],
            "baseline-p": stats["test"]["p_value"],
        }
        for field, value in expected.items():
            cell = found[("small", key, field)]
            assert cell["data-value"] == repr(value), (key, field)
            text = cell["text"].strip()
            assert text == (f"{value:+.4f}" if "delta" in field else f"{value:.4f}"), (key, field)
        interval = stats["interval"]
        assert f"[{interval['low']:+.4f}, {interval['high']:+.4f}]" in dom
    assert comparison["aggregates"]["recall"]["delta"] == pytest.approx(0.5 - 2.5 / 3)
    assert "1 case changed against the baseline (1 now failing, 0 now passing)" in dom
    assert (
        '<tr data-case="c2"><td class="l"><b>c2</b> <span class="flip">now failing</span></td>'
        in dom
    )
    # failing cases first (the one that flipped before the other), opened; the passing case after
    # them
    order = [dom.index(f"<summary><b>{case}</b>") for case in ("c2", "c1", "c3")]
    assert order == sorted(order)
    assert (
        dom.count('<details class="case" data-changed="no" open="">') == 1
    )  # c1: failing, unchanged


@needs_chromium
def test_screenshots_of_the_baseline_page_and_the_trend_page(pages):
    for name in ("now", "trend"):
        assert screenshot(pages / f"{name}.html", pages / f"{name}.png") == WINDOW
        assert (pages / f"{name}.png").stat().st_size > 20_000  # drawn, not blank
    dom, console = render_in_chromium(pages / "trend.html")
    assert console == []
    report = json.loads((pages / "now.json").read_text())
    value = report["runs"][0]["aggregates"]["recall"]["value"]
    assert (
        f'data-series="small [vector]" data-measure="recall" data-created="{report["created_at"]}" '
        f'data-value="{value!r}"' in dom
    )
