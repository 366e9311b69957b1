"""Paired statistics for comparing two runs case by case: is a difference more than noise?

The unit is the case: each case defined on both sides gives a paired difference
``d_i = candidate_i - reference_i``. :func:`paired_bootstrap` gives a percentile interval of their
mean, :func:`sign_flip_test` a two-sided p-value, :func:`holm_adjusted` and :func:`holm` correct a
family of tests. Pure and seeded: the same inputs and seed give the same numbers, bit for bit, on
every machine with the same numpy. Why these tests: docs/design.md ("Paired statistics").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ptah.core.compared import Interval, SignFlipResult
from ptah.core.request import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EXACT_LIMIT,
    MAX_RESAMPLES,
)

# Bounds the temporary index block of a bootstrap or sign matrix of a Monte Carlo test (values).
_BLOCK_VALUES = 4_000_000
_SLACK = 100 * np.finfo(np.float64).eps


def _differences(values: Sequence[float], resamples: int, seed: int) -> np.ndarray:
    """``values`` as a float64 array, once they and the draws' ``resamples`` and ``seed`` are
    checked."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"differences must be 1-D, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("differences must be finite numbers")
    if (
        isinstance(resamples, bool)
        or not isinstance(resamples, int)
        or not 1 <= resamples <= MAX_RESAMPLES
    ):
        raise ValueError(
            f"resamples must be a whole number from 1 to {MAX_RESAMPLES}, got {resamples!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    return array


def bootstrap_means(
    differences: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """The ``resamples`` bootstrap means of ``differences``, as float64: each the mean of n
    differences drawn uniformly with replacement, the indices exactly
    ``numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))`` (drawn in blocks of rows
    to bound memory, which gives the same numbers as one call).

    Raises ``ValueError`` for no differences, a non-finite one, or a bad
    ``resamples`` or ``seed``.
    """
    values = _differences(differences, resamples, seed)
    n = len(values)
    if n == 0:
        raise ValueError("a bootstrap needs at least one paired difference")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    block = max(1, _BLOCK_VALUES // n)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        indices = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = values[indices].mean(axis=1)
    return means


def paired_bootstrap(
    differences: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """The percentile bootstrap interval of the mean of ``differences`` (``numpy.percentile``, its
    default linear interpolation, at ``(1 - level) / 2`` and ``(1 + level) / 2`` of
    :func:`bootstrap_means`); None when there are none."""
    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level must be a float strictly between 0 and 1, got {level!r}")
    if len(differences) == 0:
        return None
    means = bootstrap_means(differences, resamples, seed)
    tail = (1 - level) / 2
    low, high = np.percentile(means, [100 * tail, 100 * (1 - tail)])
    return Interval(low=float(low), high=float(high), level=level)


def sign_flip_test(
    differences: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    exact_limit: int = EXACT_LIMIT,
) -> SignFlipResult | None:
    """The two-sided paired sign-flip p-value of the mean of ``differences``; None when there are
    none.

    H0: each difference is as likely to have either sign; p = P(|mean of
    sign-flipped differences| >= |observed mean|). Zero differences are left
    out; m is the number of the others, and m = 0 gives p = 1. With m at most
    ``exact_limit``, every sign pattern is enumerated and p is the exact
    proportion; beyond, ``resamples`` patterns are drawn from
    ``numpy.random.default_rng(seed)`` and p = (1 + extreme draws) / (1 +
    resamples). "At least as extreme" allows a relative slack of 100 machine
    epsilons of the observed statistic (summation order).
    """
    values = _differences(differences, resamples, seed)
    if not 0 <= exact_limit <= 24:
        raise ValueError(
            f"exact_limit must be from 0 to 24 (2^24 sign patterns), got {exact_limit!r}"
        )
    if len(values) == 0:
        return None
    nonzero = values[values != 0]
    m = len(nonzero)
    if m == 0:
        return SignFlipResult(p_value=1.0, method="exact", nonzero=0, patterns=1)
    observed = abs(math.fsum(nonzero))
    threshold = observed - _SLACK * observed
    if m <= exact_limit:
        sums = np.zeros(1, dtype=np.float64)
        for value in nonzero:  # every sign pattern's sum, doubling per difference
            sums = np.concatenate((sums + value, sums - value))
        extreme = int(np.count_nonzero(np.abs(sums) >= threshold))
        return SignFlipResult(
            p_value=extreme / len(sums), method="exact", nonzero=m, patterns=len(sums)
        )
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, _BLOCK_VALUES // m)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        signs = rng.integers(0, 2, size=(rows, m)) * 2 - 1
        extreme += int(np.count_nonzero(np.abs(signs @ nonzero) >= threshold))
    return SignFlipResult(
        p_value=(1 + extreme) / (1 + resamples), method="monte-carlo", nonzero=m, patterns=resamples
    )


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's adjusted p-values, in the order given; ``None`` (no test) is no member of the family
    and stays ``None``.

    With the family's m p-values sorted ascending, ``q_(i) = min(1, max over j <= i of
    (m - j + 1) * p_(j))``; equal p-values get equal adjusted values whatever their order.
    """
    family = sorted((p, index) for index, p in enumerate(p_values) if p is not None)
    for p, _ in family:
        if not 0 <= p <= 1:
            raise ValueError(f"a p-value must be between 0 and 1, got {p!r}")
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(family):
        running = min(1.0, max(running, (len(family) - rank) * p))
        adjusted[index] = running
    return adjusted


def holm(p_values: Sequence[float | None], alpha: float) -> list[bool | None]:
    """Which hypotheses Holm's method rejects at family-wise error ``alpha`` (adjusted p below
    alpha), in the order given; ``None`` (no test) stays ``None``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return [None if q is None else q < alpha for q in holm_adjusted(p_values)]


def p_value_text(test: SignFlipResult | None) -> str:
    """How a test's p-value reads in a column: ``0.0039`` (exact), ``~0.0002`` (Monte Carlo),
    ``<0.0001`` (either: a bound needs no mark); N/A without a test."""
    if test is None:
        return "N/A"
    value = test.p_value
    if value < 0.0001:
        return "<0.0001"
    return ("~" if test.method == "monte-carlo" else "") + f"{value:.4f}"


def p_value_phrase(test: SignFlipResult | None) -> str:
    """How a test's p-value reads in a sentence: ``p = 0.0039``, ``p ~ 0.0002`` (Monte Carlo), ``p <
    0.0001``, ``p N/A``."""
    text = p_value_text(test)
    if text[0] in "<~":
        return f"p {text[0]} {text[1:]}"
    return "p N/A" if test is None else f"p = {text}"
