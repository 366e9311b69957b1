"""The measure registry: every measure agrees with trec_eval (pytrec_eval) to 1e-9; names parse
back."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from ptah.core import measures
from ptah.core.measures import DEFAULT_MEASURES, Measure, MeasureKind

# our name -> (pytrec_eval measure request, its result key) at depth k
TREC = {
    "recall": (lambda k: f"recall.{k}", lambda k: f"recall_{k}"),
    "MRR": (lambda k: "recip_rank", lambda k: "recip_rank"),
    "nDCG": (lambda k: f"ndcg_cut.{k}", lambda k: f"ndcg_cut_{k}"),
    "MAP": (lambda k: f"map_cut.{k}", lambda k: f"map_cut_{k}"),
    "P": (lambda k: f"P.{k}", lambda k: f"P_{k}"),
    "success": (lambda k: f"success.{k}", lambda k: f"success_{k}"),
}


def trec_eval(name: str, grades: dict[str, int], ranking: list[str], k: int) -> float | None:
    """pytrec_eval's value of ``name`` at k for one query whose run is ``ranking`` cut at k
    (strictly decreasing scores)."""
    request, result_key = TREC[name]
    run = {key: float(len(ranking) - rank) for rank, key in enumerate(ranking[:k])}
    result = (
        pytrec_eval.RelevanceEvaluator({"q": grades}, {request(k)}).evaluate({"q": run}).get("q")
    )
    return None if result is None else result[result_key(k)]


def test_every_registered_measure_has_a_trec_eval_check():
    assert [kind.name for kind in measures.kinds()] == list(TREC)


@pytest.mark.parametrize("name", list(TREC))
def test_agrees_with_pytrec_eval_on_random_rankings(name):
    rng = random.Random(f"measures-{name}")
    checked = 0
    for _ in range(400):
        n = rng.randint(0, 30)
        ranking = [f"d{i}" for i in rng.sample(range(60), n)]
        k = rng.choice([1, 2, 3, 5, 10, 20, 50])
        judged = [
            f"d{i}" for i in rng.sample(range(80), rng.randint(0, 12))
        ]  # d60.. are never retrieved
        theirs = {key: rng.choice([0, 1, 1, 2, 3]) for key in judged}
        ours = {key: float(grade) for key, grade in theirs.items()}
        got = Measure(name, k).score(ranking, ours)
        if not any(theirs.values()):
            assert got is None
            continue
        assert got == pytest.approx(trec_eval(name, theirs, ranking, k), abs=1e-9), (
            name,
            ranking,
            ours,
            k,
        )
        checked += 1
    assert checked >= 250


def test_ndcg_is_the_plain_sums_over_every_rank_to_the_bit():
    """nDCG's sums leave out the ranks gaining nothing and read log2(rank + 1) from a table: the same
    floats as summing every rank's grade / log2(rank + 1), ranks beyond the table included."""

    def plain(top, relevant, k):
        dcg = sum(relevant.get(key, 0.0) / math.log2(rank + 1) for rank, key in enumerate(top, 1))
        ideal = sorted(relevant.values(), reverse=True)[:k]
        return dcg, sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, 1))

    rng = random.Random(11)
    for _ in range(3000):
        keys = [f"d{i}" for i in range(rng.choice([3, 12, 40, 400]))]
        k = rng.randint(1, len(keys))
        top = rng.sample(keys, rng.randint(0, k))
        graded = rng.sample(keys, rng.randint(1, min(len(keys), 60)))
        relevant = {key: rng.choice([0.5, 1.0, 2.0, 3.0]) for key in graded}
        found, expected = measures._ndcg_parts(top, relevant, k), plain(top, relevant, k)
        assert (repr(found[0]), repr(found[1])) == (repr(float(expected[0])), repr(expected[1]))
        assert repr(measures._ndcg(top, relevant, k)) == repr(expected[0] / expected[1])


def test_map_precision_and_success_term_by_term():
    grades = {"a": 1.0, "c": 2.0, "z": 1.0}  # z is never retrieved
    ranking = ["a", "b", "c", "d"]
    assert Measure("MAP", 3).score(ranking, grades) == (1 / 1 + 2 / 3) / 3
    assert Measure("P", 3).score(ranking, grades) == 2 / 3
    assert Measure("P", 10).score(ranking, grades) == 2 / 10  # divided by k, as trec_eval's P.k
    assert Measure("success", 1).score(ranking, grades) == 1.0
    assert Measure("success", 1).score(["b", "a"], grades) == 0.0
    assert Measure("MAP", 2).score([], grades) == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "recall",
        "MRR",
        "nDCG",
        "MAP@10",
        "P@5",
        "success@1",
        "nDCG@10",
        "recall@1000",
        "recall@10",
        "MRR@10",
        "nDCG@1",
    ],
)
def test_measure_text_round_trips(text):
    assert str(Measure.parse(text)) == text
    assert Measure.parse(str(Measure.parse(text))) == Measure.parse(text)


def test_names_are_found_in_any_case_and_by_report_key():
    assert Measure.parse("map@10") == Measure("MAP", 10) and Measure.parse("nDCG@10") == Measure(
        "nDCG", 10
    )
    assert (
        Measure.parse("ndcg") == Measure.parse("nDCG") == Measure("nDCG")
    )  # at each case's own depth
    assert str(Measure.parse("ndcg@10")) == str(Measure.parse("NDCG@10")) == "nDCG@10"
    assert str(Measure("recall", 5)) == "recall@5"
    assert Measure.parse("mrr").key == "mrr"
    assert Measure("MAP", 10).key == "MAP@10"
    assert Measure("nDCG").key == "ndcg"
    assert Measure("nDCG", 10).key == "nDCG@10"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "MAP@0",
        "MAP@01",
        "MAP@",
        "@10",
        "BM25@10",
        "MAP@10@2",
        "MAP@9999999",
        "nDCG@0",
        "nDCG@010",
        "nDCG@",
        "nDCG@10 ",
        "nDCG@-1",
        "nDCG@1.5",
    ],
)
def test_other_spellings_are_refused(text):
    with pytest.raises(ValueError, match="e.g. nDCG@10|unknown measure 'BM25'"):
        Measure.parse(text)


def test_a_long_spelling_is_not_echoed_whole():
    with pytest.raises(ValueError) as refused:
        Measure.parse("x" * 5000)
    assert len(str(refused.value)) < 300


def test_case_depth_measures_need_the_case_depth():
    assert Measure("recall").score(["a", "b"], {"b": 1.0}, case_k=1) == 0.0
    assert Measure("recall").score(["a", "b"], {"b": 1.0}, case_k=2) == 1.0
    with pytest.raises(ValueError):
        Measure("recall").score(["a"], {"a": 1.0})


def test_defaults_are_recall_mrr_ndcg_at_each_cases_depth():
    assert DEFAULT_MEASURES == (Measure("recall"), Measure("MRR"), Measure("nDCG"))
    assert [m.key for m in DEFAULT_MEASURES] == ["recall", "mrr", "ndcg"]
    assert [m.label for m in DEFAULT_MEASURES] == ["recall", "MRR", "nDCG"]


def test_a_measure_is_added_by_one_registration():
    def dcg(top, relevant, k):
        return math.fsum(
            relevant.get(key, 0.0) / math.log2(rank + 1) for rank, key in enumerate(top, start=1)
        )

    measures.register(
        MeasureKind("DCG", "dcg", "DCG", "-", "sum of grade / log2(rank + 1) over the top k", dcg)
    )
    try:
        assert Measure.parse("DCG@2").score(["a", "b"], {"b": 3.0}) == 3.0 / math.log2(3)
        with pytest.raises(ValueError):
            measures.register(MeasureKind("dcg", "x", "x", "-", "-", dcg))  # taken, in any case
    finally:
        measures.unregister("DCG")
    with pytest.raises(ValueError):
        Measure("DCG")
