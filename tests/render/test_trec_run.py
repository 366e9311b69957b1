"""TREC run lines of a typed report: exact text, refusals, and agreement with pytrec_eval on the
written files."""

from __future__ import annotations

from dataclasses import replace

import pytest
import pytrec_eval

from ptah.core.corpus import Case, Corpus
from ptah.core.errors import InputError
from ptah.core.measures import kind
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import CaseResult, CaseTies, Report, Result, Run
from ptah.core.report_parts import ReportCorpus
from ptah.core.trec import qrels_lines
from ptah.render.trec import run_lines

recall_at_k, reciprocal_rank_at_k, ndcg_at_k = (
    kind("recall"),
    kind("MRR"),
    kind("nDCG"),
)  # (ranking, grades, k)


def run_of(cases: list[tuple[str, list[tuple[str, float]]]], name: str = "minilm") -> Run:
    """A run whose cases hold ranked results (what run_lines reads) and nothing else of note."""
    return Run(
        generation=RunGeneration.from_dict({"name": name}),
        search=Search.from_dict({}),
        cases=tuple(
            CaseResult(
                id=case_id,
                query="",
                k=max(len(results), 1),
                ranking=tuple(Result(key, score) for key, score in results),
                values={},
                passed=True,
                required=(),
                missed=(),
                relevant=(),
                forbidden=(),
                hits=(),
                ties=CaseTies(False, None, 0, ()),
            )
            for case_id, results in cases
        ),
        means={},
        required={},
        forbidden={},
        ties={},
    )


def report_of(cases: list[tuple[str, list[tuple[str, float]]]], name: str = "minilm") -> Report:
    """A report of one such run."""
    return Report(
        created_at="",
        corpus=ReportCorpus(None, None, "sha256:" + "0" * 64, len(cases)),
        runs=(run_of(cases, name),),
        gates=(),
        timings={},
        environment={},
    )


# --- run lines ---------------------------------------------------------------


def test_run_lines_are_qid_q0_docid_rank_score_tag_with_exact_scores():
    report = report_of(
        [("q1", [("d7", 0.1 + 0.2), ("d3", 0.25), ("d1", -1e-05)]), ("q2", [("0042", 1.0)])]
    )
    assert run_lines(report) == [
        "q1 Q0 d7 1 0.30000000000000004 minilm",
        "q1 Q0 d3 2 0.25 minilm",
        "q1 Q0 d1 3 -1e-05 minilm",
        "q2 Q0 0042 1 1.0 minilm",
    ]


def test_run_lines_are_the_reference_runs_tagged_by_its_generation_else_ptah():
    report = report_of([("q1", [("a", 0.5)])])
    report = replace(report, runs=report.runs + (run_of([("q1", [("b", 0.75)])], name="bge"),))
    assert run_lines(report) == ["q1 Q0 a 1 0.5 minilm"]
    assert run_lines(report_of([("q1", [("a", 0.5)])], name="")) == ["q1 Q0 a 1 0.5 ptah"]


def test_a_case_without_results_writes_no_line():
    assert run_lines(report_of([("q1", []), ("q2", [("a", 0.5)])])) == ["q2 Q0 a 1 0.5 minilm"]


def test_run_lines_refuse_keys_and_ids_with_whitespace_naming_them():
    report = report_of([("q 1", [("a", 0.5)]), ("q2", [("acme\x1f2", 0.5), ("x\ty", 0.4)])])
    with pytest.raises(InputError) as info:
        run_lines(report)
    assert str(info.value) == (
        "a TREC file separates its fields by whitespace, so a case id cannot be empty or hold whitespace "
        '(the U+001F of composite keys counts): "q 1"'
    )
    report = replace(report, runs=(replace(report.runs[0], cases=report.runs[0].cases[1:]),))
    with pytest.raises(InputError) as info:
        run_lines(report)
    assert str(info.value).endswith(
        'so a key cannot be empty or hold whitespace (the U+001F of composite keys counts): "acme\\u001f2", "x\\u0009y"'
    )


def test_run_lines_refuse_a_tag_with_whitespace():
    with pytest.raises(
        InputError, match=r'so a tag cannot be empty or hold whitespace .*: "my run"'
    ):
        run_lines(report_of([("q1", [("a", 0.5)])], name="my run"))


# --- agreement with pytrec_eval on the files as written ---------------------

K = 3
# Graded judgements (integers, as trec_eval reads them) and rankings without
# tied scores: rr 1/2, a relevant key never retrieved, nothing relevant in the
# top 3, a case with fewer results than k.
JUDGED = (
    Case(id="q1", query="one", k=K, relevant={"b": 2.0, "c": 1.0, "z": 3.0}),
    Case(id="q2", query="two", k=K, relevant={"a": 1.0}),
    Case(id="q3", query="three", k=K, relevant={"d": 1.0, "e": 2.0}),
    Case(id="q4", query="four", k=K, relevant={"x": 1.0, "y": 1.0}),
)
RANKED = {
    "q1": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
    "q2": [("a", 0.61), ("b", 0.6), ("c", 0.11)],
    "q3": [("a", 0.5), ("b", 0.4), ("c", 0.3)],
    "q4": [("y", 0.2), ("x", -0.1)],
}


def test_pytrec_eval_on_the_written_files_agrees_with_ptah_per_query(tmp_path):
    report = report_of([(case.id, RANKED[case.id]) for case in JUDGED])
    run_file, qrels_file = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_file.write_text("".join(line + "\n" for line in run_lines(report)))
    qrels_file.write_text(
        "".join(line + "\n" for line in qrels_lines(Corpus(cases=JUDGED, default_k=K)))
    )
    with open(run_file) as run_handle, open(qrels_file) as qrels_handle:
        run, qrels = pytrec_eval.parse_run(run_handle), pytrec_eval.parse_qrel(qrels_handle)
    measured = pytrec_eval.RelevanceEvaluator(
        qrels, {f"recall.{K}", f"ndcg_cut.{K}", "recip_rank"}
    ).evaluate(run)

    assert set(measured) == {"q1", "q2", "q3", "q4"}
    for case in JUDGED:
        ranking = [key for key, _score in RANKED[case.id]]
        ours = {
            f"recall_{K}": recall_at_k(ranking, case.relevant, K),
            f"ndcg_cut_{K}": ndcg_at_k(ranking, case.relevant, K),
            "recip_rank": reciprocal_rank_at_k(ranking, case.relevant, K),
        }
        assert measured[case.id] == pytest.approx(ours, abs=1e-9), case.id
    # The data exercises what it claims to: not every number is 0 or 1.
    assert measured["q1"]["recip_rank"] == 0.5
    assert measured["q3"]["ndcg_cut_3"] == 0.0
    assert 0 < measured["q1"]["ndcg_cut_3"] < 1
