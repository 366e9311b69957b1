"""The calibration of a model judge: kappa, exact rate bounds and the U a trusted model gives,
against hand-worked examples and scipy."""

import pytest
from scipy.stats import beta, binom, hypergeom
from sklearn.metrics import cohen_kappa_score

from ptah.core.calibration import (
    MIN_SAMPLED,
    Agreement,
    interval,
    lower_rate,
    plausible_with_model,
    upper_rate,
)
from ptah.core.estimate import upper_relevant


def test_kappa_of_a_hand_worked_table():
    # 50 sampled holes: both relevant 20, person only 5, model only 10, neither 15.
    # p_o = 35/50 = 0.7; margins: person relevant 25/50, model relevant 30/50;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    table = Agreement(both=20, model_only=10, person_only=5, neither=15)
    assert table.n == 50
    assert table.kappa == pytest.approx(0.4, abs=1e-15)
    assert table.tpr == 0.8 and table.tnr == 0.6
    assert table.trusted() == "kappa 0.400 is below 0.6"
    assert table.trusted(min_kappa=0.4) is None


@pytest.mark.parametrize(
    "both, model_only, person_only, neither",
    [(20, 10, 5, 15), (9, 1, 1, 19), (0, 3, 4, 0), (1, 0, 0, 29), (40, 2, 7, 1)],
)
def test_kappa_is_scikit_learns(both, model_only, person_only, neither):
    table = Agreement(both=both, model_only=model_only, person_only=person_only, neither=neither)
    person = [1] * both + [0] * model_only + [1] * person_only + [0] * neither
    model = [1] * both + [1] * model_only + [0] * person_only + [0] * neither
    assert table.kappa == pytest.approx(cohen_kappa_score(person, model), abs=1e-15)


def test_the_table_is_counted_from_grades_above_zero():
    pairs = [(1.0, 2.0), (2.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.0, 0.0)]
    assert Agreement.of(pairs) == Agreement(both=1, model_only=1, person_only=1, neither=2)


def test_perfect_agreement_is_kappa_one_and_one_answer_everywhere_is_undefined():
    assert Agreement(both=10, model_only=0, person_only=0, neither=15).kappa == 1.0
    table = Agreement(both=0, model_only=0, person_only=0, neither=30)
    assert table.kappa is None
    assert table.trusted().startswith("kappa is undefined")


def test_too_small_a_sample_is_not_trusted_whatever_its_kappa():
    table = Agreement(both=10, model_only=0, person_only=0, neither=MIN_SAMPLED - 11)
    assert table.kappa == 1.0
    assert (
        table.trusted()
        == f"only {MIN_SAMPLED - 1} sampled holes judged by both (at least 20 are needed)"
    )


@pytest.mark.parametrize(
    "x,n", [(0, 1), (0, 20), (3, 20), (19, 20), (7, 40), (0, 200), (150, 1500)]
)
def test_the_rate_bounds_are_clopper_pearsons(x, n):
    assert upper_rate(x, n) == pytest.approx(beta.ppf(0.95, x + 1, n - x), abs=1e-9)
    if x:
        assert lower_rate(x, n) == pytest.approx(beta.ppf(0.05, x, n - x + 1), abs=1e-9)
    low, high = interval(x, n)
    assert low == (0.0 if x == 0 else pytest.approx(beta.ppf(0.025, x, n - x + 1), abs=1e-9))
    assert high == pytest.approx(beta.ppf(0.975, x + 1, n - x), abs=1e-9)
    # the definition: at the upper bound, as few as x of n has a chance of exactly alpha
    assert binom.cdf(x, n, upper_rate(x, n)) == pytest.approx(0.05, rel=1e-9)


def test_rate_bounds_at_the_edges():
    assert upper_rate(5, 5) == 1.0
    assert upper_rate(0, 20) == pytest.approx(
        1 - 0.05 ** (1 / 20), abs=1e-12
    )  # the rule of three's exact form
    assert interval(0, 0) is None
    with pytest.raises(ValueError):
        upper_rate(3, 2)


def test_a_trusted_models_u_counts_its_yes_answers_and_bounds_its_no_answers():
    # the sample: 30 holes both judged; the model rejected 20 of them (person_only 1 + neither 19)
    table = Agreement(both=9, model_only=1, person_only=1, neither=19)
    assert table.trusted() is None
    # the run's holes now: 12 the model calls relevant, 180 it rejects, 3 it did not judge
    u = plausible_with_model(12, 180, 3, table)
    assert u == 12 + 3 + upper_relevant(200, 20, 1)
    # of the 180 unsampled rejections at most 40 are relevant (95%): 41 relevant among the 200
    # rejections leave P(at most 1 in a sample of 20) above 5%, 42 do not
    assert upper_relevant(200, 20, 1) == 40
    assert hypergeom(200, 41, 20).cdf(1) > 0.05 >= hypergeom(200, 42, 20).cdf(1)
    # with no rejection in the sample, every rejected hole stays plausible
    assert (
        plausible_with_model(0, 5, 0, Agreement(both=20, model_only=0, person_only=0, neither=0))
        == 5
    )
