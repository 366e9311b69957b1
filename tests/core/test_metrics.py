"""Measures: exact hand-built values, agreement with trec_eval, measure names, means."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptah.core.corpus import Case
from ptah.core.measures import DEFAULT_MEASURES, Mean, Measure, kind, mean_of
from ptah.core.report import Hit, Miss, measure_case
from tests.core.test_measures import trec_eval

MEASURE_NAMES = [m.name for m in DEFAULT_MEASURES]


def evaluate_case(case, ranked, rank_of=None):
    """The one per-case loop (ptah.core.report.measure_case), seen as the three measures and the
    expectations."""
    result = measure_case(case, ranked, searched=1000, rank_of=rank_of)
    return (
        result.values["recall"],
        result.values["MRR"],
        result.values["nDCG"],
        tuple((m.key, m.rank) for m in result.missed),
        tuple((h.key, h.rank) for h in result.hits),
    )


from ptah.core.ranking import find_ties, top_k  # noqa: E402

recall_at_k, reciprocal_rank_at_k, ndcg_at_k = (
    kind("recall"),
    kind("MRR"),
    kind("nDCG"),
)  # (ranking, grades, k)

# --- hand-built values, written as the formula ----------------------------


ABC, BC = {"a": 1.0, "b": 1.0, "c": 1.0}, {"b": 1.0, "c": 3.0}


@pytest.mark.parametrize(
    "measure, ranking, grades, k, expected",
    [
        pytest.param(
            "recall",
            ["a", "x", "c", "b"],
            ABC,
            3,
            2 / 3,
            id="recall-counts-relevant-keys-in-the-top-k",
        ),
        pytest.param("recall", ["a", "x", "c", "b"], ABC, 1, 1 / 3, id="recall-at-1"),
        pytest.param(
            "recall", ["a", "x", "c", "b"], ABC, 4, 3 / 3, id="recall-every-relevant-key-found"
        ),
        pytest.param(
            "recall",
            ["a", "n"],
            {"a": 1.0, "n": 0.0, "b": 2.0},
            2,
            1 / 2,
            id="recall-ignores-judged-non-relevant",
        ),
        pytest.param(
            "MRR", ["x", "y", "b", "c"], BC, 4, 1 / 3, id="mrr-one-over-the-first-relevant-rank"
        ),
        pytest.param(
            "MRR", ["x", "y", "b", "c"], BC, 2, 0.0, id="mrr-zero-without-a-relevant-key-within-k"
        ),
        pytest.param("MRR", ["c"], BC, 10, 1 / 1, id="mrr-relevant-first"),
        pytest.param(
            "nDCG",
            ["b", "a"],
            {"a": 0.3, "b": 0.7},
            2,
            1.0,
            id="ndcg-of-the-ideal-order-is-exactly-one",
        ),
        *(
            pytest.param(
                name,
                [],
                {"a": 1.0},
                5,
                0.0,
                id=f"{name}-of-an-empty-ranking-is-zero-when-something-is-relevant",
            )
            for name in ("recall", "MRR", "nDCG")
        ),
    ],
)
def test_hand_built_values(measure, ranking, grades, k, expected):
    assert kind(measure)(ranking, grades, k) == expected


@pytest.mark.parametrize(
    "ranking, grades, k, expected",
    [
        pytest.param(
            ["a", "x", "b"],
            {"a": 1.0, "b": 0.5},
            3,
            (1.0 / math.log2(2) + 0.5 / math.log2(4)) / (1.0 / math.log2(2) + 0.5 / math.log2(3)),
            id="linear-gain-log2-discount",
        ),
        pytest.param(
            ["b", "a", "z"],
            {"a": 2.0, "b": 1.0, "c": 3.0},
            2,  # "c" is never retrieved
            (1.0 / math.log2(2) + 2.0 / math.log2(3)) / (3.0 / math.log2(2) + 2.0 / math.log2(3)),
            id="ideal-uses-all-judgements-even-never-retrieved",
        ),
        pytest.param(
            ["b"],
            {"a": 1.0, "b": 2.0},
            10,
            (2.0 / math.log2(2)) / (2.0 / math.log2(2) + 1.0 / math.log2(3)),
            id="k-beyond-the-ranking",
        ),
        pytest.param(
            ["a", "b"],
            {"a": 0.3, "b": 0.7},
            2,
            (0.3 / math.log2(2) + 0.7 / math.log2(3)) / (0.7 / math.log2(2) + 0.3 / math.log2(3)),
            id="float-grades-exact-not-truncated",
        ),
        pytest.param(
            ["unjudged", "a"],
            {"a": 1.0},
            5,
            (1.0 / math.log2(3)) / (1.0 / math.log2(2)),
            id="unjudged-gain-zero",
        ),
    ],
)
def test_ndcg_is_linear_gain_over_log2_discount_against_the_ideal_of_every_judgement(
    ranking, grades, k, expected
):
    assert ndcg_at_k(ranking, grades, k) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("grades", [{}, {"a": 0.0, "b": 0.0}])
def test_every_measure_is_none_without_a_relevant_key(grades):
    for measure in (recall_at_k, reciprocal_rank_at_k, ndcg_at_k):
        assert measure(["a", "b"], grades, 2) is None


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError, match="distinct keys"):
        recall_at_k(["a", "a"], {"a": 1.0}, 2)
    with pytest.raises(ValueError, match="finite number >= 0"):
        ndcg_at_k(["a"], {"a": -1.0}, 1)
    with pytest.raises(ValueError, match="finite number >= 0"):
        ndcg_at_k(["a"], {"a": math.nan}, 1)
    with pytest.raises(ValueError, match="depth k"):
        reciprocal_rank_at_k(["a"], {"a": 1.0}, 0)


# --- evaluate_case --------------------------------------------------------


def test_evaluate_case_measures_and_expectations():
    case = Case(
        id="c1",
        query="q",
        k=3,
        required=("a", "q"),
        relevant={"a": 1.0, "b": 2.0},
        forbidden=("f", "g"),
    )
    ranked = [("f", 0.9), ("a", 0.8), ("z", 0.7), ("q", 0.6), ("g", 0.5)]
    asked = []

    def where(key):
        asked.append(key)
        return 4

    metrics = evaluate_case(case, ranked, rank_of=where)
    assert metrics == (
        1 / 2,
        1 / 2,
        pytest.approx((1.0 / math.log2(3)) / (2.0 / math.log2(2) + 1.0 / math.log2(3)), abs=1e-15),
        (("q", 4),),
        (("f", 1),),
    )
    assert asked == ["q"]  # only missed required keys are looked up
    assert measure_case(case, ranked, searched=9, rank_of=where).missed == (
        Miss("q", 4, "ranked 4th"),
    )
    assert measure_case(case, ranked, searched=9).missed[0] == Miss("q", None, "not in the top 9")
    assert measure_case(case, ranked, searched=9).hits == (Hit("f", 1),)


def test_evaluate_case_without_rank_lookup_leaves_rank_unknown():
    case = Case(id="c", query="q", k=1, required=("b", "a"), relevant={"a": 1.0, "b": 1.0})
    recall, rr, ndcg, missed, hits = evaluate_case(case, [("x", 1.0), ("a", 0.5)])
    assert missed == (("b", None), ("a", None))
    assert hits == ()
    assert (recall, rr, ndcg) == (0.0, 0.0, 0.0)


def test_evaluate_case_with_no_relevant_key_is_not_applicable():
    case = Case(id="c", query="q", k=2, forbidden=("x",))
    assert evaluate_case(case, [("x", 1.0)]) == (None, None, None, (), (("x", 1),))


# --- agreement with trec_eval (pytrec_eval) ------------------------------


def trec_eval3(grades, ranking, k):
    """pytrec_eval's recall.k, recip_rank (on the run cut at k) and ndcg_cut.k for one query (None
    each where trec_eval leaves the query out): :func:`tests.core.test_measures.trec_eval` of
    each."""
    return tuple(trec_eval(name, grades, ranking, k) for name in ("recall", "MRR", "nDCG"))


def test_agrees_with_pytrec_eval_on_random_rankings():
    rng = random.Random(20240601)
    seen = {"none": 0, "tie_at_cutoff": 0, "k_beyond_n": 0, "judged_unretrieved": 0, "float": 0}
    for number in range(600):
        n = rng.randint(1, 40)
        keys = [f"d{i}" for i in rng.sample(range(100), n)]
        scores = np.array([rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in keys], dtype=np.float32)
        k = rng.choice([1, 2, 3, 5, 10, 20, 50])
        # d100.. are judged but can never be retrieved.
        judged = [f"d{i}" for i in rng.sample(range(130), rng.randint(0, 15))]
        float_grades = number % 2 == 1
        if float_grades:
            # Linear nDCG is scale-invariant: grades g give the same value as 4g.
            ours = {key: rng.choice([0.0, 0.25, 0.5, 1.75, 2.5]) for key in judged}
            theirs = {key: int(grade * 4) for key, grade in ours.items()}
        else:
            theirs = {key: rng.choice([0, 1, 1, 2, 3, 4]) for key in judged}
            ours = {key: float(grade) for key, grade in theirs.items()}
        ranking = [key for key, _ in top_k(scores, keys, k)]

        got = (
            recall_at_k(ranking, ours, k),
            reciprocal_rank_at_k(ranking, ours, k),
            ndcg_at_k(ranking, ours, k),
        )
        case = Case(
            id=str(number), query="q", k=k, relevant={key: g for key, g in ours.items() if g > 0}
        )
        by_case = evaluate_case(case, top_k(scores, keys, k))
        assert by_case[:3] == got

        reference = trec_eval3(theirs, ranking, k)
        if not any(grade > 0 for grade in ours.values()):
            # N/A for us; trec_eval skips the query or scores it 0.
            assert got == (None, None, None)
            assert reference in ((None, None, None), (0.0, 0.0, 0.0))
            seen["none"] += 1
            continue
        assert got == pytest.approx(reference, abs=1e-9), (number, ranking, ours, k)

        seen["tie_at_cutoff"] += find_ties(scores, keys, k, set()).straddles_cutoff
        seen["k_beyond_n"] += k > n
        seen["judged_unretrieved"] += any(g > 0 and key not in ranking for key, g in ours.items())
        seen["float"] += float_grades and any(g % 1 for g in ours.values())
    # The random cases must have exercised every situation the comparison is for.
    assert min(seen.values()) >= 30, seen


def test_query_without_relevant_keys_is_none_where_trec_eval_says_zero_or_nothing():
    assert trec_eval3({"a": 0}, ["a", "b"], 2) == (0.0, 0.0, 0.0)
    assert trec_eval3({}, ["a", "b"], 2) == (None, None, None)
    assert recall_at_k(["a", "b"], {"a": 0.0}, 2) is None
    assert recall_at_k(["a", "b"], {}, 2) is None
    assert mean_of([recall_at_k(["a"], {}, 1), 1.0]) == Mean(
        numerator=1.0, denominator=1, undefined=1
    )


# --- measures as values ---------------------------------------------------


@given(name=st.sampled_from(MEASURE_NAMES), k=st.integers(min_value=1, max_value=999_999))
def test_measure_value_round_trips(name, k):
    measure = Measure(name, k)
    assert Measure.parse(str(measure)) == measure


@pytest.mark.parametrize("name, k", [("BM25", 10), ("nDCG", 0), ("MRR", True), ("recall", 2.0)])
def test_measure_refuses_invalid_fields(name, k):
    with pytest.raises(ValueError):
        Measure(name, k)


def test_measure_scores_with_its_definition():
    grades = {"a": 1.0, "b": 3.0}
    ranking = ["x", "a", "b"]
    assert Measure("recall", 2).score(ranking, grades) == recall_at_k(ranking, grades, 2) == 1 / 2
    assert Measure("MRR", 3).score(ranking, grades) == 1 / 2
    assert Measure("nDCG", 3).score(ranking, grades) == ndcg_at_k(ranking, grades, 3)


# --- means ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected", "value"),
    [
        ([], Mean(numerator=0.0, denominator=0, undefined=0), None),  # empty: not applicable
        (
            [None, None],
            Mean(numerator=0.0, denominator=0, undefined=2),
            None,
        ),  # only undefined values: not applicable
        (
            [1.0, None, 0.5],
            Mean(numerator=1.5, denominator=2, undefined=1),
            0.75,
        ),  # undefined left out of the denominator
        (
            [0.0, 0.0],
            Mean(numerator=0.0, denominator=2, undefined=0),
            0.0,
        ),  # zeros are zero, not None
    ],
)
def test_a_mean_counts_what_it_is_over(values, expected, value):
    assert mean_of(values) == expected
    assert mean_of(values).value == value


def test_mean_numerator_is_correctly_rounded():
    assert mean_of([1e16, 1.0, -1e16]).numerator == 1.0


def test_mean_refuses_nan():
    with pytest.raises(ValueError, match="NaN"):
        mean_of([1.0, math.nan])
