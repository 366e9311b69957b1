"""ptah's JSON Schema subset: the same verdicts as the reference implementation (jsonschema) on the report schema."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from ptah.core.json_schema import SchemaViolation, compile_schema, json_path

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text(encoding="utf-8"))


def small_report() -> dict:
    """The checked-in baseline cut to two cases of two results (fewer paths to mutate), with a comparison added."""
    report = json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
    run = report["runs"][0]
    run["cases"] = run["cases"][:2]
    for case in run["cases"]:
        case["results"] = case["results"][:2]
    measure = {"reference": 0.5, "candidate": 1.0, "delta": 0.5, "cases": 2, "wins": 1, "ties": 1, "losses": 0, "undefined": 0,
               "interval": {"low": 0.0, "high": 1.0, "level": 0.95},
               "test": {"p_value": 1.0, "method": "exact", "nonzero": 1, "patterns": 2}, "finding": "no clear difference"}
    report["baseline"] = {"path": "b.json", "digest": report["corpus"]["digest"], "comparisons": [
        {"generation": "g", "identity": None, "against": "g", "significance": {"recall": measure}, "aggregates": {}, "cases_changed": []}]}
    return report


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, prefix + (index,))


def replaced(document, path, new):
    document = copy.deepcopy(document)
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return document


def verdict(check, document) -> bool:
    try:
        check(document)
    except SchemaViolation:
        return False
    return True


def test_every_single_value_replacement_gets_the_reference_verdict():
    check, reference = compile_schema(SCHEMA), jsonschema.Draft202012Validator(SCHEMA)
    report = small_report()
    assert verdict(check, report) and reference.is_valid(report)
    disagreements, invalid = [], 0
    for path in list(paths(report))[1:]:
        for new in (None, True, 0, -1, 3.0, 1.5, 2, "x", "sha256:" + "0" * 64, [], [{}], {}):
            document = replaced(report, path, new)
            ours, theirs = verdict(check, document), reference.is_valid(document)
            invalid += not theirs
            if ours != theirs:
                disagreements.append((json_path(path), new, ours, theirs))
    assert disagreements == []
    assert invalid > 1000  # the mutations do reach the schema's constraints


def test_removing_any_field_gets_the_reference_verdict():
    check, reference = compile_schema(SCHEMA), jsonschema.Draft202012Validator(SCHEMA)
    report = small_report()
    disagreements = []
    for path in list(paths(report))[1:]:
        if isinstance(path[-1], str):
            document = copy.deepcopy(report)
            target = document
            for part in path[:-1]:
                target = target[part]
            del target[path[-1]]
            if verdict(check, document) != reference.is_valid(document):
                disagreements.append(json_path(path))
    assert disagreements == []


@pytest.mark.parametrize(
    ("schema", "value", "field", "what"),
    [
        ({"type": "integer"}, 3.0, None, None),
        ({"type": "integer"}, 3.5, "the top level", "is a number, not an integer"),
        ({"type": "number"}, True, "the top level", "is a boolean, not a number"),
        ({"enum": [1]}, True, "the top level", "is not one of 1"),
        ({"const": False}, 0, "the top level", "is not false"),
        ({"type": "object", "required": ["a"]}, {}, "a", "is missing"),
        ({"properties": {"a": {"items": {"maximum": 1}}}}, {"a": [0, 2]}, "a[1]", "is 2, above the maximum 1"),
        ({"additionalProperties": False}, {"odd\x1b key": 1}, '["odd\\u001b key"]', "is not a known field"),
        ({"oneOf": [{"type": "null"}, {"type": "object", "required": ["x"]}]}, {}, "x", "is missing"),
        ({"oneOf": [{"type": "null"}, {"type": "object"}]}, 5, "the top level", "is an integer, not null or an object"),
        ({"pattern": "^a"}, 5, None, None),
        ({"minItems": 1}, [], "the top level", "has fewer than 1 items"),
        ({"$defs": {"d": {"minimum": 0}}, "items": {"$ref": "#/$defs/d"}}, [1, -1], "[1]", "is -1, below the minimum 0"),
    ],
)
def test_violations_name_the_field_and_what_is_wrong(schema, value, field, what):
    check = compile_schema(schema)
    if field is None:
        check(value)
        return
    with pytest.raises(SchemaViolation) as info:
        check(value)
    assert (info.value.field, info.value.what) == (field, what)


def test_a_keyword_the_subset_lacks_is_refused_when_compiled():
    with pytest.raises(ValueError, match=r"schema keywords \['anyOf'\] are not supported"):
        compile_schema({"properties": {"a": {"anyOf": [{"type": "null"}]}}})
    with pytest.raises(ValueError, match="only #/\\$defs/NAME"):
        compile_schema({"$ref": "https://example.com/s.json"})
