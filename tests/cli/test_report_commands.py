"""``ptah report show``, ``diff`` and ``trend``: saved reports re-read with no store and no
model."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ptah.core.comparison import StatisticsSettings, compare_pair
from ptah.core.report import Report
from tests.cli.ci_project import evaluate, make_ci_project
from tests.cli.test_ci_outputs import ptah


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """base.json (``docs``) and now.json (``small`` against it, with its page, summary and JUnit);
    the store removed."""
    folder = make_ci_project(tmp_path_factory.mktemp("reports"))
    code, _out, _err = ptah(
        *evaluate(
            folder,
            "-g",
            "small",
            "--baseline",
            folder / "base.json",
            "--output",
            folder / "now.json",
            "--html",
            folder / "now.html",
            "--markdown",
            folder / "now.md",
            "--junit",
            folder / "now.xml",
        )
    )
    assert code == 1
    shutil.rmtree(folder / ".ptah")  # no store: nothing below may need one
    (folder / "source.db").unlink()
    return folder


def test_show_re_renders_the_saved_report_exactly_as_evaluate_wrote_it(saved, tmp_path):
    code, out, err = ptah(
        "report",
        "show",
        saved / "now.json",
        "--html",
        tmp_path / "p.html",
        "--markdown",
        tmp_path / "s.md",
        "--junit",
        tmp_path / "r.xml",
    )
    assert (code, err) == (0, "")  # rendered: 0, whatever the verdict was
    assert "verdict: FAIL" in out and "cases changed against baseline (docs):" in out
    assert out.splitlines()[-3:] == [
        f"wrote {tmp_path / name}" for name in ("p.html", "s.md", "r.xml")
    ]
    assert (tmp_path / "p.html").read_text() == (saved / "now.html").read_text()
    assert (tmp_path / "s.md").read_text() == (saved / "now.md").read_text()
    # a saved report does not know its corpus's lines: the same XML without file and line
    expected = re.sub(r' file="[^"]*" line="\d+"', "", (saved / "now.xml").read_text())
    assert (tmp_path / "r.xml").read_text() == expected


def test_show_json_prints_the_report_and_a_non_report_is_exit_2(saved, tmp_path):
    code, out, _err = ptah("report", "show", saved / "now.json", "--json")
    assert code == 0
    assert json.loads(out) == json.loads((saved / "now.json").read_text())
    (tmp_path / "x.json").write_text('{"format": "something else"}')
    code, out, err = ptah("report", "show", tmp_path / "x.json")
    assert (code, out) == (2, "")
    assert err.startswith(f"{tmp_path / 'x.json'}: format is 'something else', not 'ptah-report@")


def test_diff_compares_two_reports_case_by_case_with_the_paired_statistics(saved):
    code, out, err = ptah("report", "diff", saved / "base.json", saved / "now.json", "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    before = Report.from_dict(json.loads((saved / "base.json").read_text())).runs[0]
    after = Report.from_dict(json.loads((saved / "now.json").read_text())).runs[0]
    expected = compare_pair(before, after, StatisticsSettings())
    candidate = document["comparison"]["candidates"][0]
    assert document["comparison"]["reference"] == "A docs"
    assert candidate["run"] == "B small"
    assert candidate["measures"] == json.loads(json.dumps(expected.to_dict()["measures"]))
    assert candidate["measures"]["recall"]["delta"] == pytest.approx(0.5 - 2.5 / 3)
    assert [(c["id"], c["flipped"]) for c in candidate["cases_changed"]] == [("c2", True)]
    assert candidate["flipped"] == {"now_failing": 1, "now_passing": 0}
    code, out, _err = ptah("report", "diff", saved / "base.json", saved / "now.json")
    assert code == 0
    assert "B small vs A docs" in out and "cases changed: 1 (1 now failing, 0 now passing)" in out


def test_diff_refuses_reports_of_different_corpora_with_exit_2(saved, tmp_path):
    other = json.loads((saved / "base.json").read_text())
    other["corpus"]["digest"] = "sha256:" + "0" * 64
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, out, err = ptah("report", "diff", saved / "base.json", tmp_path / "other.json")
    assert (code, out) == (2, "")
    assert err.startswith(
        f"{saved / 'base.json'} and {tmp_path / 'other.json'} measured different corpora (digests "
    )
    code, _out, err = ptah(
        "report", "diff", saved / "base.json", saved / "now.json", "--run", "nope"
    )
    assert code == 2
    assert err == f"{saved / 'base.json'}: has no run of the generation nope; it has docs\n"


def test_diff_refuses_reports_whose_runs_hold_other_cases_with_exit_2(saved, tmp_path):
    # the same digest and means, no case in common: "no case changed" would be a comparison of
    # nothing
    other = json.loads((saved / "now.json").read_text())
    ids = [case["id"] for case in other["runs"][0]["cases"]]
    for run in other["runs"]:
        for case in run["cases"]:
            case["id"] = "x-" + case["id"]
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, out, err = ptah("report", "diff", saved / "base.json", tmp_path / "other.json")
    assert (code, out) == (2, "")
    base, more = saved / "base.json", f" ({len(ids) - 1} more)"
    assert err == (
        f'{tmp_path / "other.json"}: run small lacks case "{ids[0]}" of {base} (run docs){more} and holds '
        f'case "x-{ids[0]}", which {base} (run docs) does not{more}; a report\'s cases are exactly its '
        "corpus's, so it cannot be compared case by case\n"
    )


def test_trend_draws_each_mean_over_time_on_a_self_contained_page(saved, tmp_path):
    later = json.loads((saved / "now.json").read_text())
    later["created_at"] = "2030-01-02T00:00:00+00:00"
    (tmp_path / "later.json").write_text(json.dumps(later))
    page = tmp_path / "trend.html"
    code, out, err = ptah(
        "report",
        "trend",
        saved / "now.json",
        saved / "base.json",
        tmp_path / "later.json",
        "--html",
        page,
    )
    assert (code, err) == (0, "")
    assert out == f"wrote {page}: 3 reports\n"
    html = page.read_text()
    assert not re.search(r"""\b(src|href)\s*=""", html) and "default-src 'none'" in html
    points = re.findall(
        r'<circle [^>]*data-series="([^"]+)" data-measure="(\w+)" data-created="([^"]+)" '
        r'data-value="([^"]+)"',
        html,
    )
    base, now = (json.loads((saved / name).read_text()) for name in ("base.json", "now.json"))
    recall = [(s, c, float(v)) for s, m, c, v in points if m == "recall"]
    assert sorted(recall) == sorted(
        [
            ("docs [vector]", base["created_at"], base["runs"][0]["aggregates"]["recall"]["value"]),
            ("small [vector]", now["created_at"], now["runs"][0]["aggregates"]["recall"]["value"]),
            (
                "small [vector]",
                "2030-01-02T00:00:00+00:00",
                now["runs"][0]["aggregates"]["recall"]["value"],
            ),
        ]
    )
    assert len(points) == 9  # three reports, three measures each
    assert "identity changed" not in html and "different corpora" not in html


def test_save_writes_any_registered_format_and_refuses_an_unknown_one_before_reading(
    saved, tmp_path
):
    code, out, err = ptah(
        "report",
        "show",
        saved / "now.json",
        "--save",
        f"markdown={tmp_path / 's.md'}",
        "--save",
        f"trec={tmp_path / 'r.trec'}",
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [f"wrote {tmp_path / 's.md'}", f"wrote {tmp_path / 'r.trec'}"]
    assert (tmp_path / "s.md").read_text() == (saved / "now.md").read_text()
    assert (tmp_path / "r.trec").read_text().splitlines()[0].startswith("c1 Q0 ")
    code, out, err = ptah("report", "show", tmp_path / "absent.json", "--save", "pdf=x.pdf")
    assert (code, out) == (2, "")
    assert (
        err
        == "--save pdf=x.pdf: unknown output format 'pdf'; use json, html, junit, markdown, trec\n"
    )
    code, out, err = ptah("report", "show", saved / "now.json", "--save", "html")
    assert (code, out, err) == (
        2,
        "",
        "--save html: write FORMAT=PATH, e.g. --save html=report.html\n",
    )
