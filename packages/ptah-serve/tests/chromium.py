"""Pages in headless Chromium: the DOM after their scripts ran, and their layout as drawn at a given
width, with a screenshot kept as a test artefact.

:func:`layout` loads a copy of the page with a probe script added (and the
page's Content-Security-Policy meta tag dropped from the copy, since the
server's pages allow no script); the probe measures what a reader sees --
every SVG text's box, each case table cell's key and words, the legend, each
chart's and the page's width -- and leaves it as JSON in ``data-layout`` on
``<html>``, which ``--dump-dom`` returns. The same Chromium run writes the
screenshot ``test-artifacts/pages/NAME-WIDTH.png`` (``PTAH_TEST_ARTIFACTS``
moves it) for a person to look at. CI installs Debian's ``chromium``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html import unescape
from pathlib import Path

import pytest

ARTIFACTS = Path(os.environ.get("PTAH_TEST_ARTIFACTS", Path.cwd() / "test-artifacts")) / "pages"
WIDTHS = (1280, 800)
HEIGHT = 2400  # the screenshot's; a longer page is cut there (``layout(..., height=)`` for more)
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


PROBE = """<script>(function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
  var out = {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, charts: [], cells: [],
             legend: null, headings: []};
  document.querySelectorAll('svg').forEach(function (svg) {
    out.charts.push({label: svg.getAttribute('aria-label'), box: box(svg),
      texts: Array.prototype.map.call(svg.querySelectorAll('text'), function (t) {
        return {text: t.textContent, cls: t.getAttribute('class'), box: box(t)}; })});
  });
  document.querySelectorAll('table.results td').forEach(function (td) {
    var key = td.querySelector('.mono'), words = td.querySelector('.excerpt');
    if (!key) return;
    out.cells.push({key: key.textContent, cell: box(td), keyBox: box(key),
                    words: words ? words.textContent : null, wordsBox: words ? box(words) : null});
  });
  var legend = document.getElementById('legend');
  if (legend) out.legend = {text: legend.textContent, box: box(legend)};
  document.querySelectorAll('h2, figcaption').forEach(function (h) { out.headings.push(h.textContent); });
  document.documentElement.setAttribute('data-layout', JSON.stringify(out));
})();</script>"""


def layout(html: str, name: str, width: int, height: int = HEIGHT) -> dict:
    """What the probe measured on ``html`` in a window ``width`` px wide (screenshot:
    ``ARTIFACTS/NAME-WIDTH.png``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    probed = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    probed = probed.replace("</body>", PROBE + "</body>")
    with tempfile.TemporaryDirectory(prefix="ptah-chromium-") as folder:
        page = Path(folder) / f"{name}.html"
        page.write_text(probed, encoding="utf-8")
        shot = ARTIFACTS / f"{name}-{width}.png"
        dom, _ = render_in_chromium(
            page, f"--window-size={width},{height}", "--hide-scrollbars", f"--screenshot={shot}"
        )
    assert shot.stat().st_size > 0
    found = re.search(r'<html[^>]*\sdata-layout="([^"]*)"', dom)
    assert found is not None, "the probe did not run"
    measured = json.loads(unescape(found.group(1)))
    assert measured["width"] == width
    return measured


def overlapping(boxes: list[tuple[str, list[float]]]) -> list[tuple[str, str]]:
    """Each pair of named boxes (left, top, right, bottom) that overlap by more than a pixel's
    rounding."""
    found = []
    for i, (a, (l1, t1, r1, b1)) in enumerate(boxes):
        for b, (l2, t2, r2, b2) in boxes[i + 1 :]:
            if min(r1, r2) - max(l1, l2) > 0.5 and min(b1, b2) - max(t1, t2) > 0.5:
                found.append((a, b))
    return found


def text_overlaps(chart: dict) -> list[tuple[str, str]]:
    """The texts of one chart drawn over one another (labels, ticks, legend, caption)."""
    return overlapping(
        [(text["text"], text["box"]) for text in chart["texts"] if text["box"][2] > text["box"][0]]
    )
