"""The measures ptah reports, per case and as means over cases.

Definitions (pinned in DESIGN.md, "Numbers"; they agree with trec_eval 9.x as
wrapped by pytrec_eval to 1e-9, which the tests check):

* A *ranking* is a list of distinct keys, best first; only its first ``k``
  entries count. Rank i is 1-based.
* ``grades`` maps judged keys to their grade. A key is *relevant* when its
  grade is > 0; a grade of 0 means judged not relevant (a validated corpus
  never holds one, but trec_eval qrels may). A key absent from ``grades`` is
  unjudged and gains 0.
* **recall@k** = |relevant keys among ranks 1..k| / |relevant keys|
  (trec_eval ``recall.k``).
* **MRR@k** -- per case, the reciprocal rank: 1 / (rank of the first relevant
  key within ranks 1..k), or 0 when none is there (trec_eval ``recip_rank`` on
  a run cut at k; trec_eval itself does not cut).
* **nDCG@k** = DCG@k / IDCG@k with linear gain (trec_eval ``ndcg_cut.k``):
  DCG@k = sum over ranks i = 1..min(k, len(ranking)) of grade(key_i) / log2(i + 1);
  IDCG@k = the same sum over the grades of *all* judged keys -- retrieved or
  not -- sorted descending and cut at k. Float grades are used exactly.
* When a case has no relevant key every measure is undefined: ``None`` (N/A),
  never 0 or 1, and the case is left out of the mean's denominator (where
  trec_eval would report 0, or skip the query).

Means carry their numerator and denominator so a report can say "over 47 of
50 cases"; an empty mean is N/A (``None``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from ptah.core.corpus import Case

MEASURE_NAMES = ("recall", "MRR", "nDCG")
_MEASURE_PATTERN = re.compile(r"(recall|MRR|nDCG)@([1-9][0-9]*)")


def recall_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """|relevant keys in ranking[:k]| / |relevant keys|; None when no key is relevant."""
    top, relevant = _prepared(ranking, grades, k)
    if not relevant:
        return None
    return sum(1 for key in top if key in relevant) / len(relevant)


def reciprocal_rank_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """1 / rank of the first relevant key in ranking[:k], 0.0 if none; None when no key is relevant."""
    top, relevant = _prepared(ranking, grades, k)
    if not relevant:
        return None
    for rank, key in enumerate(top, start=1):
        if key in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
    """DCG@k / IDCG@k with linear gain and log2(rank + 1) discount; None when no key is relevant.

    The ideal ranking is every judged grade sorted descending, cut at k, so
    relevant keys that were never retrieved still lower the score.
    """
    top, relevant = _prepared(ranking, grades, k)
    if not relevant:
        return None
    dcg = sum(relevant.get(key, 0.0) / math.log2(rank + 1) for rank, key in enumerate(top, start=1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg


_MEASURES: dict[str, Callable[[Sequence[str], Mapping[str, float], int], float | None]] = {
    "recall": recall_at_k,
    "MRR": reciprocal_rank_at_k,
    "nDCG": ndcg_at_k,
}


@dataclass(frozen=True)
class Measure:
    """A measure at a depth, e.g. ``Measure("nDCG", 10)``, written ``nDCG@10``.

    ``str(Measure.parse(text)) == text`` for every text ``parse`` accepts, and
    ``Measure.parse(str(m)) == m`` for every measure. Names are exactly
    ``recall``, ``MRR`` and ``nDCG``; the depth is a positive integer written
    without leading zeros.
    """

    name: str
    k: int

    def __post_init__(self) -> None:
        if self.name not in _MEASURES:
            raise ValueError(f"unknown measure {self.name!r}; use one of {', '.join(MEASURE_NAMES)}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"depth of {self.name} must be an integer >= 1, got {self.k!r}")

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @classmethod
    def parse(cls, text: str) -> Measure:
        """The measure ``text`` names (``recall@10``, ``MRR@5``, ``nDCG@10``); ValueError otherwise."""
        match = _MEASURE_PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(
                f"cannot read measure {text!r}; write NAME@K with NAME one of "
                f"{', '.join(MEASURE_NAMES)} and K a positive integer, e.g. nDCG@10"
            )
        return cls(match.group(1), int(match.group(2)))

    def score(self, ranking: Sequence[str], grades: Mapping[str, float]) -> float | None:
        """This measure of one ranking (see the module docs); None when no key is relevant."""
        return _MEASURES[self.name](ranking, grades, self.k)


@dataclass(frozen=True)
class Placement:
    """Where a key ranked: ``rank`` is 1-based, or None when not known."""

    key: str
    rank: int | None


@dataclass(frozen=True)
class CaseMetrics:
    """One case's measures at its own depth ``k``, and its expectation checks.

    ``recall``, ``rr`` (reciprocal rank) and ``ndcg`` are None when the case
    has no relevant key. ``required_missed`` holds the required keys absent
    from the top k, in the case's order, with their rank beyond k when the
    caller could say it. ``forbidden_hits`` holds the forbidden keys present in
    the top k (leakage), best first, with their rank.
    """

    recall: float | None
    rr: float | None
    ndcg: float | None
    required_missed: tuple[Placement, ...] = ()
    forbidden_hits: tuple[Placement, ...] = ()


def evaluate_case(
    case: Case,
    ranked: Sequence[tuple[str, float]],
    rank_of: Callable[[str], int | None] | None = None,
) -> CaseMetrics:
    """Measure ``case`` on its ranked results, ``(key, score)`` pairs best first.

    Only the first ``case.k`` results count; the rest are ignored. Graded keys
    are ``case.relevant``. ``rank_of``, when given, is asked for the full rank
    of each missed required key (typically :func:`ptah.core.ranking.rank_of`
    bound to the query's scores); it may answer None when it cannot say.
    """
    top = [key for key, _score in ranked[: case.k]]
    positions = {key: rank for rank, key in enumerate(top, start=1)}
    missed = tuple(
        Placement(key, rank_of(key) if rank_of is not None else None)
        for key in case.required
        if key not in positions
    )
    forbidden = set(case.forbidden)
    hits = tuple(Placement(key, positions[key]) for key in top if key in forbidden)
    return CaseMetrics(
        recall=recall_at_k(top, case.relevant, case.k),
        rr=reciprocal_rank_at_k(top, case.relevant, case.k),
        ndcg=ndcg_at_k(top, case.relevant, case.k),
        required_missed=missed,
        forbidden_hits=hits,
    )


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


def _prepared(ranking: Sequence[str], grades: Mapping[str, float], k: int) -> tuple[Sequence[str], dict[str, float]]:
    """The ranking cut at k and the relevant keys' grades, after checking both."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"depth k must be an integer >= 1, got {k!r}")
    top = ranking[:k]
    if len(set(top)) != len(top):
        raise ValueError("a ranking must hold distinct keys; remove the duplicates before measuring")
    relevant: dict[str, float] = {}
    for key, grade in grades.items():
        if not (math.isfinite(grade) and grade >= 0):
            raise ValueError(f"grade of {key!r} must be a finite number >= 0, got {grade!r}")
        if grade > 0:
            relevant[key] = float(grade)
    return top, relevant
