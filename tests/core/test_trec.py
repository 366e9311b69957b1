"""TREC run and qrels lines: exact text, refusals, and agreement with pytrec_eval on the written files."""

from __future__ import annotations

import pytest
import pytrec_eval

from ptah.cli import main
from ptah.core.corpus import Case, Corpus
from ptah.core.errors import InputError
from ptah.core.metrics import ndcg_at_k, recall_at_k, reciprocal_rank_at_k
from ptah.core.trec import qrels_lines, run_lines


def report_of(cases: list[tuple[str, list[tuple[str, float]]]], name: str = "minilm") -> dict:
    """A report's skeleton: one run whose cases hold ranked results (what run_lines reads)."""
    return {
        "format": "ptah-report@1",
        "runs": [
            {
                "generation": {"name": name},
                "cases": [
                    {"id": case_id, "results": [{"key": key, "score": score} for key, score in results]}
                    for case_id, results in cases
                ],
            }
        ],
    }


# --- run lines ---------------------------------------------------------------


def test_run_lines_are_qid_q0_docid_rank_score_tag_with_exact_scores():
    report = report_of([("q1", [("d7", 0.1 + 0.2), ("d3", 0.25), ("d1", -1e-05)]), ("q2", [("0042", 1.0)])])
    assert run_lines(report) == [
        "q1 Q0 d7 1 0.30000000000000004 minilm",
        "q1 Q0 d3 2 0.25 minilm",
        "q1 Q0 d1 3 -1e-05 minilm",
        "q2 Q0 0042 1 1.0 minilm",
    ]


def test_run_lines_take_the_tag_given_and_the_run_asked_for():
    report = report_of([("q1", [("a", 0.5)])])
    report["runs"].append(report_of([("q1", [("b", 0.75)])], name="bge")["runs"][0])
    assert run_lines(report, 1) == ["q1 Q0 b 1 0.75 bge"]
    assert run_lines(report, 0, tag="baseline") == ["q1 Q0 a 1 0.5 baseline"]


def test_a_case_without_results_writes_no_line():
    assert run_lines(report_of([("q1", []), ("q2", [("a", 0.5)])])) == ["q2 Q0 a 1 0.5 minilm"]


def test_run_lines_refuse_a_run_the_report_lacks():
    with pytest.raises(InputError) as info:
        run_lines(report_of([("q1", [("a", 0.5)])]), 1)
    assert str(info.value) == "the report holds 1 run(s); there is no run number 2"
    assert info.value.exit_code == 2


def test_run_lines_refuse_keys_and_ids_with_whitespace_naming_them():
    report = report_of([("q 1", [("a", 0.5)]), ("q2", [("acme\x1f2", 0.5), ("x\ty", 0.4)])])
    with pytest.raises(InputError) as info:
        run_lines(report)
    assert str(info.value) == (
        "a TREC file separates its fields by whitespace, so a case id cannot be empty or hold whitespace "
        '(the U+001F of composite keys counts): "q 1"'
    )
    del report["runs"][0]["cases"][0]
    with pytest.raises(InputError) as info:
        run_lines(report)
    assert str(info.value).endswith('so a key cannot be empty or hold whitespace (the U+001F of composite keys counts): "acme\\u001f2", "x\\u0009y"')


def test_run_lines_refuse_a_tag_with_whitespace():
    with pytest.raises(InputError, match=r'so a tag cannot be empty or hold whitespace .*: "my run"'):
        run_lines(report_of([("q1", [("a", 0.5)])]), tag="my run")


# --- qrels lines -------------------------------------------------------------

CORPUS = Corpus(
    cases=(
        Case(id="q2", query="two", k=3, relevant={"d9": 2.0, "d1": 1.0}),
        Case(id="q1", query="one", k=3, required=("0042",), relevant={"0042": 1.0}),
    ),
    default_k=3,
)


def test_qrels_lines_are_qid_0_docid_grade_in_corpus_order_keys_sorted():
    assert qrels_lines(CORPUS) == ["q2 0 d1 1", "q2 0 d9 2", "q1 0 0042 1"]


def test_a_fractional_grade_needs_a_scale():
    corpus = Corpus(cases=(Case(id="q1", query="one", k=3, relevant={"a": 0.5, "b": 1.0}),), default_k=3)
    with pytest.raises(InputError) as info:
        qrels_lines(corpus)
    assert str(info.value) == (
        'case "q1": key "a" has the grade 0.5, and trec_eval reads integer grades only; '
        "give a scale that makes every grade whole (e.g. 2 for halves, 10 for tenths)"
    )
    assert qrels_lines(corpus, scale=2) == ["q1 0 a 1", "q1 0 b 2"]


def test_a_scale_absorbs_binary_rounding_but_refuses_what_stays_fractional():
    corpus = Corpus(cases=(Case(id="q1", query="one", k=3, relevant={"a": 0.07, "b": 0.25}),), default_k=3)
    assert 0.07 * 100 != 7.0  # the rounding the tolerance is there for
    with pytest.raises(InputError) as info:
        qrels_lines(corpus, scale=20)
    assert str(info.value) == (
        'case "q1": key "a" has the grade 0.07, which the scale 20 makes 1.4000000000000001, not a whole number '
        "of at least 1; choose a scale that makes every grade whole"
    )
    assert qrels_lines(corpus, scale=100) == ["q1 0 a 7", "q1 0 b 25"]
    with pytest.raises(InputError, match="the grade scale must be a positive number, not 0"):
        qrels_lines(corpus, scale=0)


def test_qrels_lines_refuse_keys_with_whitespace():
    corpus = Corpus(cases=(Case(id="q1", query="one", k=3, relevant={"a b": 1.0}),), default_k=3)
    with pytest.raises(InputError, match='so a key cannot be empty or hold whitespace .*: "a b"'):
        qrels_lines(corpus)


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
    qrels_file.write_text("".join(line + "\n" for line in qrels_lines(Corpus(cases=JUDGED, default_k=K))))
    with open(run_file) as run_handle, open(qrels_file) as qrels_handle:
        run, qrels = pytrec_eval.parse_run(run_handle), pytrec_eval.parse_qrel(qrels_handle)
    measured = pytrec_eval.RelevanceEvaluator(qrels, {f"recall.{K}", f"ndcg_cut.{K}", "recip_rank"}).evaluate(run)

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


# --- the CLI -------------------------------------------------------------------


def test_export_qrels_writes_the_file_and_refuses_fractional_grades(tmp_path, capsys):
    corpus = tmp_path / "c.yaml"
    corpus.write_text(
        'version: 1\ndefault_k: 5\ncases:\n  - {id: q1, query: "one", relevant: {"0042": 2, d1: 1}}\n'
        '  - {id: q2, query: "two", required: ["7"]}\n'
    )
    out = tmp_path / "out" / "qrels.txt"
    with pytest.raises(SystemExit) as info:
        main(["corpus", "export-qrels", str(corpus), str(out)])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"{out}: 3 judgements\n"
    assert out.read_text() == "q1 0 0042 2\nq1 0 d1 1\nq2 0 7 1\n"

    corpus.write_text('version: 1\ndefault_k: 5\ncases:\n  - {id: q1, query: "one", relevant: {a: 0.5}}\n')
    with pytest.raises(SystemExit) as info:
        main(["corpus", "export-qrels", str(corpus), str(out)])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        'case "q1": key "a" has the grade 0.5, and trec_eval reads integer grades only; '
        "give a scale that makes every grade whole (e.g. 2 for halves, 10 for tenths)\n"
    )
    assert out.read_text() == "q1 0 0042 2\nq1 0 d1 1\nq2 0 7 1\n"  # untouched
    with pytest.raises(SystemExit) as info:
        main(["corpus", "export-qrels", "--scale", "2", str(corpus), str(out)])
    assert info.value.code == 0
    assert out.read_text() == "q1 0 a 1\n"
    assert [p.name for p in out.parent.iterdir()] == ["qrels.txt"]  # no temporary left behind
