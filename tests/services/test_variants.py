"""Variants through the evaluate use case on a real SQLite project: their runs, executed controls,
costs and errors."""

from __future__ import annotations

import json
import time

import pytest

from ptah.cli.words import COMMAND_LINE
from ptah.core.compared import CostDelta
from ptah.core.errors import InputError, VariantUnavailable
from ptah.core.parts import SearchRerank
from ptah.core.report import Run
from ptah.render.layout import milliseconds
from ptah.render.sentences import stage_phrase
from ptah.services.build import build
from ptah.services.channels import plan_runs
from ptah.services.sections import Stage, cost, p95_gates
from tests.embedders import EMBEDDERS
from tests.rerankers.conftest import rerank_server  # noqa: F401  (the fixture: a real rerank server)
from tests.services.test_channels import CORPUS, TWO
from tests.services.test_channels import measured as run
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


def test_variants_run_after_the_channel_runs_named_by_the_variant(built):
    with built.project() as project:
        plans = plan_runs(project.spec, None, ["vector"], ["fused", "bm25", "fused"])
        assert [(p.name, p.channel, p.generation) for p in plans] == [
            ("docs", "vector", "docs"),
            ("fused", "hybrid", "docs"),
            ("bm25", "lexical", "bodies"),
        ]
        only = plan_runs(project.spec, None, (), ["bm25"])
        assert [p.name for p in only] == ["bm25"]
        with pytest.raises(InputError) as caught:
            plan_runs(project.spec, None, (), ["reranked"])
        assert str(caught.value) == (
            f'{project.spec.path}: no variant named "reranked"; the specification declares '
            "bm25, fused, served"
        )


def test_a_variant_measures_exactly_what_its_channels_measure_and_keeps_its_controls(built):
    plain = run(built, names=["docs"], channels=["hybrid"]).runs[0]
    report = run(built, variants=["fused", "bm25"])
    fused, bm25 = report.runs
    assert fused.name == "fused" and fused.channel == "hybrid"
    assert [(c.id, c.ranking, dict(c.values)) for c in fused.cases] == [
        (c.id, c.ranking, dict(c.values)) for c in plain.cases
    ]
    assert fused.variant.to_dict() == {
        "name": "fused",
        "channels": ["vector", "lexical"],
        "channel": "hybrid",
        "generation": "docs",
        "search": {"mode": "exact", "ef_search": None},
        "rerank": None,
    }
    assert bm25.variant.generation == "bodies" and bm25.generation.name == "bm25"
    assert bm25.generation.text_of == "bodies"
    assert report.comparison.reference == "fused"
    data = report.to_dict()
    assert Run.from_dict(data["runs"][0]).variant == fused.variant


def test_a_plain_run_has_no_variant_and_every_run_is_timed_per_batch(built):
    report = run(built, channels=["vector", "lexical"])
    for each in report.runs:
        assert each.variant is None
        (stage,) = each.cost.stages.values()
        assert stage.timed == "per batch"
        charged = stage.seconds - (stage.load_s or 0.0)  # the model's load is the stage's
        assert stage.p50_ms == stage.p95_ms == pytest.approx(charged * 1000 / 3)
        assert each.cost.p50_ms == stage.p50_ms
        assert 0 < stage.share < 1
    assert (
        sum(each.cost.stages["search"].seconds for each in report.runs) <= report.timings["total"]
    )
    delta = report.comparison.candidates[0].cost
    assert delta == CostDelta(
        p50_ms=report.runs[1].cost.p50_ms - report.runs[0].cost.p50_ms,
        p95_ms=report.runs[1].cost.p95_ms - report.runs[0].cost.p95_ms,
    )


def test_a_variant_searching_an_index_the_store_lacks_is_refused_before_any_work(built):
    with pytest.raises(VariantUnavailable) as caught:
        run(built, channels=["vector"], variants=["served"])
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(
        "variant served: search=index needs a vector index, and the SQLite store has none"
    )
    assert caught.value.said(COMMAND_LINE).startswith(
        "variant served: --search index needs a vector index, and the SQLite store has none"
    )


def test_cost_percentiles_and_shares_from_stages():
    stages = {
        "search": Stage(0.3, [0.1, 0.1, 0.1], "per batch"),
        "rerank": Stage(0.7, [0.1, 0.2, 0.4], "per query", {"requests": 3}),
    }
    made = cost(stages, 2.0).to_dict()
    assert made["stages"]["rerank"] == {
        "seconds": 0.7,
        "share": 0.35,
        "p50_ms": pytest.approx(200.0),
        "p95_ms": pytest.approx(380.0),
        "timed": "per query",
        "usage": {"requests": 3},
    }
    assert made["p50_ms"] == pytest.approx(300.0) and made["p95_ms"] == pytest.approx(
        480.0
    )  # 0.2,0.3,0.5 s
    assert cost(stages, None).stages["search"].share is None


def test_a_cold_run_keeps_the_model_load_out_of_its_time_per_query(built, monkeypatch):
    import ptah.adapters.embedders as embedders_module

    opened = embedders_module.open_embedder

    def slow(settings, root):  # a model that takes a second to load
        time.sleep(1.0)
        return opened(settings, root)

    monkeypatch.setattr(embedders_module, "open_embedder", slow)
    report = run(built, names=["docs"], channels=["vector", "hybrid"])
    cold, warm = (run_.cost.stages["search"] for run_ in report.runs)
    assert cold.load_s >= 1.0 and cold.seconds >= cold.load_s  # its seconds keep the load
    assert (
        cold.p95_ms < 1000.0 * cold.load_s / 3 / 2
    )  # each of the 3 queries charged its share less the load
    assert "load_s" not in warm.to_dict()  # the second run found the model loaded
    assert stage_phrase(cold).startswith(
        f"{milliseconds(cold.p50_ms)} timed per batch (loading the model took "
        f"{cold.load_s:,.2f} s, left out of the time per query), "
    )


def test_the_p95_gate_fails_a_run_over_its_limit_only_when_asked(built):
    report = run(built, channels=["vector"])
    p95 = report.runs[0].cost.p95_ms
    assert p95_gates(list(report.runs), None) == []
    (passing,) = p95_gates(list(report.runs), p95)
    (failing,) = p95_gates(list(report.runs), p95 / 2)
    assert passing.passed and passing.name == "max-p95-ms" and passing.generation == "docs"
    assert (
        not failing.passed
        and failing.detail == f"p95 time per query {p95:,.1f} ms > {p95 / 2:,.1f} ms"
    )
    gated = run(built, channels=["vector"], max_p95_ms=0.0)
    assert [g.name for g in gated.gates if not g.passed] == ["max-p95-ms"]


# -- the rerank stage
# ------------------------------------------------------------------------------------------------


class Vowels:
    """A toy reranker: a text's score is how many vowels it holds."""

    def __init__(self):
        self.calls: list[tuple[str, list[str]]] = []

    def scores(self, query, texts):
        self.calls.append((query, list(texts)))
        return [float(sum(text.count(v) for v in "aeiou")) for text in texts]

    def describe(self):
        return {"kind": "vowels", "model": None}

    def usage(self):
        return {"requests": len(self.calls)}


class VowelsKind:
    name = "vowels"

    def __init__(self):
        self.opened: list = []

    def open(self, settings, context):
        self.opened.append(Vowels())
        return self.opened[-1]


@pytest.fixture
def vowels(monkeypatch):
    from ptah.adapters.rerankers import registry

    fresh = registry.RerankerRegistry()
    kind = VowelsKind()
    fresh.register(kind)
    monkeypatch.setattr(registry, "REGISTRY", fresh)
    return kind


def with_variants(workspace, text: str) -> None:
    workspace.spec_path.write_text(workspace.spec_path.read_text() + text)


def test_the_rerank_stage_ranks_the_channels_top_candidates_by_the_rerankers_scores(built, vowels):
    with_variants(
        built, "  voweled:\n    channels: [vector]\n    rerank: {kind: vowels, candidates: 5}\n"
    )
    candidates = run(built, CORPUS.replace("default_k: 3", "default_k: 5")).runs[0]
    with built.project() as project:
        texts = {row.key: row.text for row in project.source.rows("{title}\n\n{body}")}
    report = run(built, variants=["voweled"])
    (reranked,) = report.runs
    (opened,) = vowels.opened
    for case, listed, (query, scored) in zip(reranked.cases, candidates.cases, opened.calls):
        keys = [result.key for result in listed.ranking]
        assert scored == [texts[key] for key in keys] and query == case.query
        order = sorted(keys, key=lambda key: (-sum(texts[key].count(v) for v in "aeiou"), key))
        assert [result.key for result in case.ranking] == order[:3]
        assert [result.score for result in case.ranking] == [
            float(sum(texts[k].count(v) for v in "aeiou")) for k in order[:3]
        ]
        for miss in case.missed:
            assert miss.rank == (order.index(miss.key) + 1 if miss.key in order else None)
            if miss.key not in order:
                assert miss.placement == "not among the 5 candidates reranked"
        assert [hole.key for hole in case.holes] == [
            key
            for key in order[:3]
            if key not in {*dict(case.relevant), *case.required, *case.forbidden}
        ]
    rerank = reranked.variant.rerank
    assert rerank.kind == "vowels" and rerank.candidates == 5
    assert rerank.scorer == {"kind": "vowels", "model": None} and rerank.usage == {"requests": 3}
    assert reranked.search.rerank == SearchRerank("vowels", 5)
    stages = reranked.cost.stages
    assert stages["rerank"].timed == "per query" and stages["rerank"].usage == {"requests": 3}
    assert reranked.cost.p95_ms >= reranked.cost.p50_ms > stages["search"].p50_ms


def test_an_unknown_reranker_kind_is_exit_2_naming_the_registered_ones(built, vowels):
    with_variants(built, "  odd:\n    channels: [lexical]\n    rerank: {kind: odd}\n")
    with pytest.raises(InputError) as caught:
        run(built, variants=["odd"])
    assert (str(caught.value), caught.value.exit_code) == (
        "unknown reranker kind 'odd'; the registered kinds are vowels, cross-encoder, bi-encoder, service",
        2,
    )


def test_a_cross_encoder_model_that_is_not_there_is_exit_2_for_the_variant(built, tmp_path):
    with_variants(
        built,
        f"  crossed:\n    channels: [lexical]\n    rerank: {{kind: cross-encoder, model: {tmp_path / 'nowhere'}}}\n",
    )
    with pytest.raises(VariantUnavailable) as caught:
        run(built, variants=["crossed"])
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith('variant "crossed": its reranker cannot be opened: ')


@pytest.mark.parametrize(
    "fault, sentence",
    [
        (None, None),
        (
            "fewer",
            "answered 0 scores for 1 documents",
        ),  # the first case's one BM25 match, its one result left out
        ("nan", "answered a relevance_score that is not a finite number"),
        (
            "other-model",
            'answered with model "rerank-multilingual-v2.0", not "rerank-english-v3.0" as asked',
        ),
    ],
)
def test_a_service_reranks_through_evaluate_and_every_wrong_answer_is_exit_3(
    built,
    cli,
    rerank_server,
    monkeypatch,  # noqa: F811
    fault,
    sentence,
):
    from ptah.adapters.embedders.http_client import Policy
    from ptah.adapters.rerankers import service

    monkeypatch.setattr(service, "POLICY", Policy(attempts=2, backoff_s=0.0, max_delay_s=0.0))
    monkeypatch.setenv("RERANK_KEY", "rk-SECRET-0042")
    with_variants(
        built,
        f"  served-rerank:\n    channels: [lexical]\n    rerank: {{kind: service, base_url: "
        f'"{rerank_server.base_url}", model: rerank-english-v3.0, api_key_env: RERANK_KEY, '
        "candidates: 3}\n",
    )
    (built.folder / "c.yaml").write_text(CORPUS)
    rerank_server.reset()
    rerank_server.always = fault
    code, out, err = cli(
        "inference",
        "evaluate",
        "--spec",
        built.spec_path,
        "--corpus",
        built.folder / "c.yaml",
        "--variant",
        "served-rerank",
        "--json",
    )
    assert "rk-SECRET-0042" not in out + err
    if fault is None:
        assert code in (0, 1) and err == ""
        (reranked,) = json.loads(out)["runs"]
        assert reranked["variant"]["rerank"]["usage"]["requests"] == 3
        assert all(r["authorization"] == "Bearer rk-SECRET-0042" for r in rerank_server.requests)
        return
    assert code == 3 and out == ""
    assert (
        err
        == f"the rerank service {rerank_server.base_url}/rerank {sentence}; the answer was refused\n"
    )


def test_a_cross_encoder_reranks_through_evaluate_with_the_models_own_logits(built, tmp_path):
    from tests.rerankers.test_rerank_cross_encoder import forward, save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny")
    with_variants(
        built,
        f"  crossed:\n    channels: [vector]\n    rerank: {{kind: cross-encoder, model: {tiny}, "
        "candidates: 4, batch_size: 4}\n",
    )
    candidates = run(built, CORPUS.replace("default_k: 3", "default_k: 4")).runs[0]
    with built.project() as project:
        texts = {row.key: row.text for row in project.source.rows("{title}\n\n{body}")}
    (crossed,) = run(built, variants=["crossed"]).runs
    assert crossed.variant.rerank.scorer["kind"] == "cross-encoder"
    for case, listed in zip(crossed.cases, candidates.cases):
        keys = [result.key for result in listed.ranking]
        logits = forward(tiny, case.query, [texts[key] for key in keys], batch_size=4)
        expected = sorted(zip(keys, logits), key=lambda pair: (-pair[1], pair[0]))[:3]
        assert [result.key for result in case.ranking] == [key for key, _ in expected]
        assert (
            max(abs(result.score - logit) for result, (_, logit) in zip(case.ranking, expected))
            <= 1e-6
        )


def test_a_run_over_its_p95_limit_exits_1_and_one_within_it_0(built, cli):
    (built.folder / "c.yaml").write_text(CORPUS)
    EMBEDDERS["test/table"] = TableEmbedder()
    argv = ("inference", "evaluate", "--spec", built.spec_path, "--corpus", built.folder / "c.yaml")
    over = cli(*argv, "--max-p95-ms", "0")
    assert over.code == 1 and "FAIL max-p95-ms (docs): p95 time per query" in over.out
    assert cli(*argv, "--max-p95-ms", "100000").code == 0
