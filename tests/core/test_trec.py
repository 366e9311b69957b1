"""TREC qrels lines: exact text and refusals (run lines and agreement with pytrec_eval:
tests/render/test_trec_run.py)."""

from __future__ import annotations

import pytest

from ptah.core.corpus import Case, Corpus
from ptah.core.errors import InputError
from ptah.core.trec import qrels_lines

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
    corpus = Corpus(
        cases=(Case(id="q1", query="one", k=3, relevant={"a": 0.5, "b": 1.0}),), default_k=3
    )
    with pytest.raises(InputError) as info:
        qrels_lines(corpus)
    assert str(info.value) == (
        'case "q1": key "a" has the grade 0.5, and trec_eval reads integer grades only; '
        "give a scale that makes every grade whole (e.g. 2 for halves, 10 for tenths)"
    )
    assert qrels_lines(corpus, scale=2) == ["q1 0 a 1", "q1 0 b 2"]


def test_a_scale_absorbs_binary_rounding_but_refuses_what_stays_fractional():
    corpus = Corpus(
        cases=(Case(id="q1", query="one", k=3, relevant={"a": 0.07, "b": 0.25}),), default_k=3
    )
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


# --- the CLI -------------------------------------------------------------------


def test_export_qrels_writes_the_file_and_refuses_fractional_grades(tmp_path, cli):
    corpus = tmp_path / "c.yaml"
    corpus.write_text(
        'version: 1\ndefault_k: 5\ncases:\n  - {id: q1, query: "one", relevant: {"0042": 2, d1: 1}}\n'
        '  - {id: q2, query: "two", required: ["7"]}\n'
    )
    out = tmp_path / "out" / "qrels.txt"
    assert cli("corpus", "export-qrels", corpus, out)[:2] == (0, f"wrote {out} (3 judgements)\n")
    assert out.read_text() == "q1 0 0042 2\nq1 0 d1 1\nq2 0 7 1\n"

    corpus.write_text(
        'version: 1\ndefault_k: 5\ncases:\n  - {id: q1, query: "one", relevant: {a: 0.5}}\n'
    )
    code, _, err = cli("corpus", "export-qrels", corpus, out)
    assert (code, err) == (
        2,
        'case "q1": key "a" has the grade 0.5, and trec_eval reads integer grades only; '
        "give a scale that makes every grade whole (e.g. 2 for halves, 10 for tenths)\n",
    )
    assert out.read_text() == "q1 0 0042 2\nq1 0 d1 1\nq2 0 7 1\n"  # untouched
    assert cli("corpus", "export-qrels", "--scale", "2", corpus, out).code == 0
    assert out.read_text() == "q1 0 a 1\n"
    assert [p.name for p in out.parent.iterdir()] == ["qrels.txt"]  # no temporary left behind
