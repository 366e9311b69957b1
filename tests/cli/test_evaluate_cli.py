"""The main job end to end through the CLI, with the real MiniLM model on the bundled example."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import (
    BASELINE,
    CORPUS,
    NOT_ON_A_WARM_EVALUATE,
    evaluate,
    ptah_process,
    python_with_add_ons,
)


@pytest.fixture(scope="module")
def project(example_project):
    """A copy of the example with both generations built by the real model
    (tests/cli/conftest.py)."""
    return example_project


def test_the_checked_in_baseline_passes_with_the_gate(project, cli, tmp_path):
    output = tmp_path / "report.json"
    code, out, err = cli(
        *evaluate(project, "--baseline", BASELINE, "--max-recall-drop", "0.02", "--output", output)
    )
    assert code == 0, out + err
    assert "verdict: pass" in out
    report = json.loads(output.read_text())
    baseline = json.loads(BASELINE.read_text())
    assert report["corpus"]["digest"] == baseline["corpus"]["digest"]
    assert report["verdict"] == "pass"
    run_ = report["runs"][0]
    assert run_["generation"]["name"] == "title-body"
    assert run_["aggregates"]["required"]["failed"] == 0
    # the same model and text on this machine reproduce the baseline's rankings
    assert [[r["key"] for r in c["results"]] for c in run_["cases"]] == [
        [r["key"] for r in c["results"]] for c in baseline["runs"][0]["cases"]
    ]


def test_a_worse_generation_fails_the_gate_with_exit_1(project, cli):
    code, out, err = cli(
        *evaluate(
            project,
            "--generation",
            "body-only",
            "--baseline",
            BASELINE,
            "--max-recall-drop",
            "0.0",
            "--json",
        )
    )
    assert code == 1
    report = json.loads(out)
    gate = next(g for g in report["gates"] if g["name"] == "max-recall-drop")
    assert gate["passed"] is False and gate["drop"] > 0
    assert report["verdict"] == "fail"


def test_a_corpus_edited_by_one_character_is_incomparable(project, cli, tmp_path):
    edited = tmp_path / "edited.yaml"
    edited.write_text(CORPUS.read_text().replace("?", "!", 1))
    code, out, err = cli(*evaluate(project, "--baseline", BASELINE, corpus=edited))
    assert code == 2
    baseline_digest = json.loads(BASELINE.read_text())["corpus"]["digest"]
    assert baseline_digest in err
    assert "measured a different corpus" in err


def test_warm_cache_evaluate_never_imports_torch(project, cli):
    """Every query vector cached: no model is loaded, so neither torch nor sentence-transformers is
    imported."""
    cli(
        *evaluate(project, "--json")
    )  # warms the cache (the module fixture's builds did not embed queries)
    result = ptah_process(*evaluate(project, "--json"))
    assert result.stderr.strip().splitlines()[-1] == "exit 0 heavy []"
    assert json.loads(result.stdout)["runs"][0]["generation"]["queries_from_cache"] == 25


def test_a_warm_evaluate_with_its_tables_imports_nothing_it_does_not_use(project, cli):
    """The start-up of a fresh process is most of a warm evaluate's time (benchmarks/RESULTS.md,
    issue 42 item 1): neither the model's libraries nor scipy, schema checks, HTTP, rich (the tables
    go to a pipe) or the add-ons' servers."""
    cli(*evaluate(project, "--json"))  # warms the query cache
    result = ptah_process(*evaluate(project), heavy=NOT_ON_A_WARM_EVALUATE)
    assert result.stderr.strip().splitlines()[-1] == "exit 0 heavy []"
    assert "verdict: pass" in result.stdout


def test_a_warm_evaluate_through_the_api_imports_no_part_of_the_command_line(project, cli):
    """ptah's own plugins are imported hook by hook, and the add-ons' plugin modules import their
    commands only when the command line is built: the API never pays for typer."""
    cli(*evaluate(project, "--json"))  # warms the query cache
    script = (
        "import sys\nimport ptah\n"
        "with ptah.open_project(sys.argv[1]) as project:\n"
        "    report = project.evaluate(project.load_corpus(sys.argv[2]))\n"
        f"print(report.verdict, sorted(m for m in {(*NOT_ON_A_WARM_EVALUATE, 'typer', 'click')!r}"
        " + ('ptah.cli',) if m in sys.modules))\n"
    )
    done = python_with_add_ons(script, project / "ptah.yaml", CORPUS)
    assert (done.returncode, done.stdout) == (0, "pass []\n"), done.stderr


def test_trec_run_and_qrels_reproduce_the_report_in_pytrec_eval(project, cli, tmp_path):
    import pytrec_eval

    report_path, run_path, qrels_path = (
        tmp_path / "r.json",
        tmp_path / "run.txt",
        tmp_path / "qrels.txt",
    )
    code, _, _ = cli(*evaluate(project, "--output", report_path, "--trec-run", run_path))
    assert code == 0
    assert cli("corpus", "export-qrels", CORPUS, qrels_path)[0] == 0
    trec_run: dict = {}
    for line in run_path.read_text().splitlines():
        qid, _, doc, _rank, score, _tag = line.split()
        trec_run.setdefault(qid, {})[doc] = float(score)
    qrels: dict = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    report = json.loads(report_path.read_text())
    for case in report["runs"][0]["cases"]:
        k = case["k"]
        measures = pytrec_eval.RelevanceEvaluator(
            {case["id"]: qrels[case["id"]]}, {f"recall.{k}", f"ndcg_cut.{k}", "recip_rank"}
        )
        theirs = measures.evaluate({case["id"]: trec_run[case["id"]]})[case["id"]]
        assert theirs[f"recall_{k}"] == pytest.approx(case["metrics"]["recall"], abs=1e-9)
        assert theirs[f"ndcg_cut_{k}"] == pytest.approx(case["metrics"]["ndcg"], abs=1e-9)
        assert theirs["recip_rank"] == pytest.approx(case["metrics"]["mrr"], abs=1e-9)


def test_an_output_that_is_a_folder_is_refused_with_exit_2_before_evaluating(
    project, cli, tmp_path
):
    code, out, err = cli(*evaluate(project, "--output", tmp_path))
    assert code == 2
    assert err == f"--output {tmp_path}: is a folder; give the path of a file to write\n"
    assert out == ""
