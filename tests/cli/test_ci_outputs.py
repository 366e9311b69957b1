"""``evaluate --junit/--markdown``, the GitHub step summary and workflow annotations, on a
deterministic project."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ptah.cli import main
from ptah.core.report import Report
from ptah.render.markdown import render_markdown
from tests.cli.ci_project import evaluate, make_ci_project
from tests.render.reports import valid_junit

C1 = "required key '2' missed (ranked 2nd; k = 1)"
C2 = "required key '2' missed (ranked 2nd; k = 1); forbidden key '3' leaked at rank 1 (k = 1)"


def ptah(*argv, env: dict | None = None) -> tuple[int, str, str]:
    """``ptah ARGV`` in this process with ``env`` added to the environment: (exit code, stdout,
    stderr).

    Not tests.conftest.run_cli: the module's fixtures have no capsys, so the streams are redirected
    here.
    """
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, str(value))
        with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as info:
            main([str(a) for a in argv])
    return info.value.code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def regressed(tmp_path_factory):
    """``small`` against the baseline of ``docs`` with every CI output, as GitHub Actions runs
    it."""
    folder = make_ci_project(tmp_path_factory.mktemp("ci"))
    summary = folder / "summary.md"
    summary.write_text("earlier step\n")
    code, out, err = ptah(
        *evaluate(
            folder,
            "-g",
            "small",
            "--baseline",
            folder / "base.json",
            "--max-recall-drop",
            "0.1",
            "--junit",
            folder / "report.xml",
            "--markdown",
            folder / "report.md",
            "--html",
            folder / "report.html",
            "--output",
            folder / "report.json",
        ),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary, "GITHUB_WORKSPACE": folder},
    )
    return {
        "folder": folder,
        "code": code,
        "out": out,
        "err": err,
        "report": json.loads((folder / "report.json").read_text()),
    }


def test_the_run_fails_its_gates_with_exit_1(regressed):
    assert regressed["code"] == 1
    assert [gate["passed"] for gate in regressed["report"]["gates"]] == [False, False, False]


def test_junit_is_valid_and_each_failed_case_says_where_its_key_went(regressed):
    text = valid_junit((regressed["folder"] / "report.xml").read_text())
    root = ET.fromstring(text)
    report = regressed["report"]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "5", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["small [vector]", "gates"]
    cases = suites[0].findall("testcase")
    assert [(c.get("name"), c.get("classname"), c.get("file"), c.get("line")) for c in cases] == [
        ("c1", "ptah.small.vector", str(regressed["folder"] / "corpus.yaml"), "4"),
        ("c2", "ptah.small.vector", str(regressed["folder"] / "corpus.yaml"), "5"),
        ("c3", "ptah.small.vector", str(regressed["folder"] / "corpus.yaml"), "9"),
    ]
    assert [(f.get("type"), f.get("message")) for c in cases for f in c.findall("failure")] == [
        ("required", C1),
        ("required", C2),
    ]
    assert (
        cases[1].find("failure").text
        == "query: reset password\n" + C2.replace("; forbidden", "\nforbidden") + "\ntop 1: 3"
    )
    properties = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    generation = report["runs"][0]["generation"]
    assert properties == {
        "generation": "small",
        "identity": generation["identity"],
        "model": "ptah/deterministic",
        "channel": "vector",
        "search": "exact",
        "corpus_digest": report["corpus"]["digest"],
        "corpus": report["corpus"]["path"],
        "created_at": report["created_at"],
        "verdict": "fail",
    }
    gates = suites[1].findall("testcase")
    assert [(g.get("name"), g.find("failure").get("message")) for g in gates] == [
        (f"{gate['name']} (small)", gate["detail"]) for gate in report["gates"]
    ]
    total = report["timings"]["total"]
    assert float(root.get("time")) == pytest.approx(total, abs=1e-6)
    assert sum(float(c.get("time")) for c in cases) == pytest.approx(total, abs=1e-5)


def test_the_markdown_summary_holds_verdict_deltas_intervals_and_the_flipped_case(regressed):
    text = (regressed["folder"] / "report.md").read_text()
    report = regressed["report"]
    stats = report["baseline"]["comparisons"][0]["significance"]["recall"]
    interval = stats["interval"]
    lines = text.splitlines()
    assert lines[0] == "## ptah evaluate: FAIL: 3 of 3 gates failed"
    assert "| `small (vector)` | 0.5000 | 0.6667 | 0.6667 | 1.0000 |" in lines
    assert (
        f"| recall | 0.8333 | 0.5000 | -0.3333 | [{interval['low']:+.4f}, {interval['high']:+.4f}] | "
        f"{stats['test']['p_value']:.4f} | {stats['finding']} |"
    ) in lines
    assert (
        "- `c2` in `small` against `baseline docs`: **now failing**; query `reset password`; "
        f"now: `{C2}`"
    ) in lines
    assert f"- `c1` in `small (vector)`: query `cancel my plan`; `{C1}`" in lines
    assert "http" not in text and "<" not in text and "](" not in text  # no link, no HTML
    assert text == render_markdown(Report.from_dict(report))


def test_the_summary_is_appended_to_the_github_step_summary(regressed):
    written = (regressed["folder"] / "summary.md").read_text()
    assert written == "earlier step\n" + (regressed["folder"] / "report.md").read_text() + "\n"


def test_each_failed_case_is_annotated_on_its_corpus_line(regressed):
    annotations = [line for line in regressed["err"].splitlines() if line.startswith("::")]
    drop = regressed["report"]["gates"][2]
    assert annotations == [
        f"::error file=corpus.yaml,line=4,title=ptah%3A case c1 failed (small%2C vector)::{C1}. Query: cancel my plan",
        f"::error file=corpus.yaml,line=5,title=ptah%3A case c2 failed (small%2C vector)::{C2}. Query: reset password",
        f"::error file=corpus.yaml,title=ptah%3A gate max-recall-drop failed (small)::{drop['detail']}",
    ]


def test_no_annotation_and_no_summary_outside_github(regressed, tmp_path):
    folder = regressed["folder"]
    code, _out, err = ptah(*evaluate(folder, "-g", "small", "--markdown", tmp_path / "m.md"))
    assert code == 1
    assert "::" not in err and err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.md"]


def test_an_unappendable_step_summary_is_a_warning_and_the_verdict_stands(regressed, tmp_path):
    code, _out, err = ptah(
        *evaluate(regressed["folder"], "-g", "docs"), env={"GITHUB_STEP_SUMMARY": tmp_path}
    )
    assert code == 1
    assert err == (
        f"ptah: warning: the summary was not appended: GITHUB_STEP_SUMMARY {tmp_path}: is a folder; "
        "ptah appends only to a regular file\n"
    )
    full = tmp_path / "full.md"
    full.write_bytes(b"x" * (1024 * 1024 - 10))
    code, _out, err = ptah(
        *evaluate(regressed["folder"], "-g", "docs"), env={"GITHUB_STEP_SUMMARY": full}
    )
    assert code == 1
    assert err.startswith(
        f"ptah: warning: the summary was not appended: GITHUB_STEP_SUMMARY {full}: holds 1,048,566 bytes; "
    )
    assert err.endswith(" more would pass its limit of 1,048,576\n")
    assert full.stat().st_size == 1024 * 1024 - 10


def test_a_summary_file_that_does_not_exist_yet_is_created(regressed, tmp_path):
    summary = tmp_path / "new.md"
    code, _out, err = ptah(
        *evaluate(regressed["folder"], "-g", "docs"), env={"GITHUB_STEP_SUMMARY": summary}
    )
    assert (code, err) == (1, "")
    assert summary.read_text().startswith("## ptah evaluate: FAIL: 1 of 2 gates failed\n")


def test_junit_and_markdown_paths_are_refused_before_the_evaluation(regressed, tmp_path):
    code, out, err = ptah(*evaluate(regressed["folder"], "--junit", tmp_path))
    assert (code, out) == (2, "")
    assert err == f"--junit {tmp_path}: is a folder; give the path of a file to write\n"
    (tmp_path / "kept.md").write_text("kept")
    (tmp_path / "kept.md").chmod(0o444)
    code, _out, err = ptah(*evaluate(regressed["folder"], "--markdown", tmp_path / "kept.md"))
    assert code == 2
    assert err.startswith(f"--markdown {tmp_path / 'kept.md'}: is read-only (mode 0444)")
