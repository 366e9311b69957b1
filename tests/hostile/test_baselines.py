"""Hostile baselines: a file passed as --baseline must never switch a gate off or end in "internal
error".

Each attack edits a report that ptah itself wrote (a real project: SQLite source, deterministic
embedder, two generations, vector and lexical channels) and runs ``ptah inference evaluate
--baseline FILE --max-recall-drop 0.02`` through the CLI: exit 2 and one line naming the field. The
untouched report, and the checked-in example baseline, still load.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptah.adapters.report_json import lone_surrogate_escape
from ptah.core.measures import mean_of
from ptah.core.report import mean_to_dict as mean_dict
from ptah.services.evaluate import load_baseline
from tests.conftest import run_cli, spec_yaml

REPO = Path(__file__).resolve().parents[2]
SPEC = spec_yaml(
    text="{title}: {body}",
    active="small",
    generations={
        "small": {"model": "ptah/deterministic", "dimension": 16},
        "large": {"model": "ptah/deterministic", "dimension": 32},
    },
)
ROWS = [
    (1, "Cancel", "open billing and cancel the plan"),
    (2, "Password", "use the reset link in the email"),
    (3, "Invoices", "export invoices as pdf from billing"),
    (4, "Teammates", "invite people from the settings page"),
    (5, "Tokens", "create api tokens under developer settings"),
    (6, "Webhooks", "webhooks post json to your endpoint"),
]
CORPUS = """\
version: 1
default_k: 6
cases:
  - {id: c1, query: "cancel my plan", required: ["1"], relevant: {"1": 2, "3": 1}}
  - {id: c2, query: "reset password", relevant: {"2": 1}}
  - {id: c3, query: "api tokens", k: 3, relevant: {"5": 1, "4": 1}}
  - {id: c4, query: "webhook payloads", required: ["6"], forbidden: ["9"]}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-baselines")
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)", ROWS + [(9, "Old", "an outdated page")]
        )
    connection.close()
    (folder / "ptah.yaml").write_text(SPEC)
    (folder / "corpus.yaml").write_text(CORPUS)
    for name in ("small", "large"):
        assert (
            run_cli(
                None, "inference", "build", name, "--spec", folder / "ptah.yaml", "--quiet"
            ).code
            == 0
        )
    return folder


def evaluate(project, *extra):
    return [
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        project / "corpus.yaml",
        *extra,
    ]


@pytest.fixture(scope="module")
def written(project) -> tuple[dict, int]:
    """A multi-run report written by ptah (two generations x vector and lexical), and the exit code
    it gave."""
    output = project / "report.json"
    code = run_cli(
        None,
        *evaluate(
            project,
            "-g",
            "small",
            "-g",
            "large",
            "--channel",
            "vector",
            "--channel",
            "lexical",
            "--output",
            output,
        ),
    ).code
    report = json.loads(output.read_text())
    assert [r["search"]["channel"] for r in report["runs"]] == [
        "vector",
        "vector",
        "lexical",
        "lexical",
    ]
    assert report["runs"][0]["aggregates"]["recall"]["denominator"] == 4
    return report, code


def gate(project, path, capsys):
    return run_cli(capsys, *evaluate(project, "--baseline", path, "--max-recall-drop", "0.02"))


def refused(project, tmp_path, capsys, document=None, *, text=None):
    """Exit code and stderr of evaluating against ``document`` (or raw ``text``) as the baseline."""
    path = tmp_path / "baseline.json"
    path.write_text(text if text is not None else json.dumps(document))
    code, _, err = gate(project, path, capsys)
    return code, err.strip().replace(str(path), "B")


def test_a_report_ptah_wrote_still_loads_and_gates_as_before(project, written, cli, tmp_path):
    report, code = written
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report, indent=2))
    compared = tmp_path / "compared.json"
    got, out, err = cli(
        *evaluate(
            project,
            "--baseline",
            path,
            "--max-recall-drop",
            "0.02",
            "-g",
            "small",
            "-g",
            "large",
            "--output",
            compared,
        )
    )
    assert got == code, err  # the same verdict as the run that wrote it: the recall drop is 0
    # a report with baseline comparisons (and their significance) is a baseline too
    assert len(load_baseline(compared).to_dict()["baseline"]["comparisons"]) == 2


def test_the_checked_in_baseline_still_loads():
    baseline = load_baseline(REPO / "examples" / "support" / "baseline.json").to_dict()
    assert baseline["runs"][0]["aggregates"]["recall"] == {
        "value": 0.88,
        "numerator": 22.0,
        "denominator": 25,
        "undefined": 0,
    }


def edited(report: dict, path: str, value) -> dict:
    """A deep copy of ``report`` with the value at ``path`` (``runs.0.aggregates.recall.value``)
    replaced."""
    document = copy.deepcopy(report)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target = document
    for part in parents:
        target = target[part]
    target[last] = value
    return document


MEAN = "runs.0.aggregates.recall"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # means outside [0, 1]: 7.0 would make every drop pass, and so would a negative one
        (
            f"{MEAN}.value",
            7.0,
            "B: runs[0].aggregates.recall.value is 7.0, outside [0, 1]; the report is damaged",
        ),
        (
            f"{MEAN}.value",
            -0.5,
            "B: runs[0].aggregates.recall.value is -0.5, outside [0, 1]; the report is damaged",
        ),
        (
            "runs.3.aggregates.ndcg.value",
            1.5,
            "B: runs[3].aggregates.ndcg.value is 1.5, outside [0, 1]; the report is damaged",
        ),
        # case values out of range (the schema bounds every measure)
        (
            "runs.0.cases.1.metrics.recall",
            1.7e308,
            "B: runs[0].cases[1].metrics.recall is 1.7e+308, above the maximum 1; the report is damaged",
        ),
        (
            "runs.1.cases.0.metrics.mrr",
            -1.7e308,
            "B: runs[1].cases[0].metrics.mrr is -1.7e+308, below the minimum 0; the report is damaged",
        ),
        # wrong types
        (
            "runs.0.generation",
            5,
            "B: runs[0].generation is an integer, not an object; the report is damaged",
        ),
        (
            f"{MEAN}.denominator",
            "3",
            "B: runs[0].aggregates.recall.denominator is a text, not an integer; the report is damaged",
        ),
        (
            "runs.0.cases.2.metrics.ndcg",
            True,
            "B: runs[0].cases[2].metrics.ndcg is a boolean, not a number or null; the report is damaged",
        ),
        (
            "runs.0.cases.0.id",
            5,
            "B: runs[0].cases[0].id is an integer, not a text; the report is damaged",
        ),
        (
            "runs.0.cases.0.passed",
            "yes",
            "B: runs[0].cases[0].passed is a text, not a boolean; the report is damaged",
        ),
        ("runs", {}, "B: runs is an object, not an array; the report is damaged"),
        (
            "runs.2.search.channel",
            "psychic channel",
            "B: runs[2].search.channel is not well-formed (it must match ^[a-z][a-z0-9_-]{0,63}$); "
            "the report is damaged",
        ),
        (
            "corpus.digest",
            "sha256:abc",
            "B: corpus.digest is not well-formed (it must match ^sha256:[0-9a-f]{64}$); the report is damaged",
        ),
        ("corpus.cases", -1, "B: corpus.cases is -1, below the minimum 1; the report is damaged"),
        ("gates", None, "B: gates is null, not an array; the report is damaged"),
        (
            "runs.0.aggregates.required.failed",
            -3,
            "B: runs[0].aggregates.required.failed is -3, not a non-negative integer; the report is damaged",
        ),
        (
            "runs.0.aggregates.cases",
            40,
            "B: runs[0].aggregates.cases is not 4, the number of the run's cases; the report is damaged",
        ),
        (
            "runs.0.aggregates.forbidden.leaking",
            3,
            "B: runs[0].aggregates.forbidden.leaking is more than forbidden.cases; the report is damaged",
        ),
        (
            "runs.0.cases.1.id",
            "c1",
            "B: runs[0].cases[1].id repeats runs[0].cases[0].id; the report is damaged",
        ),
        ("sneaky", 1, "B: sneaky is not a known field; the report is damaged"),
        (
            "format",
            "ptah-report@3",
            "B: format is 'ptah-report@3', not 'ptah-report@1' or 'ptah-report@2'; pass a report that ptah wrote",
        ),
    ],
)
def test_a_field_that_is_out_of_range_or_of_the_wrong_type_is_named(
    project, written, capsys, tmp_path, field, value, message
):
    assert refused(project, tmp_path, capsys, edited(written[0], field, value)) == (2, message)


def test_a_missing_field_is_named(project, written, capsys, tmp_path):
    document = copy.deepcopy(written[0])
    del document["runs"][1]["aggregates"]["mrr"]["numerator"]
    assert refused(project, tmp_path, capsys, document) == (
        2,
        "B: runs[1].aggregates.mrr.numerator is missing; the report is damaged",
    )


def test_means_that_disagree_with_their_cases_are_refused(project, written, capsys, tmp_path):
    mean = written[0]["runs"][0]["aggregates"]["recall"]
    cases = [c["metrics"]["recall"] for c in written[0]["runs"][0]["cases"]]
    total = sum(v for v in cases if v is not None)
    highs = [c["high"]["recall"] for c in written[0]["runs"][0]["cases"]]
    high = sum(v for v in highs if v is not None)
    assert mean == {
        "value": mean["value"],
        "numerator": total,
        "denominator": 4,
        "undefined": 0,
        "high": high / 4,
        "high_numerator": high,
    }
    # a high bound that is not its cases' mean would decide an inconclusive gate with a made-up
    # number
    assert refused(project, tmp_path, capsys, edited(written[0], f"{MEAN}.high", 0.0)) == (
        2,
        f"B: runs[0].aggregates.recall.high is 0.0, but the mean of the cases' values is {high / 4!r}; the report is damaged",
    )
    assert refused(
        project, tmp_path, capsys, edited(written[0], "runs.0.cases.0.high.recall", 7.0)
    ) == (2, "B: runs[0].cases[0].high.recall is 7.0, above the maximum 1; the report is damaged")
    # a value within [0, 1] that is not the cases' mean: the gate would compare against a made-up
    # number
    assert refused(project, tmp_path, capsys, edited(written[0], f"{MEAN}.value", 1.0)) == (
        2,
        f"B: runs[0].aggregates.recall.value is 1.0, but the mean of the cases' values is {total / 4!r}; the report is damaged",
    )
    assert refused(
        project, tmp_path, capsys, edited(written[0], f"{MEAN}.numerator", total + 1)
    ) == (
        2,
        f"B: runs[0].aggregates.recall.numerator is {total + 1!r}, but the cases' values sum to {total!r}; the report is damaged",
    )
    assert refused(project, tmp_path, capsys, edited(written[0], f"{MEAN}.denominator", 3)) == (
        2,
        "B: runs[0].aggregates.recall.denominator is 3, but 4 of the run's 4 cases define the measure; the report is damaged",
    )
    assert refused(project, tmp_path, capsys, edited(written[0], f"{MEAN}.undefined", 1)) == (
        2,
        "B: runs[0].aggregates.recall.undefined is 1, but 0 of the run's 4 cases leave it N/A; the report is damaged",
    )
    # a case edited without its mean
    assert refused(
        project, tmp_path, capsys, edited(written[0], "runs.0.cases.3.metrics.recall", None)
    ) == (
        2,
        "B: runs[0].aggregates.recall.denominator is 4, but 3 of the run's 4 cases define the measure; the report is damaged",
    )


def test_float_rounding_and_na_means_are_accepted(project, written, capsys, tmp_path):
    document = copy.deepcopy(written[0])
    mean = document["runs"][0]["aggregates"]["recall"]
    mean["value"] += 1e-12
    mean["numerator"] -= 1e-12
    # every case N/A: the means are null over denominator 0
    for run in document["runs"][1:2]:
        for case in run["cases"]:
            case["metrics"] = {"recall": None, "mrr": None, "ndcg": None}
        for name in ("recall", "mrr", "ndcg"):
            run["aggregates"][name] = {
                "value": None,
                "numerator": 0.0,
                "denominator": 0,
                "undefined": 4,
            }
    path = tmp_path / "b.json"
    path.write_text(json.dumps(document))
    assert load_baseline(path).to_dict()["runs"][1]["aggregates"]["recall"]["value"] is None
    document["runs"][1]["aggregates"]["mrr"]["value"] = 0.0
    assert refused(project, tmp_path, capsys, document) == (
        2,
        "B: runs[1].aggregates.mrr.value is 0.0, but no case defines the measure, so it must be null; the report is damaged",
    )


def test_numbers_python_would_take_but_a_report_never_holds(project, written, capsys, tmp_path):
    text = json.dumps(written[0], indent=1)
    denominator = '"denominator": 4,'
    assert denominator in text
    line = text[: text.index(denominator)].count("\n") + 1
    huge = text.replace(denominator, '"denominator": ' + "9" * 5000 + ",", 1)
    assert refused(project, tmp_path, capsys, text=huge) == (
        2,
        f"B:{line}: holds a number 5000 characters long (at most 64); the report is damaged",
    )
    long_float = text.replace(denominator, '"denominator": 0.' + "1" * 5000 + ",", 1)
    assert refused(project, tmp_path, capsys, text=long_float) == (
        2,
        f"B:{line}: holds a number 5002 characters long (at most 64); the report is damaged",
    )
    assert refused(
        project, tmp_path, capsys, text=text.replace(denominator, '"denominator": 1e400,', 1)
    ) == (2, "B: holds the number 1e400, too large for a float; the report is damaged")
    for constant in ("NaN", "Infinity", "-Infinity"):
        assert refused(
            project,
            tmp_path,
            capsys,
            text=text.replace(denominator, f'"denominator": {constant},', 1),
        ) == (
            2,
            f"B: holds {constant}, which is not JSON and never in a report; the report is damaged",
        )


def test_deep_nesting_is_refused(project, written, capsys, tmp_path):
    assert refused(project, tmp_path, capsys, text="[" * 100_000 + "]" * 100_000) == (
        2,
        "B: is nested too deeply to be a ptah report",
    )
    inside = json.dumps(edited(written[0], "runs.0.generation.settings", "X")).replace(
        '"X"', '{"a":' * 100_000 + "1" + "}" * 100_000
    )
    assert refused(project, tmp_path, capsys, text=inside) == (
        2,
        "B: is nested too deeply to be a ptah report",
    )


def test_not_a_report_at_all(project, written, capsys, tmp_path):
    assert refused(project, tmp_path, capsys, [written[0]]) == (
        2,
        "B: not a ptah report (the top level is not a JSON object)",
    )
    text = json.dumps(written[0], indent=2)
    truncated = text[: len(text) // 2]
    try:
        json.loads(truncated)
    except json.JSONDecodeError as exc:
        expected = f"B:{exc.lineno}: not valid JSON ({exc.msg}); pass a report written by --output"
    assert refused(project, tmp_path, capsys, text=truncated) == (2, expected)
    assert refused(project, tmp_path, capsys, edited(written[0], "format", "x" * 5000)) == (
        2,
        "B: format is a text of 5000 characters, not 'ptah-report@1' or 'ptah-report@2'; pass a report that ptah wrote",
    )


def with_ann(report: dict) -> dict:
    """``report`` as ``--search both`` writes it: each case's ANN recall (1/3 each, for float
    rounding) and exact measures, and their means in ``aggregates.ann``
    (ptah.services.index_search)."""
    document = copy.deepcopy(report)
    run = document["runs"][0]
    for case in run["cases"]:
        case["ann"] = {
            "recall": 1 / 3,
            "exact": dict(case["metrics"]),
            "delta": {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0},
            "missed": [],
        }
    run["aggregates"]["ann"] = {
        "recall": mean_dict(mean_of(case["ann"]["recall"] for case in run["cases"])),
        "exact": {name: dict(run["aggregates"][name]) for name in ("recall", "mrr", "ndcg")},
        "delta": {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0},
    }
    return document


def test_ann_means_of_search_both_are_checked_against_their_cases(
    project, written, capsys, tmp_path
):
    document = with_ann(written[0])
    path = tmp_path / "both.json"
    path.write_text(json.dumps(document))
    assert load_baseline(path).to_dict()["runs"][0]["aggregates"]["ann"]["recall"]["value"] == 1 / 3
    assert refused(
        project, tmp_path, capsys, edited(document, "runs.0.aggregates.ann.recall.value", 1.0)
    ) == (
        2,
        "B: runs[0].aggregates.ann.recall.value is 1.0, but the mean of the cases' values is 0.3333333333333333; the report is damaged",
    )
    assert refused(
        project, tmp_path, capsys, edited(document, "runs.0.cases.2.ann.exact.ndcg", 0.0)
    ) == (
        2,
        "B: runs[0].aggregates.ann.exact.ndcg.numerator is "
        f"{document['runs'][0]['aggregates']['ndcg']['numerator']!r}, but the cases' values sum to "
        f"{math.fsum(c['metrics']['ndcg'] for i, c in enumerate(document['runs'][0]['cases']) if i != 2)!r}; the report is damaged",
    )
    del document["runs"][0]["cases"][1]["ann"]
    assert refused(project, tmp_path, capsys, document) == (
        2,
        "B: runs[0].cases[1].ann is missing or lacks recall and exact, but the run has aggregates.ann; the report is damaged",
    )


def test_an_unpaired_surrogate_escape_is_refused(project, written, capsys, tmp_path):
    text = json.dumps(edited(written[0], "runs.0.generation.name", "X"), indent=1)
    line = text[: text.index('"X"')].count("\n") + 1
    assert refused(project, tmp_path, capsys, text=text.replace('"X"', '"\\ud800\\u001b[2J"')) == (
        2,
        f"B:{line}: holds the unpaired surrogate escape \\ud800, which is not text; the report is damaged",
    )
    path = tmp_path / "paired.json"
    path.write_text(
        text.replace('"X"', '"\\ud83d\\ude00 \\\\ud800"')
    )  # a pair, and an escaped backslash before "ud800"
    assert load_baseline(path).to_dict()["runs"][0]["generation"]["name"] == "\U0001f600 \\ud800"


@given(
    st.lists(
        st.sampled_from(
            ["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\\\", "\\u0041", "a", "u", "d800"]
        ),
        max_size=8,
    )
)
def test_lone_surrogates_are_found_exactly_where_json_makes_them(pieces):
    text = '"' + "".join(pieces) + '"'
    try:
        json.loads(text).encode("utf-8")
        lone = False
    except UnicodeEncodeError:
        lone = True
    assert (lone_surrogate_escape(text) is not None) == lone


def test_a_huge_baseline_is_refused_by_its_size_before_it_is_parsed(project, capsys, tmp_path):
    from ptah.services.evaluate import MAX_BASELINE_BYTES

    path = tmp_path / "huge.json"
    with open(
        path, "w"
    ) as handle:  # a sparse file: an array of a billion elements would take as many bytes
        handle.write('{"format": "ptah-report@1", "runs": [' + "0," * 8)
        handle.truncate(MAX_BASELINE_BYTES + 1)
    code, _, err = gate(project, path, capsys)
    assert (code, err.strip()) == (
        2,
        f"{path}: the file is {MAX_BASELINE_BYTES + 1:,} bytes, more than the baseline report limit "
        f"of {MAX_BASELINE_BYTES:,}",
    )


def cut_to(report: dict, keep: set[str], *, extra: str | None = None) -> dict:
    """``report`` with each run cut to the cases ``keep`` (one renamed ``extra`` when given) and
    every aggregate recomputed from those cases by ptah's own ``make_run``: a subset that checks out
    except for its ids."""
    from ptah.core.report import Report, make_run

    parsed = Report.from_dict(copy.deepcopy(report))
    document = copy.deepcopy(report)
    for index, run in enumerate(parsed.runs):
        cases = [case for case in run.cases if case.id in keep]
        if extra is not None:
            cases[-1] = dataclasses.replace(cases[-1], id=extra)
        remade = make_run(run.generation, run.search, cases, run.measures).to_dict()
        document["runs"][index]["cases"] = remade["cases"]
        document["runs"][index]["aggregates"] = remade["aggregates"]
    return document


@pytest.mark.parametrize(
    ("keep", "extra", "message"),
    [
        ({"c2"}, None, 'lacks case "c1" of the corpus C (2 more)'),
        (
            {"c1", "c2", "c3", "c4"},
            "c9",
            'lacks case "c4" of the corpus C and holds case "c9", which the corpus C does not',
        ),
    ],
)
def test_a_baseline_cut_to_some_cases_is_refused(
    project, written, capsys, tmp_path, keep, extra, message
):
    # every mean recomputed to match and the digest unchanged: only the case ids tell, and they must
    # be the corpus's
    code, err = refused(project, tmp_path, capsys, cut_to(written[0], keep, extra=extra))
    assert (code, err.replace(str(project / "corpus.yaml"), "C")) == (
        2,
        f"B: run small {message}; a report's cases are exactly its corpus's, so it cannot be compared case by case",
    )
