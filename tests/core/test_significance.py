"""The paired statistics, checked against independent computations and scipy on fixed inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from ptah.core.significance import (
    EXACT_LIMIT,
    Interval,
    bootstrap_means,
    paired_bootstrap,
    sign_flip_test,
)

# Per-case nDCG-like values of two runs on 12 cases (fixed, not random).
REFERENCE = np.array([1.0, 0.7602, 0.6309, 1.0, 1.0, 1.0, 0.7602, 1.0, 0.7602, 0.8597, 0.7993, 1.0])
CANDIDATE = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.1637, 1.0, 0.3801, 0.2398, 0.8873, 0.5])
DIFFERENCES = CANDIDATE - REFERENCE


def test_bootstrap_is_reproducible_bit_for_bit_with_a_seed():
    first = bootstrap_means(DIFFERENCES, 10_000, 7)
    again = bootstrap_means(DIFFERENCES, 10_000, 7)
    assert first.tobytes() == again.tobytes()
    assert paired_bootstrap(DIFFERENCES, 10_000, 7) == paired_bootstrap(DIFFERENCES, 10_000, 7)
    assert bootstrap_means(DIFFERENCES, 10_000, 8).tobytes() != first.tobytes()


def test_bootstrap_means_are_the_documented_draws_and_the_interval_their_percentiles():
    resamples, seed = 5_000, 3
    indices = np.random.default_rng(seed).integers(
        0, len(DIFFERENCES), size=(resamples, len(DIFFERENCES))
    )
    expected_means = DIFFERENCES[indices].mean(axis=1)
    assert bootstrap_means(DIFFERENCES, resamples, seed).tobytes() == expected_means.tobytes()
    low, high = np.percentile(expected_means, [2.5, 97.5])
    assert paired_bootstrap(DIFFERENCES, resamples, seed) == Interval(
        low=float(low), high=float(high), level=0.95
    )
    low, high = np.percentile(expected_means, [5.0, 95.0])
    assert paired_bootstrap(DIFFERENCES, resamples, seed, level=0.9) == Interval(
        float(low), float(high), 0.9
    )


def test_bootstrap_in_blocks_draws_what_one_call_draws(monkeypatch):
    import ptah.core.significance as significance

    whole = bootstrap_means(DIFFERENCES, 1_001, 0)
    monkeypatch.setattr(
        significance, "_BLOCK_VALUES", 7 * len(DIFFERENCES)
    )  # 7 resamples per block, 143 blocks
    assert bootstrap_means(DIFFERENCES, 1_001, 0).tobytes() == whole.tobytes()


def test_bootstrap_edge_cases():
    assert paired_bootstrap([], 100, 0) is None
    assert paired_bootstrap([0.25], 100, 0) == Interval(
        0.25, 0.25, 0.95
    )  # one case: every resample is it
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_means([1.0], 0, 0)
    with pytest.raises(ValueError, match="seed"):
        bootstrap_means([1.0], 10, -1)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_means([1.0, math.nan], 10, 0)


def exhaustive_p(differences) -> float:
    """P(|mean of sign-flipped differences| >= |observed mean|) by listing every sign pattern of all
    n cases."""
    values = list(differences)
    observed = abs(sum(values)) / len(values)
    extreme = total = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        total += 1
        if abs(sum(s * v for s, v in zip(signs, values))) / len(values) >= observed - 1e-12:
            extreme += 1
    return extreme / total


def test_exact_p_value_equals_an_exhaustive_enumeration():
    result = sign_flip_test(DIFFERENCES)
    assert result.method == "exact"
    assert result.nonzero == 7  # five cases tie; zero differences flip to themselves
    assert result.patterns == 2**7
    assert result.p_value == exhaustive_p(DIFFERENCES)
    # by hand: six differences are negative and one (+0.088) positive; only the observed pattern,
    # the one that also flips +0.088 to negative, and the negations of both reach |sum| >=
    # |observed|: 4 of 128
    assert result.p_value == 4 / 128


def test_exact_p_value_with_mixed_signs_and_exact_ties_of_the_statistic():
    differences = [0.5, -0.5, 0.25, 0.25, -1.0, 0.0]
    assert sign_flip_test(differences).p_value == exhaustive_p(differences)
    assert sign_flip_test([0.0, 0.0]).p_value == 1.0
    assert sign_flip_test([]) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_p_value_equals_scipy_permutation_test(seed):
    rng = np.random.default_rng(seed)
    reference = rng.choice([0.0, 0.25, 0.5, 1.0], size=14)
    candidate = rng.choice([0.0, 0.25, 0.5, 1.0], size=14)
    theirs = scipy.stats.permutation_test(
        (candidate, reference),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    )
    ours = sign_flip_test(candidate - reference)
    assert ours.method == "exact"
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-12)


def test_monte_carlo_beyond_the_exact_limit_is_seeded_and_agrees_with_the_exact_value():
    rng = np.random.default_rng(11)
    differences = rng.normal(0.05, 0.3, size=EXACT_LIMIT + 2)  # 22 non-zero: Monte Carlo by default
    drawn = sign_flip_test(differences, resamples=20_000, seed=5)
    assert drawn.method == "monte-carlo" and drawn.patterns == 20_000 and drawn.nonzero == 22
    assert sign_flip_test(differences, resamples=20_000, seed=5) == drawn
    # the documented estimator: (1 + extreme draws) / (1 + draws)
    assert (drawn.p_value * 20_001) == pytest.approx(round(drawn.p_value * 20_001), abs=1e-6)
    exact = sign_flip_test(differences, exact_limit=22)  # 2^22 patterns, enumerated
    assert exact.method == "exact"
    assert drawn.p_value == pytest.approx(exact.p_value, abs=0.01)  # 3.5 standard errors at p ~ 0.3


def test_monte_carlo_never_reports_zero():
    differences = np.full(30, -0.5)
    result = sign_flip_test(differences, resamples=1_000, seed=0)
    assert result.method == "monte-carlo"
    assert result.p_value >= 1 / 1_001
