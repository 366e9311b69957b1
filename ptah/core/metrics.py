"""Means with explicit denominators (the measures themselves are the registry's,
:mod:`ptah.core.measures`).

Means carry their numerator and denominator so a report can say "over 47 of
50 cases"; an empty mean is N/A (``None``), never 0 or 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mean:
    """An arithmetic mean with its parts: ``numerator`` / ``denominator``.

    ``denominator`` counts the values that were defined; ``undefined`` counts
    those that were N/A and left out. ``value`` is None (N/A) when nothing was
    defined -- never 0 or 1. ``high_numerator`` sums the same cases' high
    bounds (:mod:`ptah.core.judged`); None when unknown (a ``ptah-report@1``).
    """

    numerator: float
    denominator: int
    undefined: int = 0
    high_numerator: float | None = None

    @property
    def value(self) -> float | None:
        if self.denominator == 0:
            return None
        return self.numerator / self.denominator

    @property
    def high(self) -> float | None:
        """The mean of the cases' high bounds; None when unknown or N/A."""
        if self.denominator == 0 or self.high_numerator is None:
            return None
        return self.high_numerator / self.denominator


def mean_of(values: Iterable[float | None]) -> Mean:
    """The mean of the defined values; None values are counted in ``undefined``.

    The numerator is summed with ``math.fsum`` (correctly rounded), so a mean
    does not depend on the order of the cases. A NaN raises ``ValueError``.
    """
    defined: list[float] = []
    undefined = 0
    for value in values:
        if value is None:
            undefined += 1
        elif math.isnan(value):
            raise ValueError("cannot average NaN; a measure produced NaN")
        else:
            defined.append(value)
    return Mean(numerator=math.fsum(defined), denominator=len(defined), undefined=undefined)


def bounded_mean(values: Iterable[float | None], highs: Iterable[float | None]) -> Mean:
    """:func:`mean_of` the values, with the high bounds of the same cases summed beside (a high
    bound is defined exactly where its value is)."""
    mean = mean_of(values)
    return Mean(
        mean.numerator,
        mean.denominator,
        mean.undefined,
        math.fsum(h for h in highs if h is not None),
    )
