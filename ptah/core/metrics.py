"""The three default measures as plain functions, and means with explicit denominators.

The definitions, their trec_eval counterparts and every other measure live in
one registry, :mod:`ptah.core.measures`; :func:`recall_at_k`,
:func:`reciprocal_rank_at_k` and :func:`ndcg_at_k` are its ``recall``,
``MRR`` and ``nDCG`` at depth k, for callers that hold a ranking and grades.

Means carry their numerator and denominator so a report can say "over 47 of
50 cases"; an empty mean is N/A (``None``), never 0 or 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ptah.core.measures import kind


def recall_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """|relevant keys in ranking[:k]| / |relevant keys|; None when no key is relevant."""
    return kind("recall")(ranking, grades, k)


def reciprocal_rank_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """1 / rank of the first relevant key in ranking[:k], 0.0 if none; None when no key is relevant."""
    return kind("MRR")(ranking, grades, k)


def ndcg_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """DCG@k / IDCG@k with linear gain and log2(rank + 1) discount; None when no key is relevant.

    The ideal ranking is every judged grade sorted descending, cut at k, so
    relevant keys that were never retrieved still lower the score.
    """
    return kind("nDCG")(ranking, grades, k)


@dataclass(frozen=True)
class Mean:
    """An arithmetic mean with its parts: ``numerator`` / ``denominator``.

    ``denominator`` counts the values that were defined; ``undefined`` counts
    those that were N/A and left out. ``value`` is None (N/A) when nothing was
    defined -- never 0 or 1.
    """

    numerator: float
    denominator: int
    undefined: int = 0

    @property
    def value(self) -> float | None:
        if self.denominator == 0:
            return None
        return self.numerator / self.denominator


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
