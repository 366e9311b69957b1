"""The page at ``/`` rendered in headless Chromium: its trend charts' numbers are the reports' means
exactly, on a time axis, in the measure registry's order, readable at 1280 and 800 px (screenshots:
``test-artifacts/pages/``); each report's page shows its keys with their rows' first words."""

from __future__ import annotations

from html.parser import HTMLParser

from chromium import WIDTHS, layout, needs_chromium, render_in_chromium, text_overlaps
from serving import wait_done

from ptah.core.measures import Measure


class Points(HTMLParser):
    """Every chart point (``circle`` with ``data-evaluation``) and every element's ``src``/``href``
    to the network."""

    def __init__(self):
        super().__init__()
        self.points: list[dict] = []
        self.remote: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "circle" and "data-evaluation" in attributes:
            self.points.append(attributes)
        for name in ("src", "href", "action"):
            if (attributes.get(name) or "").startswith(("http:", "https:", "//")):
                self.remote.append(attributes[name])


@needs_chromium
def test_the_trend_charts_show_the_reports_means(project, server, tmp_path):
    manage = server.client(project.tokens["manage"])
    digest = manage.post("/v1/corpora", content=project.corpus.read_bytes()).json()["digest"]
    for seed in range(3):
        wait_done(
            manage,
            manage.post(
                "/v1/evaluations",
                json={
                    "corpus": digest,
                    "generations": ["docs", "wide"],
                    "channels": ["vector", "lexical"],
                    "seed": seed,
                    "bootstrap": 100,
                    "measures": ["P@2", "MAP@2"],
                },
            ).json()["id"],
        )
    browser = server.client()
    browser.post("/login", data={"token": project.tokens["read"]})
    page = tmp_path / "home.html"
    page.write_text(browser.get("/").text, encoding="utf-8")
    dom, console = render_in_chromium(page)
    assert console == []
    found = Points()
    found.feed(dom)
    assert found.remote == []
    listed = manage.get(
        "/v1/evaluations", params={"corpus": digest, "status": "done", "limit": 200}
    ).json()["items"]
    done = {job["id"] for job in listed}
    mine = [point for point in found.points if point["data-evaluation"] in done]
    assert (
        len(mine) >= 3 * 4 * 5
    )  # three evaluations, four runs, five measures (recall, MRR, nDCG, MAP@2, P@2)
    reports = {job_id: manage.get(f"/v1/evaluations/{job_id}").json()["report"] for job_id in done}
    for point in mine:
        report = reports[point["data-evaluation"]]
        run = next(run for run in report["runs"] if run["generation"]["name"] == point["data-run"])
        expected = run["aggregates"][Measure.parse(point["data-measure"]).key]["value"]
        assert point["data-value"] == ("null" if expected is None else repr(expected))

    days = sorted({job["created_at"][:10] for job in listed})
    caption = f"time of day, UTC, {days[0]}" if len(days) == 1 else "date, UTC"
    for width in WIDTHS:
        drawn = layout(page.read_text(encoding="utf-8"), "server-home", width)
        assert drawn["headings"][1:] == [
            "recall",
            "MRR",
            "nDCG",
            "MAP@2",
            "P@2",
        ]  # after the corpus's h2
        for chart in drawn["charts"]:
            assert text_overlaps(chart) == []
            assert [text["cls"] for text in chart["texts"]].count("x-tick") >= 1
            assert caption in [text["text"] for text in chart["texts"]]
            assert chart["box"][2] <= width
        assert drawn["scrollWidth"] <= width

    job_id = mine[0]["data-evaluation"]
    report_page = tmp_path / "report.html"
    report_page.write_text(browser.get(f"/evaluations/{job_id}/report.html").text, encoding="utf-8")
    dom, console = render_in_chromium(report_page)
    assert console == []
    assert "data-ready" in dom  # the report page's own script ran
    excerpts = reports[job_id]["excerpts"]
    for width in WIDTHS:
        drawn = layout(report_page.read_text(encoding="utf-8"), "server-report", width, height=6000)
        shown = [cell for cell in drawn["cells"] if cell["keyBox"][2] > cell["keyBox"][0]]
        assert shown and all(cell["words"] == excerpts[cell["key"]] for cell in shown)
        assert "a row nobody judged for this case" in drawn["legend"]["text"]
    assert server.client().get(f"/evaluations/{job_id}/report.html").status_code == 401
