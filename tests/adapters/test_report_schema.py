"""The baseline's schema check (ptah.adapters.report_json): jsonschema-rs and its fallback,
jsonschema, give the same verdict and the same sentence on every single-value replacement and every
removal in a report."""

from __future__ import annotations

import copy
import json
import sys
from importlib import resources
from pathlib import Path

import pytest

from ptah.adapters import report_json
from ptah.core.errors import ReportError

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(
    resources.files("ptah").joinpath("schemas/report.schema.json").read_text(encoding="utf-8")
)
MEASURE = {
    "reference": 0.5,
    "candidate": 1.0,
    "delta": 0.5,
    "cases": 2,
    "wins": 1,
    "ties": 1,
    "losses": 0,
    "undefined": 0,
    "interval": {"low": 0.0, "high": 1.0, "level": 0.95},
    "test": {"p_value": 1.0, "method": "exact", "nonzero": 1, "patterns": 2},
    "finding": "no clear difference",
}


def small_report() -> dict:
    """The checked-in baseline cut to one case of two results, with a baseline comparison and a run
    comparison."""
    report = json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
    run = report["runs"][0]
    run["cases"] = run["cases"][:1]
    for case in run["cases"]:
        case["results"] = case["results"][:2]
    report["baseline"] = {
        "path": "b.json",
        "digest": report["corpus"]["digest"],
        "comparisons": [
            {
                "generation": "g",
                "identity": None,
                "against": "g",
                "significance": {"recall": copy.deepcopy(MEASURE)},
                "aggregates": {},
                "cases_changed": [],
            }
        ],
    }
    report["comparison"] = {
        "reference": "g",
        "statistics": {
            "seed": 0,
            "bootstrap": {"resamples": 10, "level": 0.95, "method": "percentile", "paired": True},
            "permutation": {
                "test": "sign-flip",
                "statistic": "mean difference",
                "alternative": "two-sided",
                "exact_limit": 16,
                "resamples": 10,
            },
            "alpha": 0.05,
        },
        "candidates": [
            {
                "run": "h",
                "channel": "vector",
                "measures": {name: copy.deepcopy(MEASURE) for name in ("recall", "mrr", "ndcg")},
                "flipped": {"now_failing": 0, "now_passing": 0},
                "cases_changed": [],
            }
        ],
    }
    return report


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, prefix + (index,))


def variants(report):
    """Each document with one value replaced (by a value of each JSON type) or one field removed."""
    for path in list(paths(report))[1:]:
        for new in (
            None,
            True,
            0,
            -1,
            3.0,
            1.5,
            2,
            "x",
            "sha256:" + "0" * 64,
            [],
            [{}],
            {},
            "delete",
        ):
            if new == "delete" and not isinstance(path[-1], str):
                continue
            document = copy.deepcopy(report)
            target = document
            for part in path[:-1]:
                target = target[part]
            if new == "delete":
                del target[path[-1]]
            else:
                target[path[-1]] = new
            yield document


def test_both_libraries_give_the_same_verdict_and_the_same_sentence():
    rs, fallback = report_json._validator(), report_json._jsonschema_validator(SCHEMA)
    assert "jsonschema_rs" in sys.modules  # the fast one is the one used where it is installed
    report = small_report()
    assert rs(report) is None and fallback(report) is None
    differences, invalid = [], 0
    for document in variants(report):
        ours, theirs = rs(document), fallback(document)
        invalid += ours is not None
        if ours != theirs:
            differences.append((ours, theirs))
    assert differences == []
    assert invalid > 2000  # the variants do reach the schema's constraints


@pytest.mark.parametrize(
    ("edit", "sentence"),
    [
        (
            lambda r: r["corpus"].update(cases=3.0),
            None,
        ),  # a number with no fractional part is an integer
        (lambda r: r["corpus"].update(cases=3.5), "corpus.cases is a number, not an integer"),
        (lambda r: r.update(runs=[]), "runs has fewer than 1 items"),
        (
            lambda r: r["comparison"]["statistics"]["bootstrap"].update(method="bca"),
            'comparison.statistics.bootstrap.method is not "percentile"',
        ),
        (lambda r: r.update(comparison=5), "comparison is an integer, not an object or null"),
        (lambda r: r["baseline"].pop("digest"), "baseline.digest is missing"),
        (
            lambda r: r["timings"].update({"odd\x1b key": "x"}),
            'timings["odd\\u001b key"] is a text, not a number',
        ),
        (
            lambda r: r["baseline"]["comparisons"][0]["significance"]["recall"]["test"].update(
                p_value=2
            ),
            "baseline.comparisons[0].significance.recall.test.p_value is 2, above the maximum 1",
        ),
    ],
)
@pytest.mark.parametrize("library", ["jsonschema-rs", "jsonschema"])
def test_a_violation_is_one_sentence_naming_its_field(monkeypatch, library, edit, sentence):
    if library == "jsonschema":
        monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # as where its wheel is missing
    report_json._validator.cache_clear()
    try:
        document = small_report()
        edit(document)
        text = json.dumps(document)
        if sentence is None:
            assert report_json.parse_report(text, "b.json") == document
            return
        with pytest.raises(ReportError) as info:
            report_json.parse_report(text, "b.json")
        assert str(info.value) == f"b.json: {sentence}; the report is damaged"
    finally:
        report_json._validator.cache_clear()
