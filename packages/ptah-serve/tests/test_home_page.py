"""The server's page follows the measure registry's order, not a report's, and places its trend
charts' points by time."""

from __future__ import annotations

import re

from ptah_serve.page import render_home

REGISTRY_ORDER = ["recall", "MRR", "nDCG", "MAP@10", "P@2"]


def job(job_id: str, created_at: str, means: dict) -> dict:
    return {
        "id": job_id,
        "corpus": "sha256:c",
        "created_at": created_at,
        "status": "done",
        "verdict": "pass",
        "error": None,
        "runs": [{"name": "docs", "generation": "docs", "channel": "vector", "means": means}],
    }


CORPUS = {
    "digest": "sha256:c",
    "name": "support",
    "cases": 8,
    "split": None,
    "registered_at": "2026-01-01T00:00:00+00:00",
}


def stored_means(value: float) -> dict:
    """A job's means as the store keeps them: keys sorted (``json.dumps(sort_keys=True)``)."""
    return {
        name: {"value": value, "numerator": value, "denominator": 1}
        for name in sorted(REGISTRY_ORDER)
    }


def test_the_servers_page_follows_the_registry_and_draws_time_on_its_x_axis():
    jobs = [
        job("e1", "2026-03-01T10:00:00.000+00:00", stored_means(0.5)),
        job("e2", "2026-03-05T10:00:00.000+00:00", stored_means(0.75)),
        job("e3", "2026-03-09T10:00:00.000+00:00", stored_means(1.0)),
    ]
    html = render_home([CORPUS], jobs)
    assert re.findall(r"<figcaption>([^<]+)</figcaption>", html) == REGISTRY_ORDER
    assert "docs: recall 1.0000, MRR 1.0000, nDCG 1.0000, MAP@10 1.0000, P@2 1.0000" in html
    chart = html[html.index('<figure data-chart-measure="recall">') : html.index("</figure>")]
    assert re.findall(r'<text class="x-tick" x="([^"]+)"[^>]*>([^<]+)</text>', chart) == [
        ("50.0", "2026-03-01"),
        ("260.0", "2026-03-05"),
        ("470.0", "2026-03-09"),
    ]
    assert '<text class="x-caption"' in chart and ">date, UTC</text>" in chart
    # placed by time: a day is 1/8 of the plot's 420 px
    assert re.findall(r'<circle cx="([^"]+)"', chart) == ["50.0", "260.0", "470.0"]
    crowded = render_home(
        [CORPUS],
        [
            job(f"e{day}", f"2026-03-{day:02d}T10:00:00.000+00:00", stored_means(0.5))
            for day in range(1, 10)
        ],
    )
    chart = crowded[
        crowded.index('<figure data-chart-measure="recall">') : crowded.index("</figure>")
    ]
    assert re.findall(r'<text class="x-tick"[^>]*>([^<]+)</text>', chart) == [
        "2026-03-01",
        "2026-03-03",
        "2026-03-05",
        "2026-03-07",
        "2026-03-09",
    ]
