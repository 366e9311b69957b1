"""The typed parts of a report (the comparisons, a run's members) and the report's JSON schema
agree field for field, and a comparison of an older report reads back with its absent members
absent."""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from importlib import resources
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from ptah.core.baseline import compare
from ptah.core.compared import BaselineComparison, Family, MeasureComparison
from ptah.core.comparison import compare_runs
from ptah.core.gate_parts import GateHoles, GatePower, HolesEstimate, HolesSample, JudgeAccount
from ptah.core.measures import Mean
from ptah.core.parts import (
    CaseAnn,
    Cost,
    ForbiddenCounts,
    RequiredCounts,
    RunAnn,
    RunGeneration,
    RunVariant,
    Search,
    SliceMeans,
    TieCounts,
)
from ptah.core.report_parts import ReportBaseline, ReportCorpus, StaleJudgement
from ptah.core.side_by_side import Comparison
from tests.core.test_comparison import CANDIDATE, REFERENCE

SCHEMA = json.loads(
    resources.files("ptah").joinpath("schemas/report.schema.json").read_text(encoding="utf-8")
)
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def resolved(node: Mapping) -> Mapping:
    """``node``, or the definition its ``$ref`` names."""
    ref = node.get("$ref")
    return node if ref is None else SCHEMA["$defs"][ref.removeprefix("#/$defs/")]


def members(cls: type) -> dict[str, Any]:
    """Each JSON member of a typed part (its fields but ``omitted`` and the one that holds the rest
    of a free-form part, its ``REST``) and its type."""
    hints = get_type_hints(cls)
    left_out = {"omitted", getattr(cls, "REST", None)}
    return {field.name: hints[field.name] for field in fields(cls) if field.name not in left_out}


def without_none(hint: Any) -> tuple[Any, bool]:
    """``hint`` without ``None``, and whether it allowed None."""
    if get_origin(hint) in (Union, types.UnionType):
        rest = [arg for arg in get_args(hint) if arg is not type(None)]
        assert len(rest) == 1, hint
        return rest[0], len(rest) < len(get_args(hint))
    return hint, False


def disagreements(cls: type, node: Mapping, path: str) -> list[str]:
    """Where the dataclass ``cls`` and the schema ``node`` disagree, each as a sentence."""
    node = resolved(node)
    properties = node.get("properties", {})
    ours = members(cls)
    found = [f"{path}.{name}: a field the schema lacks" for name in ours if name not in properties]
    found += [
        f"{path}.{name}: in the schema, not a field" for name in properties if name not in ours
    ]
    found += [
        f"{path}.{name}: required, but a report may lack it"
        for name in (*getattr(cls, "OPTIONAL", ()), *getattr(cls, "ABSENT_WHEN_NONE", ()))
        if name in node.get("required", ())
    ]
    found += [
        f"{path}.{name}: required by the schema, not a field"
        for name in node.get("required", ())
        if name not in ours
    ]
    for name, hint in ours.items():
        if name in properties:
            found += _disagreements_of(hint, properties[name], f"{path}.{name}")
    return found


def _disagreements_of(hint: Any, node: Mapping, path: str) -> list[str]:
    hint, nullable = without_none(hint)
    if "oneOf" in node:  # a part or null
        (node,) = [each for each in node["oneOf"] if each.get("type") != "null"]
    node = resolved(node)
    allowed = node.get("type")
    allowed = [allowed] if isinstance(allowed, str) else allowed
    if allowed is not None and "null" in allowed and not nullable:
        return [f"{path}: the schema allows null, the field does not"]
    origin = get_origin(hint)
    if hint is Mean:
        return [] if node is SCHEMA["$defs"]["mean"] else [f"{path}: a mean, not the schema's mean"]
    if is_dataclass(hint):
        return disagreements(hint, node, path)
    if hint is Mapping or (origin is Mapping and node.get("additionalProperties") is None):
        # free-form (where the schema names no members' type); an object either way
        return [] if allowed is None or "object" in allowed else [f"{path}: not an object"]
    if origin is Mapping:
        return _disagreements_of(get_args(hint)[1], node["additionalProperties"], f"{path}[*]")
    if origin is tuple:
        if allowed is not None and "array" not in allowed:
            return [f"{path}: a tuple, not an array in the schema"]
        return _disagreements_of(get_args(hint)[0], node["items"], f"{path}[*]")
    if allowed is not None and JSON_TYPES[hint] not in allowed:
        if not (hint is float and "integer" in allowed):
            return [f"{path}: {hint.__name__}, the schema says {allowed}"]
    return []


RUN = SCHEMA["$defs"]["run"]["properties"]
AGGREGATES = RUN["aggregates"]["properties"]
GATE = SCHEMA["properties"]["gates"]["items"]["properties"]
BASELINE = SCHEMA["properties"]["baseline"]
# the baseline's own members: its comparisons are the report's (Report.comparisons)
BASELINE_OWN = BASELINE | {
    "properties": {k: v for k, v in BASELINE["properties"].items() if k != "comparisons"},
    "required": [name for name in BASELINE["required"] if name != "comparisons"],
}


@pytest.mark.parametrize(
    ("cls", "node"),
    [
        (Comparison, SCHEMA["properties"]["comparison"]),
        (
            BaselineComparison,
            SCHEMA["properties"]["baseline"]["properties"]["comparisons"]["items"],
        ),
        (Family, SCHEMA["properties"]["baseline"]["properties"]["family"]),
        (RunGeneration, RUN["generation"]),
        (Search, RUN["search"]),
        (RunVariant, RUN["variant"]),
        (Cost, RUN["cost"]),
        (SliceMeans, RUN["slices"]["additionalProperties"]),
        (RequiredCounts, AGGREGATES["required"]),
        (ForbiddenCounts, AGGREGATES["forbidden"]),
        (TieCounts, AGGREGATES["ties"]),
        (RunAnn, AGGREGATES["ann"]),
        (CaseAnn, SCHEMA["$defs"]["case"]["properties"]["ann"]),
        (GateHoles, GATE["holes"]),
        (GatePower, GATE["power"]),
        (StaleJudgement, SCHEMA["properties"]["stale_judgements"]["items"]),
        (ReportCorpus, SCHEMA["properties"]["corpus"]),
        (ReportBaseline, BASELINE_OWN),
    ],
    ids=[
        "comparison",
        "baseline.comparisons",
        "baseline.family",
        "run.generation",
        "run.search",
        "run.variant",
        "run.cost",
        "run.slices",
        "aggregates.required",
        "aggregates.forbidden",
        "aggregates.ties",
        "aggregates.ann",
        "case.ann",
        "gate.holes",
        "gate.power",
        "stale_judgements",
        "corpus",
        "baseline",
    ],
)
def test_the_dataclasses_and_the_schema_agree_field_for_field(cls, node):
    assert disagreements(cls, node, cls.__name__) == []


def test_the_walk_finds_a_member_the_schema_lacks_or_types_otherwise():
    measure = SCHEMA["$defs"]["measure_comparison"]
    properties = {name: value for name, value in measure["properties"].items() if name != "wins"}
    properties["cases"] = {"type": "string"}
    lacking = measure | {"properties": properties}
    assert disagreements(MeasureComparison, lacking, "m") == [
        "m.wins: a field the schema lacks",
        "m.cases: int, the schema says ['string']",
    ]


def test_a_comparison_of_an_older_report_reads_back_without_the_members_it_lacked():
    side = compare_runs([REFERENCE, CANDIDATE]).to_dict()
    for entry in side["candidates"][0]["measures"].values():  # ptah-report@1: no holes
        for name in ("judged", "settle", "holes"):
            del entry[name]
    assert Comparison.from_dict(side).to_dict() == side
    against = compare(CANDIDATE, REFERENCE).to_dict()
    for name in ("identity", "provenance", "against", "significance", "baseline_holes_lost"):
        del against[name]
    for entry in against["aggregates"].values():
        del entry["current_high"]
    back = BaselineComparison.from_dict(against)
    assert back.to_dict() == against and back.significance is None
    assert json.dumps(back.to_dict()) == json.dumps(against)  # in the order written


def test_a_gates_holes_read_back_in_the_order_written_and_without_what_an_older_report_lacked():
    judge = JudgeAccount(
        "model:encoder@sha256:" + "a" * 64,
        "encoder",
        3,
        5,
        0,
        0,
        15,
        20,
        1.0,
        1.0,
        (0.5, 1.0),
        1.0,
        (0.8, 1.0),
        0.5,
        0.2,
        True,
        None,
        6,
        -11,
    )
    holes = GateHoles(
        policy="bound",
        holes=50,
        flip_count=15,
        flip_count_exact=True,
        direction="pass",
        plausible_relevant=6,
        sample=HolesSample(seed=7, population=50, drawn=20, relevant=5),
        strata={},
        estimate=HolesEstimate(0.1, (0.05, 0.15), 0.95),
        inconclusive=False,
        samples_ignored=(),
        judges=(judge,),
        settling_sample=None,
        command=None,
    )
    written = json.loads(json.dumps(holes.to_dict()))
    assert list(written) == [name for name in members(GateHoles)]
    assert "cost" in written["judges"][0]
    assert json.dumps(GateHoles.from_dict(written).to_dict()) == json.dumps(written)
    for name in ("direction", "strata", "estimate", "command", "judges"):
        del written[name]
    assert json.dumps(GateHoles.from_dict(written).to_dict()) == json.dumps(written)


def test_the_corpus_member_of_an_older_report_reads_back_without_its_record_or_slices():
    older = {"path": "c.yaml", "name": None, "digest": "sha256:" + "0" * 64, "cases": 3}
    assert json.dumps(ReportCorpus.from_dict(older).to_dict()) == json.dumps(older)
    tagged = older | {
        "judgements": None,
        "slices": {"billing": {"digest": "sha256:" + "1" * 64, "cases": ["a", "b"]}},
    }
    assert json.dumps(ReportCorpus.from_dict(tagged).to_dict()) == json.dumps(tagged)


def test_the_baseline_member_reads_back_with_what_it_held_and_no_more():
    digest = "sha256:" + "0" * 64
    bare = {"path": None, "digest": digest}
    assert ReportBaseline.from_dict(bare).to_dict() == bare
    full = {
        "path": "base.json",
        "digest": digest,
        "rescored": {
            "judgements_added": 2,
            "judgements_changed": 0,
            "cases_changed": 1,
            "judged_since": True,
        },
        "family": {"correction": "holm", "alpha": 0.05, "tests": 4, "surviving": 1},
    }
    back = ReportBaseline.from_dict(full)
    assert isinstance(back.family, Family) and back.rescored is not None
    assert json.dumps(back.to_dict()) == json.dumps(full)
