"""``evaluate --html``: one self-contained page, rendered in a real headless Chromium.

The page is loaded from a file with the network disabled; Chromium logs every
console message -- ``console.log``/``console.error``, an uncaught exception,
a resource the page's Content-Security-Policy blocks -- to stderr as
``...:INFO:CONSOLE...``, so the test demands there be none at all, and reads
the DOM as rendered (after the script ran) from ``--dump-dom``.

Skipped only when Chromium is absent and ``CI`` is not set; in CI it runs
(``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ptah.core.estimate import mean_completions
from ptah.core.measures import Measure
from ptah.core.report import EXCERPT_CHARS, Report, excerpt
from ptah.render.html import render_html
from tests.cli.conftest import EXAMPLE, evaluate
from tests.conftest import run_cli

ARTICLES = EXAMPLE / "articles.jsonl"
CHROMIUM = shutil.which("chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed (apt-get install chromium); CI installs it and runs this test",
)


def render_in_chromium(page: Path, *options: str) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message Chromium logged (``options``:
    more flags)."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    with tempfile.TemporaryDirectory(prefix="ptah-chromium-") as profile:
        result = subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                *options,
                "--dump-dom",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


class Numbers(HTMLParser):
    """Every element carrying data-field, with its attributes and text; and the <html> element's
    attributes."""

    def __init__(self):
        super().__init__()
        self.cells: list[dict] = []
        self.root: dict = {}
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "html":
            self.root = attributes
        if "data-field" in attributes:
            self._open = attributes | {"text": ""}

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag):
        if tag == "td" and self._open is not None:
            self.cells.append(self._open)
            self._open = None


def expected_numbers(report: dict) -> dict[tuple[str, str, str], float | None]:
    numbers = {}
    for run in report["runs"]:
        for measure in ("recall", "mrr", "ndcg"):
            numbers[(run["generation"]["name"], measure, "mean")] = run["aggregates"][measure][
                "value"
            ]
    for candidate in report["comparison"]["candidates"]:
        for measure, entry in candidate["measures"].items():
            numbers[(candidate["run"], measure, "delta")] = entry["delta"]
            numbers[(candidate["run"], measure, "p")] = entry["test"]["p_value"]
    return numbers


@pytest.fixture(scope="module")
def page(example_project, tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    run_cli(
        None,
        *evaluate(
            example_project,
            "-g",
            "title-body",
            "-g",
            "body-only",
            "--channel",
            "vector",
            "--channel",
            "lexical",
            "--output",
            folder / "report.json",
            "--html",
            folder / "report.html",
        ),
    )
    return folder / "report.html", json.loads((folder / "report.json").read_text())


@needs_chromium
def test_the_page_renders_without_console_errors_and_its_numbers_are_the_reports(page):
    path, report = page
    dom, console = render_in_chromium(path)
    assert console == []
    parser = Numbers()
    parser.feed(dom)
    assert parser.root.get("data-ready") == "yes"  # the script ran to its end
    found = {(c["data-run"], c["data-measure"], c["data-field"]): c for c in parser.cells}
    expected = expected_numbers(report)
    typed = Report.from_dict(report)
    assert set(found) == set(expected)
    assert (
        len(expected) == 4 * 3 + 3 * 3 * 2
    )  # four runs' means; three candidates' deltas and p-values
    for where, value in expected.items():
        cell = found[where]
        assert cell["data-value"] == repr(value), where
        shown = cell["text"].strip().lstrip("~")
        if where[2] == "delta":
            assert shown == f"{value:+.4f}", where
        elif where[2] == "p" and value < 0.0001:
            assert shown == "<0.0001", where
        elif (
            where[2] == "mean"
        ):  # a mean the holes move reads its least..greatest over every way to judge them
            run = next(r for r in typed.runs if r.generation.name == where[0])
            bounds = mean_completions(run.cases, Measure.parse(where[1]))
            moved = bounds is not None and f"{bounds[0]:.4f}" != f"{bounds[1]:.4f}"
            assert shown == (f"{bounds[0]:.4f}..{bounds[1]:.4f}" if moved else f"{value:.4f}"), (
                where
            )
        else:
            assert shown == f"{value:.4f}", where
    assert f'data-verdict="{report["verdict"]}"' in dom
    assert "verdict: FAIL" in dom and report["verdict"] == "fail"


@needs_chromium
def test_the_console_check_catches_a_broken_page(page, tmp_path):
    broken = tmp_path / "broken.html"
    html = page[0].read_text()
    broken.write_text(
        html.replace(
            "</body>", '<img src="https://example.com/x.png"><script>missing();</script></body>'
        )
    )
    _dom, console = render_in_chromium(broken)
    assert any("Content Security Policy" in line for line in console)
    assert any("missing is not defined" in line for line in console)


def test_the_page_is_self_contained_and_escapes_what_it_shows(page):
    path, report = page
    html = path.read_text()
    assert not re.search(r"""\b(src|href)\s*=""", html)  # no resource of any kind is loaded
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for case in report["runs"][0]["cases"]:
        assert f"<b>{case['id']}</b>" in html
    hostile = json.loads(json.dumps(report))
    hostile["runs"][0]["cases"][0]["id"] = "<script>alert(1)</script>"
    assert "<script>alert(1)</script>" not in render_html(Report.from_dict(hostile))


def test_the_report_holds_each_ranked_keys_judging_text_cut_to_an_excerpt(page):
    _path, report = page
    ranked = {
        result["key"]
        for run in report["runs"]
        for case in run["cases"]
        for result in case["results"]
    }
    articles = {str(row["id"]): row for row in map(json.loads, ARTICLES.read_text().splitlines())}
    # the judging text: every column a template uses, labelled (the example's are title and body)
    assert report["excerpts"] == {
        key: excerpt(f"title: {articles[key]['title']}\nbody: {articles[key]['body']}")
        for key in sorted(ranked, key=int)
    }
    assert report["excerpts"]["104"] == (
        "title: Passing card fees on to your clients · body: In Settings → Payments → "
        "Surcharge, add a perce…"
    )


def test_excerpts_read_back_from_the_saved_report_and_the_schema_bounds_each(page, tmp_path):
    from ptah.core.errors import ReportError
    from ptah.services.evaluate import load_baseline

    path, report = page
    assert dict(load_baseline(path.with_name("report.json")).excerpts) == report["excerpts"]
    long = json.loads(json.dumps(report))
    long["excerpts"]["104"] = "x" * (EXCERPT_CHARS + 1)
    (tmp_path / "long.json").write_text(json.dumps(long))
    with pytest.raises(ReportError) as refused:
        load_baseline(tmp_path / "long.json")
    assert str(refused.value) == (
        f"{tmp_path / 'long.json'}: excerpts[104] does not match the report schema "
        "(maxLength); the report is damaged"
    )


@needs_chromium
@pytest.mark.parametrize("width", [1280, 800])
def test_at_each_width_each_key_shows_its_rows_first_words_and_the_legend_explains_the_hole(
    page, width
):
    from tests.render.pages import layout, text_overlaps

    path, report = page
    found = layout(path.read_text(), "report", width, height=9000)
    shown = [
        cell for cell in found["cells"] if cell["keyBox"][2] > cell["keyBox"][0]
    ]  # the open (failing) cases'
    assert len(shown) >= 20
    for cell in shown:
        assert cell["words"] == report["excerpts"][cell["key"]]
        left, top, right, bottom = cell["wordsBox"]
        cell_left, _, cell_right, cell_bottom = cell["cell"]
        assert right - left > 60 and bottom - top > 10, cell  # drawn, a line at least
        assert cell_left <= left and right <= cell_right and bottom <= cell_bottom, (
            cell
        )  # in its cell
        assert top >= cell["keyBox"][3] - 1, cell  # under its key
    legend = found["legend"]
    assert legend["box"][3] > legend["box"][1]
    assert (
        "hole a row nobody judged for this case: it counts as not relevant, and a mean's high bound counts it "
        "relevant."
    ) in legend["text"]
    assert "Beside each key, the first words of its row (its judging text)." in legend["text"]
    for chart in found["charts"]:
        assert text_overlaps(chart) == []
        assert chart["box"][2] <= width
    assert found["scrollWidth"] <= width  # a table wider than the window scrolls inside itself
