"""The rerank stage end to end with the real MiniLM: BM25's top candidates re-scored by the model,
on the example."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ptah.adapters.corpus_yaml import load_corpus
from ptah.adapters.embedders import open_embedder
from ptah.services.project import open_project
from tests.cli.conftest import CORPUS
from tests.cli.conftest import evaluate as evaluate_argv
from tests.conftest import run_cli

CANDIDATES = 20  # the example's reranked variant: BM25's top 20


def evaluate(capsys, project: Path, *argv) -> tuple[int, dict]:
    output = project / "rerank.json"
    code = run_cli(
        capsys, *evaluate_argv(project, "--bootstrap", "200", "--output", output, *argv)
    ).code
    return code, json.loads(output.read_text())


def test_bm25_candidates_reranked_by_minilm_are_ranked_by_the_models_own_scores(
    example_project, capsys
):
    code, report = evaluate(
        capsys, example_project, "--variant", "lexical", "--variant", "reranked"
    )
    assert code in (0, 1)
    lexical, reranked = report["runs"]
    assert (
        reranked["generation"]["name"] == "reranked" and reranked["search"]["channel"] == "lexical"
    )
    assert reranked["variant"]["rerank"]["kind"] == "bi-encoder"
    assert reranked["variant"]["rerank"]["candidates"] == CANDIDATES
    assert reranked["generation"]["identity"] != lexical["generation"]["identity"]
    stages = reranked["cost"]["stages"]
    assert set(stages) == {"search", "rerank"} and stages["rerank"]["timed"] == "per query"

    # The same candidates and scores computed here, outside the stage: BM25's top 20 (the lexical
    # channel at depth 20) re-scored by float64 dot products of the model's unit vectors, ranked by
    # score then key.
    deep = example_project / "deep.yaml"
    deep.write_text(
        CORPUS.read_text()
        .replace("default_k: 5", f"default_k: {CANDIDATES}")
        .replace("    k: 3\n", "")
        .replace("    k: 10\n", "")
    )
    assert run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        example_project / "ptah.yaml",
        "--corpus",
        deep,
        "--variant",
        "lexical",
        "--bootstrap",
        "200",
        "--output",
        example_project / "deep.json",
    ).code in (0, 1)
    candidates = {
        case["id"]: [result["key"] for result in case["results"]]
        for case in json.loads((example_project / "deep.json").read_text())["runs"][0]["cases"]
    }
    cases = {case.id: case for case in load_corpus(str(CORPUS)).cases}
    with open_project(str(example_project / "ptah.yaml")) as project:
        settings = project.spec.generation("title-body")
        texts = {
            row.key: row.text for row in project.source.rows(settings.template(project.spec.source))
        }
        model = open_embedder(settings, project.spec.root)
        checked = 0
        for case in reranked["cases"]:
            keys = candidates[case["id"]]
            query = model.embed_queries([cases[case["id"]].query]).astype(np.float64)[0]
            vectors = model.embed_documents([texts[key] for key in keys]).astype(np.float64)
            scores = vectors @ query
            expected = sorted(zip(keys, scores), key=lambda pair: (-pair[1], pair[0]))[: case["k"]]
            assert [result["key"] for result in case["results"]] == [key for key, _ in expected]
            assert np.allclose(
                [result["score"] for result in case["results"]], [s for _, s in expected], atol=1e-5
            )
            checked += 1
    assert checked == len(cases) == 25


def test_candidates_fewer_than_a_cases_k_are_refused(example_project, capsys, tmp_path):
    spec = tmp_path / "ptah.yaml"
    spec.write_text(
        (example_project / "ptah.yaml")
        .read_text()
        .replace("candidates: 20", "candidates: 4")
        .replace("sqlite:///support.db", f"sqlite:///{example_project / 'support.db'}")
        .replace("store: .ptah/ptah.db", f"store: {example_project / '.ptah' / 'ptah.db'}")
    )
    result = run_cli(
        capsys, "inference", "evaluate", "--spec", spec, "--corpus", CORPUS, "--variant", "reranked"
    )
    assert result.code == 2
    assert result.err.strip() == (
        'variant "reranked": rerank candidates (4) must be at least each case\'s k; '
        'case "pricing" asks for 5 (write candidates: 10 or more)'
    )
