"""Judged keys, holes, judged@k and the judgement record's digest (docs/holes.md)."""

from ptah.core.corpus import Case
from ptah.core.judged import (
    EMPTY,
    Judgement,
    JudgementRecord,
    high_grades,
    holes,
    judged_at_k,
    judged_keys,
)


def _case():
    return Case(
        id="c", query="q", k=3, required=("a",), relevant={"a": 2.0, "b": 0.5}, forbidden=("f",)
    )


def test_judged_keys_are_the_named_keys_and_the_record_entries_of_that_case():
    record = JudgementRecord(
        cases={"c": {"z": Judgement(0, "h", "t")}, "other": {"y": Judgement(1, "h", "t")}}
    )
    assert judged_keys(_case(), EMPTY) == frozenset({"a", "b", "f"})
    assert judged_keys(_case(), record) == frozenset({"a", "b", "f", "z"})


def test_holes_and_judged_at_k_look_at_the_top_min_k_n():
    judged = frozenset({"a", "f"})
    assert holes(["x", "a", "y", "f", "w"], judged, 3) == (("x", 1), ("y", 3))
    assert judged_at_k(["x", "a", "y", "f", "w"], judged, 3) == 1 / 3
    assert holes(["a", "x"], judged, 10) == (("x", 2),)  # k beyond the ranking: min(k, n) = 2
    assert judged_at_k(["a", "x"], judged, 10) == 0.5
    assert holes([], judged, 10) == ()
    assert judged_at_k([], judged, 10) is None


def test_high_grades_give_each_hole_the_case_highest_grade_and_leave_a_case_without_relevant_keys_alone():
    assert high_grades({"a": 2.0, "b": 0.5}, ["x"]) == {"a": 2.0, "b": 0.5, "x": 2.0}
    assert high_grades({}, ["x"]) == {}


def test_the_record_digest_is_canonical_and_ignores_the_informative_corpus_member():
    one = JudgementRecord(
        corpus="sha256:a",
        cases={"c": {"k2": Judgement(1, "h2", "t"), "k1": Judgement(0, "h1", "t")}},
    )
    two = JudgementRecord(
        corpus=None,
        cases={"c": {"k1": Judgement(0.0, "h1", "t"), "k2": Judgement(1.0, "h2", "t")}, "e": {}},
    )
    assert one.digest() == two.digest()
    assert one.canonical_document() == (
        b'{"cases":[{"id":"c","judgements":[{"grade":0.0,"judged_at":"t","key":"k1","text_sha256":"h1"},'
        b'{"grade":1.0,"judged_at":"t","key":"k2","text_sha256":"h2"}]}],"format":"ptah-judged@1"}'
    )
    assert EMPTY.digest() == JudgementRecord.empty().digest() != one.digest()
    assert one.digest().startswith("sha256:") and len(one.digest()) == 71
