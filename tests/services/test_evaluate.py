"""The evaluate use case on a real SQLite project with hand-set vectors, so every number is known
exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ptah
from ptah.adapters.corpus_yaml import parse_corpus
from ptah.cli.words import COMMAND_LINE
from ptah.core.errors import IncomparableBaseline, InputError, StaleGeneration, UnknownKey
from ptah.core.report import Report
from ptah.services.build import build
from ptah.services.evaluate import evaluate
from tests.embedders import EMBEDDERS
from tests.services.conftest import DOCS, Workspace, request


def angle_vector(degrees: float) -> list[float]:
    radians = math.radians(degrees)
    return [math.cos(radians), math.sin(radians), 0.0]


class TableEmbedder:
    """Vectors by text: document i sits at i*10 degrees; a query "at D" sits at D degrees, plus
    ``turn`` (a changed query model). Records calls."""

    dimension = 3

    def __init__(self, turn: float = 0.0):
        self.turn = turn
        self.calls: list[tuple[str, list[str]]] = []
        self.documents = {Workspace.text(row): angle_vector(row[0] * 10) for row in DOCS}

    def embed_documents(self, texts):
        self.calls.append(("documents", list(texts)))
        return np.array([self.documents[t] for t in texts], dtype=np.float32)

    def embed_queries(self, texts):
        self.calls.append(("queries", list(texts)))
        return np.array(
            [angle_vector(float(t.split()[-1]) + self.turn) for t in texts], dtype=np.float32
        )


class NoModel:
    dimension = 3

    def embed_queries(self, texts):
        raise AssertionError(f"the model was asked to embed {texts}")

    embed_documents = embed_queries


CORPUS = """\
version: 1
default_k: 3
cases:
  - id: c1
    query: at 10
    required: ["1"]
    relevant: {"1": 2, "3": 1}
  - id: c2
    query: at 78
    k: 2
    required: ["6"]
  - id: c3
    query: at 32
    required: ["3"]
    forbidden: ["2"]
"""


@pytest.fixture
def built(workspace, embedders):
    workspace.write_spec(filter="status = 'published'", generations={"docs": "model: test/table"})
    embedders["test/table"] = TableEmbedder()
    with workspace.project() as project:
        build(project, None)
    return workspace


def run(workspace, corpus_text=CORPUS, embedder=None, **options):
    """The report as a dict, evaluated with ``embedder`` (default: a fresh TableEmbedder) as the
    model."""
    corpus = parse_corpus(corpus_text, name="c.yaml")
    EMBEDDERS["test/table"] = embedder or TableEmbedder()
    with workspace.project() as project:
        return evaluate(project, corpus, request(**options)).to_dict()


def test_exact_numbers(built):
    report = run(built)
    (only,) = report["runs"]
    cases = {c["id"]: c for c in only["cases"]}
    # c1 at 10 degrees: 1 (0 off), 2 (10 off), 3 (20 off)
    assert [r["key"] for r in cases["c1"]["results"]] == ["1", "2", "3"]
    ndcg_c1 = (2 / math.log2(2) + 1 / math.log2(4)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert cases["c1"]["metrics"] == {
        "recall": 1.0,
        "mrr": 1.0,
        "ndcg": pytest.approx(ndcg_c1, abs=1e-12),
    }
    # c2 at 78: 8 (2 off), 7 (8 off) | 6 (18 off) is third, outside k=2
    assert [r["key"] for r in cases["c2"]["results"]] == ["8", "7"]
    assert cases["c2"]["metrics"] == {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0}
    assert cases["c2"]["required"]["missed"] == [{"key": "6", "rank": 3, "where": "ranked 3rd"}]
    # c3 at 32: 3 (2 off), 4 (8 off), 2 (12 off) -> forbidden 2 leaks at rank 3
    assert [r["key"] for r in cases["c3"]["results"]] == ["3", "4", "2"]
    assert cases["c3"]["forbidden"]["hits"] == [{"key": "2", "rank": 3}]
    assert cases["c3"]["results"][0]["score"] == pytest.approx(math.cos(math.radians(2)), abs=1e-6)
    aggregates = only["aggregates"]
    # high: c1's hole 2 joins (3/3), c2's holes 8 and 7 join 6 (2/3), c3's hole 4 joins 3 (2/2)
    assert aggregates["recall"] == {
        "value": 2 / 3,
        "numerator": 2.0,
        "denominator": 3,
        "undefined": 0,
        "high": (1 + 2 / 3 + 1) / 3,
        "high_numerator": 1 + 2 / 3 + 1,
    }
    assert [(c["judged"], c["holes"]) for c in only["cases"]] == [
        (2 / 3, [{"key": "2", "rank": 2}]),
        (0.0, [{"key": "8", "rank": 1}, {"key": "7", "rank": 2}]),
        (2 / 3, [{"key": "4", "rank": 2}]),
    ]
    assert aggregates["judged"] == {
        "value": (2 / 3 + 0 + 2 / 3) / 3,
        "numerator": 4 / 3,
        "denominator": 3,
        "undefined": 0,
        "holes": 4,
    }
    assert aggregates["mrr"]["value"] == pytest.approx(2 / 3, abs=1e-15)
    assert aggregates["ndcg"]["value"] == pytest.approx((ndcg_c1 + 0 + 1) / 3, abs=1e-12)
    assert aggregates["forbidden"] == {"cases": 1, "leaking": 1, "hits": 1, "rate": 1.0}
    assert [(g["name"], g["passed"]) for g in report["gates"]] == [
        ("required", False),
        ("forbidden", False),
    ]
    assert report["verdict"] == "fail"
    generation = only["generation"]
    assert (generation["name"], generation["rows"], generation["dimension"]) == ("docs", 9, 3)
    assert (
        generation["verification"]["ok"] is True
        and generation["verification"]["allow_stale"] is False
    )
    assert only["search"] == {
        "channel": "vector",
        "mode": "exact",
        "similarity": "cosine",
        "ranking": "score descending, ties broken by key ascending",
    }


def test_report_matches_its_schema(built, tmp_path):
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text())
    report = run(built)
    jsonschema.validate(report, schema)
    path = tmp_path / "out" / "report.json"
    Report.from_dict(report).save(path)
    assert json.loads(path.read_text()) == report
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.json"]


def test_queries_are_cached_so_a_second_run_needs_no_model(built):
    first = TableEmbedder()
    run(built, embedder=first)
    assert first.calls == [("queries", ["at 10", "at 78", "at 32"])]
    again = run(built, embedder=NoModel())
    assert again["runs"][0]["generation"]["queries_from_cache"] == 3
    assert again["runs"][0]["aggregates"]["recall"]["value"] == 2 / 3


def test_queries_read_from_the_cache_a_slice_at_a_time_with_repeats_and_misses_place_every_vector(
    built, monkeypatch
):
    import ptah.services.channels.vector as vector

    monkeypatch.setattr(vector, "_CACHE_READ", 2)  # three slices of the five distinct queries
    run(built)  # caches "at 10", "at 78", "at 32"
    repeated = CORPUS + "".join(
        f'  - id: r{i}\n    query: at {degrees}\n    required: ["{key}"]\n'
        for i, (degrees, key) in enumerate([(32, "3"), (10, "1"), (50, "5"), (32, "3"), (21, "2")])
    )
    model = TableEmbedder()
    mixed = run(built, repeated, embedder=model)
    assert model.calls == [
        ("queries", ["at 50", "at 21"])
    ]  # only the distinct queries the cache lacks, once
    assert mixed["runs"][0]["generation"]["queries_from_cache"] == 3
    fresh = {
        case["id"]: case for case in run(built, repeated.replace("at ", "at 0"))["runs"][0]["cases"]
    }
    for case in mixed["runs"][0]["cases"]:
        assert case | {"query": None} == fresh[case["id"]] | {"query": None}, case["id"]


def test_baseline_comparison_and_gates(built, tmp_path):
    baseline = tmp_path / "baseline.json"
    Report.from_dict(run(built)).save(baseline)
    same = run(built, baseline_path=str(baseline), thresholds={"recall": 0.0})
    comparison = same["baseline"]["comparisons"][0]
    assert comparison["aggregates"]["recall"] == {
        "baseline": 2 / 3,
        "current": 2 / 3,
        "delta": 0.0,
        "current_high": (1 + 2 / 3 + 1) / 3,
    }
    assert comparison["cases_changed"] == []
    assert [(g["name"], g["passed"]) for g in same["gates"]][2] == ("max-recall-drop", True)

    # the same corpus measured deeper is a different corpus: refused, naming both digests
    deeper = CORPUS.replace("default_k: 3", "default_k: 4")
    with pytest.raises(IncomparableBaseline) as info:
        run(built, deeper, baseline_path=str(baseline))
    assert json.loads(baseline.read_text())["corpus"]["digest"] in str(info.value)
    assert parse_corpus(deeper).digest in str(info.value)


def test_a_drop_beyond_the_threshold_fails(built, tmp_path):
    baseline = tmp_path / "baseline.json"
    Report.from_dict(run(built)).save(baseline)
    # c1 now at 30 degrees: 3, 2|4 ... required 1 falls out of the top 3
    worse = {"at 10": 30.0}

    class Shifted(TableEmbedder):
        def embed_queries(self, texts):
            return np.array(
                [angle_vector(worse.get(t, float(t.split()[-1]))) for t in texts], dtype=np.float32
            )

    with built.project() as project:
        store = project.store()
        with (
            store._transaction() as connection
        ):  # forget cached queries so the shifted model is asked
            connection.execute("DELETE FROM query_cache")
    report = run(
        built,
        embedder=Shifted(),
        baseline_path=str(baseline),
        thresholds={"recall": 0.2, "mrr": 0.5},
    )
    gates = {g["name"]: g for g in report["gates"]}
    # recall: c1 keeps 3 of {1, 3} -> 0.5; mean (0.5 + 0 + 1) / 3 = 0.5; drop 1/6 <= 0.2 passes
    assert gates["max-recall-drop"]["drop"] == pytest.approx(2 / 3 - 0.5, abs=1e-12)
    assert gates["max-recall-drop"]["passed"] is True
    # MRR: c1 first relevant (3) at rank 1 -> 1.0: unchanged
    assert gates["max-mrr-drop"]["passed"] is True
    changed = report["baseline"]["comparisons"][0]["cases_changed"]
    assert [c["id"] for c in changed] == ["c1"]
    assert changed[0]["metrics"]["recall"] == {"baseline": 1.0, "current": 0.5, "delta": -0.5}


def test_thresholds_without_baseline_are_a_usage_error(built):
    with pytest.raises(InputError, match="needs a baseline report"):
        run(built, thresholds={"recall": 0.02})


def test_unknown_and_filtered_keys_are_named(built):
    corpus = CORPUS.replace('required: ["6"]', 'required: ["6", "9", "42", "0042"]')
    with pytest.raises(UnknownKey) as info:
        run(built, corpus)
    assert str(info.value).splitlines() == [
        "c.yaml: key '0042' (case \"c2\") is not in table articles",
        "c.yaml: key '42' (case \"c2\") is not in table articles",
        "c.yaml: key '9' (case \"c2\") is a row the filter excludes; a query whose answer is a row your filter excludes "
        "measures the filter, not the model",
    ]
    assert info.value.exit_code == 2


def test_a_stale_generation_is_refused_unless_allowed(built):
    built.execute("UPDATE articles SET body = 'Changed.' WHERE id = 3")
    with pytest.raises(StaleGeneration) as info:
        run(built)
    assert info.value.exit_code == 3
    assert str(info.value) == (
        'generation "docs" is not complete and fresh: 1 vectors are stale (e.g. 3). '
        'Build generation "docs", or pass allow_stale=True to measure it as it is.'
    )
    assert info.value.said(COMMAND_LINE) == (
        'generation "docs" is not complete and fresh: 1 vectors are stale (e.g. 3). '
        f"Run `ptah inference build docs --spec {built.spec_path}`, or pass --allow-stale to "
        "measure it as it is."
    )
    report = run(built, allow_stale=True)
    verification = report["runs"][0]["generation"]["verification"]
    assert (verification["ok"], verification["stale"], verification["allow_stale"]) == (
        False,
        1,
        True,
    )


def test_a_generation_never_built_is_refused(workspace):
    with pytest.raises(StaleGeneration, match='generation "docs" has not been built'):
        run(workspace)
