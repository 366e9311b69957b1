"""Channels through the evaluate use case on a real SQLite project: lexical, hybrid, the runs they
make, their errors."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from importlib import resources

import bm25s
import jsonschema
import numpy as np
import pytest

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.cli.words import COMMAND_LINE
from ptah.core.comparison import StatisticsSettings
from ptah.core.errors import (
    InputError,
    ModelUnavailable,
    StaleGeneration,
    UnknownGeneration,
    UnknownKey,
)
from ptah.core.request import Fusion
from ptah.services.build import build
from ptah.services.channels import RunPlan, plan_runs
from ptah.services.evaluate import evaluate
from tests.embedders import EMBEDDERS
from tests.services.conftest import DOCS, Workspace, request
from tests.services.test_evaluate import TableEmbedder

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: cancel
    query: cancel subscription at 10
    required: ["1"]
  - id: password
    query: forgot password link at 20
    required: ["2"]
  - id: tokens
    query: developer tokens at 75
    required: ["8"]
    relevant: {"8": 2, "4": 1}
"""
TWO = {"docs": "model: test/table", "bodies": "model: test/table\n    text: '{body}'"}


@pytest.fixture
def built(workspace, embedders):
    workspace.write_spec(filter="status = 'published'", generations=TWO)
    embedders["test/table"] = TableEmbedder()
    with workspace.project() as project:
        build(project, "docs")
    return workspace


def measured(workspace, corpus_text=CORPUS, baseline=None, **options):
    """The report of ``corpus_text`` evaluated on ``workspace``, a fresh TableEmbedder the model
    ``test/table``."""
    EMBEDDERS["test/table"] = TableEmbedder()
    with workspace.project() as project:
        return evaluate(
            project,
            parse_corpus(corpus_text, name="c.yaml"),
            request(**options),
            baseline_report=baseline,
        )


def run(workspace, corpus_text=CORPUS, **options):
    return measured(workspace, corpus_text, **options).to_dict()


def lexical_indexes(workspace) -> list[tuple]:
    with sqlite3.connect(workspace.store_path) as connection:
        return connection.execute("SELECT fingerprint, rows FROM lexical_indexes").fetchall()


def test_runs_are_every_channel_with_every_generation_channel_major(built):
    with built.project() as project:
        plans = plan_runs(project.spec, ["docs", "bodies"], ["vector", "lexical", "vector"])
    assert [p.name for p in plans] == ["docs", "bodies", "lexical:docs", "lexical:bodies"]
    assert plans[2] == RunPlan("lexical", "docs")


def test_the_lexical_channel_ranks_by_bm25_over_the_generations_text(built):
    report = run(built, names=["docs"], channels=["lexical"])
    (only,) = report["runs"]
    assert only["search"]["channel"] == "lexical" and only["search"]["similarity"] == "bm25"
    assert only["generation"]["name"] == "lexical:docs" and only["generation"]["text_of"] == "docs"
    assert report["comparison"] is None
    published = [row for row in DOCS if row[3] == "published"]
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(
        bm25s.tokenize([Workspace.text(r) for r in published], stopwords="en", show_progress=False),
        show_progress=False,
    )
    for case in only["cases"]:
        tokens = bm25s.tokenize(
            [case["query"]], stopwords="en", return_ids=False, show_progress=False
        )
        documents, scores = retriever.retrieve(tokens, k=len(published), show_progress=False)
        # bm25s orders equal scores arbitrarily; ptah by key ascending
        # rows with score 0 matched no query term: they are not results
        expected = [
            pair
            for pair in sorted(
                ((str(published[d][0]), float(s)) for d, s in zip(documents[0], scores[0])),
                key=lambda pair: (-pair[1], pair[0]),
            )
            if pair[1] > 0
        ][:3]
        assert [(r["key"], r["score"]) for r in case["results"]] == expected
    assert only["cases"][0]["results"][0]["key"] == "1"


def test_the_index_is_kept_in_the_store_and_rebuilt_only_when_the_text_changes(built):
    first = run(built, channels=["lexical"])["runs"][0]["generation"]
    assert first["index"]["reused"] is False
    assert lexical_indexes(built) == [(first["index"]["fingerprint"], 9)]
    again = run(built, channels=["lexical"])["runs"][0]["generation"]
    assert again["index"] == {"fingerprint": first["index"]["fingerprint"], "reused": True}
    built.execute(
        "UPDATE articles SET status = 'published' WHERE id = 8"
    )  # no text change: same index
    assert run(built, channels=["lexical"])["runs"][0]["generation"]["index"]["reused"] is True
    built.execute(
        "UPDATE articles SET body = 'Create API tokens under developer settings.' WHERE id = 8"
    )
    changed = run(built, channels=["lexical"])["runs"][0]["generation"]
    assert (
        changed["index"]["reused"] is False
        and changed["index"]["fingerprint"] != first["index"]["fingerprint"]
    )
    assert lexical_indexes(built) == [
        (changed["index"]["fingerprint"], 9)
    ]  # replaced, not piled up
    run(built, names=["bodies"], channels=["lexical"])  # another template: its own index
    assert len(lexical_indexes(built)) == 2


def test_the_lexical_channel_needs_no_model_and_no_build(workspace):
    workspace.write_spec(generations={"docs": "model: sentence-transformers/no-such-model"})
    report = run(workspace, channels=["lexical"])
    assert report["runs"][0]["cases"][0]["results"][0]["key"] == "1"
    with pytest.raises(ModelUnavailable):
        run(workspace, channels=["vector"])


def test_hybrid_fuses_the_lexical_and_vector_rankings(built):
    report = run(built, channels=["hybrid"], fusion=Fusion(k=60, depth=1000))
    (hybrid,) = report["runs"]
    assert hybrid["generation"]["name"] == "hybrid:docs"
    assert hybrid["search"]["fusion"] == {
        "method": "reciprocal rank fusion",
        "k": 60,
        "depth": 1000,
        "channels": ["lexical:docs", "docs"],
    }
    whole = CORPUS.replace(
        "default_k: 3", "default_k: 9"
    )  # each channel's full ranking of the 9 rows
    lexical = {c["id"]: c for c in run(built, whole, channels=["lexical"])["runs"][0]["cases"]}
    vector = {c["id"]: c for c in run(built, whole, channels=["vector"])["runs"][0]["cases"]}
    for case in hybrid["cases"]:
        fused: dict[str, float] = {}
        for ranking in (
            [
                r["key"] for r in lexical[case["id"]]["results"] if r["score"] > 0
            ],  # rows matching no term are left out
            [r["key"] for r in vector[case["id"]]["results"]],
        ):
            for rank, key in enumerate(ranking, start=1):
                fused[key] = fused.get(key, 0.0) + 1 / (60 + rank)
        expected = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:3]
        assert [r["key"] for r in case["results"]] == [key for key, _ in expected]
        assert [r["score"] for r in case["results"]] == pytest.approx(
            [score for _, score in expected], abs=1e-15
        )


def test_side_by_side_runs_carry_a_comparison_that_matches_the_schema(built):
    report = run(
        built,
        channels=["vector", "lexical", "hybrid"],
        statistics=StatisticsSettings(resamples=500, seed=3),
    )
    assert [r["generation"]["name"] for r in report["runs"]] == [
        "docs",
        "lexical:docs",
        "hybrid:docs",
    ]
    comparison = report["comparison"]
    assert comparison["reference"] == "docs"
    assert [c["run"] for c in comparison["candidates"]] == ["lexical:docs", "hybrid:docs"]
    assert (
        comparison["statistics"]["seed"] == 3
        and comparison["statistics"]["bootstrap"]["resamples"] == 500
    )
    schema = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert math.isfinite(report["timings"]["lexical_index"]) and "fusion" in report["timings"]
    again = run(
        built,
        channels=["vector", "lexical", "hybrid"],
        statistics=StatisticsSettings(resamples=500, seed=3),
    )
    for candidate in (*comparison["candidates"], *again["comparison"]["candidates"]):
        assert set(candidate.pop("cost")) == {
            "p50_ms",
            "p95_ms",
        }  # the time per query: never the same twice
    assert again["comparison"] == comparison  # seeded: the same numbers


def test_what_does_not_exist_is_an_error_never_a_fallback(built, workspace):
    with pytest.raises(InputError, match="unknown channel 'bm25'") as info:
        run(built, channels=["bm25"])
    assert info.value.exit_code == 2
    with pytest.raises(StaleGeneration, match='generation "bodies" has not been built') as info:
        run(built, names=["bodies"], channels=["hybrid"])  # the vector side was never built
    assert info.value.exit_code == 3
    with pytest.raises(UnknownGeneration, match='no generation named "nope"'):
        run(built, names=["nope"], channels=["lexical"])
    with pytest.raises(UnknownKey, match="'42'"):
        run(built, CORPUS.replace('required: ["2"]', 'required: ["42"]'), channels=["lexical"])
    built.write_spec(generations=TWO, active="null")
    with pytest.raises(UnknownGeneration) as info:
        run(built, channels=["hybrid"])
    assert info.value.exit_code == 2
    assert info.value.said(COMMAND_LINE) == (
        f"{built.spec_path}: --channel hybrid reads its text (and, for hybrid, its vectors) from a "
        "generation, and none is named or active; pass --generation NAME"
    )
    assert str(info.value) == (
        f"{built.spec_path}: channels=hybrid reads its text (and, for hybrid, its vectors) from a "
        "generation, and none is named or active; pass generations=NAME"
    )


def test_bad_fusion_settings_are_usage_errors():
    with pytest.raises(
        InputError, match=r"^rrf_k: must be a finite number of at least 0, not -1\.0\.$"
    ):
        Fusion(k=-1)
    with pytest.raises(
        InputError, match=r"^rrf_depth: must be a whole number from 1 to 100,000, not 0\.$"
    ):
        Fusion(depth=0)
    assert np.isfinite(Fusion().k)


def test_rows_a_query_does_not_match_are_not_results_and_a_miss_says_how_many_its_own_query_matched(
    built,
):
    """Each case's query matches its own number of rows (none, for the first): the miss says that
    number, never one depth for all."""
    corpus = (
        'version: 1\ndefault_k: 3\ncases:\n  - {id: nothing, query: "zzzzqq xxyyzz", required: ["1"]}\n'
        '  - {id: billing, query: billing, required: ["2"]}\n  - {id: hooks, query: webhooks, required: ["2"]}\n'
    )
    report = run(built, corpus, names=["docs"], channels=["lexical"])
    cases = report["runs"][0]["cases"]
    assert [case["required"]["missed"] for case in cases] == [
        [{"key": "1", "rank": None, "where": "not among the 0 rows the query matched"}],
        [{"key": "2", "rank": None, "where": "not among the 3 rows the query matched"}],
        [{"key": "2", "rank": None, "where": "not among the 1 row the query matched"}],
    ]
    assert (cases[0]["results"], cases[0]["metrics"]) == (
        [],
        {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0},
    )
    assert report["verdict"] == "fail"


def test_the_report_schema_names_the_registered_channels():
    """The schema is a published file; the channel registry is the authority it must agree with:
    it names each of ptah's own channels, and takes a plug-in's by its name (a report of one is a
    baseline too)."""
    from ptah.services.channels import channel_names

    schema = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text())
    channel = schema["$defs"]["run"]["properties"]["search"]["properties"]["channel"]
    assert list(channel_names()) == ["vector", "lexical", "hybrid", "retriever"]
    assert channel["type"] == "string"
    assert all(re.fullmatch(channel["pattern"], name) for name in channel_names())
    assert not re.fullmatch(channel["pattern"], "psychic channel")
    assert all(f"{name}:" in channel["description"] for name in channel_names())
