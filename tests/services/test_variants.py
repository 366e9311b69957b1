"""Variants through the evaluate use case on a real SQLite project: their runs, executed controls, costs and errors."""

from __future__ import annotations

import pytest

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.core.errors import InputError, VariantUnavailable
from ptah.core.report import Run
from ptah.services.build import build
from ptah.services.channels import plan_runs
from ptah.services.evaluate import evaluate
from ptah.services.variants import Stage, cost, p95_gates

from tests.embedders import EMBEDDERS
from tests.services.conftest import request
from tests.services.test_channels import CORPUS, TWO
from tests.services.test_evaluate import TableEmbedder

VARIANTS = """\
variants:
  bm25: {channels: [lexical], generation: bodies}
  fused: {channels: [vector, lexical]}
  served: {channels: [vector], search: index, ef_search: 80}
"""


@pytest.fixture
def built(workspace, embedders):
    path = workspace.write_spec(filter="status = 'published'", generations=TWO)
    path.write_text(path.read_text() + VARIANTS)
    embedders["test/table"] = TableEmbedder()
    with workspace.project() as project:
        build(project, "docs")
    return workspace


def run(workspace, **options):
    EMBEDDERS["test/table"] = TableEmbedder()
    with workspace.project() as project:
        return evaluate(project, parse_corpus(CORPUS, name="c.yaml"), request(**options))


def test_variants_run_after_the_channel_runs_named_by_the_variant(built):
    with built.project() as project:
        plans = plan_runs(project.spec, None, ["vector"], ["fused", "bm25", "fused"])
        assert [(p.name, p.channel, p.generation) for p in plans] == [
            ("docs", "vector", "docs"), ("fused", "hybrid", "docs"), ("bm25", "lexical", "bodies")]
        only = plan_runs(project.spec, None, (), ["bm25"])
        assert [p.name for p in only] == ["bm25"]
        with pytest.raises(InputError) as caught:
            plan_runs(project.spec, None, (), ["reranked"])
        assert str(caught.value) == (f'{project.spec.path}: no variant named "reranked"; the specification declares '
                                     "bm25, fused, served")


def test_a_variant_measures_exactly_what_its_channels_measure_and_keeps_its_controls(built):
    plain = run(built, names=["docs"], channels=["hybrid"]).runs[0]
    report = run(built, variants=["fused", "bm25"])
    fused, bm25 = report.runs
    assert fused.name == "fused" and fused.channel == "hybrid"
    assert [(c.id, c.ranking, dict(c.values)) for c in fused.cases] == [
        (c.id, c.ranking, dict(c.values)) for c in plain.cases]
    assert dict(fused.variant) == {"name": "fused", "channels": ("vector", "lexical"), "channel": "hybrid",
                                   "generation": "docs", "search": {"mode": "exact", "ef_search": None},
                                   "rerank": None}
    assert bm25.variant["generation"] == "bodies" and bm25.generation["name"] == "bm25"
    assert bm25.generation["text_of"] == "bodies"
    assert report.comparison.data["reference"] == "fused"
    data = report.to_dict()
    assert Run.from_dict(data["runs"][0]).variant == fused.variant


def test_a_plain_run_has_no_variant_and_every_run_is_timed_per_batch(built):
    report = run(built, channels=["vector", "lexical"])
    for each in report.runs:
        assert each.variant is None
        (stage,) = each.cost["stages"].values()
        assert stage["timed"] == "per batch"
        assert stage["p50_ms"] == stage["p95_ms"] == pytest.approx(stage["seconds"] * 1000 / 3)
        assert each.cost["p50_ms"] == stage["p50_ms"]
        assert 0 < stage["share"] < 1
    assert sum(each.cost["stages"]["search"]["seconds"] for each in report.runs) <= report.timings["total"]
    delta = report.comparison.data["candidates"][0]["cost"]
    assert delta == {"p50_ms": report.runs[1].cost["p50_ms"] - report.runs[0].cost["p50_ms"],
                     "p95_ms": report.runs[1].cost["p95_ms"] - report.runs[0].cost["p95_ms"]}


def test_a_variant_searching_an_index_the_store_lacks_is_refused_before_any_work(built):
    with pytest.raises(VariantUnavailable) as caught:
        run(built, channels=["vector"], variants=["served"])
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("variant served: --search index needs a vector index, and the SQLite store "
                                        "has none")


def test_cost_percentiles_and_shares_from_stages():
    stages = {"search": Stage(0.3, [0.1, 0.1, 0.1], "per batch"),
              "rerank": Stage(0.7, [0.1, 0.2, 0.4], "per query", {"requests": 3})}
    made = cost(stages, 2.0)
    assert made["stages"]["rerank"] == {"seconds": 0.7, "share": 0.35, "p50_ms": pytest.approx(200.0),
                                        "p95_ms": pytest.approx(380.0), "timed": "per query",
                                        "usage": {"requests": 3}}
    assert made["p50_ms"] == pytest.approx(300.0) and made["p95_ms"] == pytest.approx(480.0)  # 0.2,0.3,0.5 s
    assert cost(stages, None)["stages"]["search"]["share"] is None


def test_the_p95_gate_fails_a_run_over_its_limit_only_when_asked(built):
    report = run(built, channels=["vector"])
    p95 = report.runs[0].cost["p95_ms"]
    assert p95_gates(list(report.runs), None) == []
    (passing,) = p95_gates(list(report.runs), p95)
    (failing,) = p95_gates(list(report.runs), p95 / 2)
    assert passing.passed and passing.name == "max-p95-ms" and passing.generation == "docs"
    assert not failing.passed and failing.detail == f"p95 time per query {p95:,.1f} ms > {p95 / 2:,.1f} ms"
    gated = run(built, channels=["vector"], max_p95_ms=0.0)
    assert [g.name for g in gated.gates if not g.passed] == ["max-p95-ms"]
