"""When holes can decide a comparison: flip counts both ways, and the plausible relevant holes.

A comparison puts a *candidate* run beside a *reference* run (a gate: the run
against the baseline's reference run; a finding: a run against the first).
Both rankings are in hand, so a *hole of the comparison* is an unjudged key in
either run's top k. A relevant hole lifts every run that returns it, each at
its own rank, and grows both runs' denominators (recall's relevant count,
nDCG's ideal DCG); a key no compared run returns stays not relevant.

* :func:`flip_count` -- the least number of holes whose relevance (at the
  case's highest grade) would move the mean difference across a target, in
  the direction asked: up, for a gate failing on its judged values; down, for
  one passing on them.
* :func:`upper_relevant` -- the one-sided bound on the relevant rows left
  among a population's unjudged rows after a uniform sample (hypergeometric).

Each case's extremes are exact for a measure whose ``holes`` structure is
``sum`` (the value with a set S of relevant holes is ``(c + sum of a(h))/D(|S|)``:
recall, nDCG, P) or ``first`` (the value is the largest of each relevant key's
own value: MRR, success); any other measure is solved exactly by enumerating
subsets up to :data:`BRUTE_FORCE_HOLES` holes a case and otherwise bounded as if
one hole could move a case's difference anywhere in [-1, 1] (a measure lies in
[0, 1]), which makes m a lower bound: it can only leave a verdict inconclusive.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from ptah.core.judged import high_grades
from ptah.core.measures import Measure
from ptah.core.report import CaseResult, Run

CONFIDENCE_ALPHA = (
    1,
    20,
)  # one-sided 95%: a count is plausible while P(as few relevant found) > 1/20
FLOAT_NOISE = 1e-12
BRUTE_FORCE_HOLES = 10


@dataclass(frozen=True)
class FlipCount:
    """m (None: no set of holes flips it) and whether it is exact or a lower bound."""

    m: int | None
    exact: bool


@dataclass(frozen=True)
class PairedCase:
    """One case of a comparison: both runs' top k, the judged grades (> 0) and the holes of either
    run."""

    id: str
    k: int
    reference: tuple[str, ...]
    candidate: tuple[str, ...]
    grades: Mapping[str, float]
    holes: tuple[str, ...]

    def delta(self, measure: Measure, relevant_holes: Sequence[str] = ()) -> float | None:
        """The candidate's value minus the reference's with ``relevant_holes`` relevant at the top
        grade."""
        grades = high_grades(dict(self.grades), list(relevant_holes))
        after = measure.score(self.candidate, grades, self.k)
        before = measure.score(self.reference, grades, self.k)
        return None if after is None or before is None else after - before

    @classmethod
    def of(cls, before: CaseResult, after: CaseResult) -> PairedCase:
        """A case measured by two runs, under the same judgements: the holes of either, each
        once."""
        holes = dict.fromkeys(hole.key for hole in (*(before.holes or ()), *(after.holes or ())))
        return cls(after.id, after.k, before.keys, after.keys, dict(after.relevant), tuple(holes))

    def defined(self, measure: Measure, relevant_holes: Sequence[str] = ()) -> float:
        """:meth:`delta` where the measure is defined for the case (it has a relevant key)."""
        found = self.delta(measure, relevant_holes)
        if found is None:
            raise ValueError(f"{measure} is N/A for case {self.id!r}: it has no relevant key")
        return found


def _score(measure: Measure, ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float:
    """The measure of a ranking with at least one relevant key (never N/A)."""
    found = measure.score(ranking, grades, k)
    assert found is not None
    return found


def paired_cases(reference: Run, candidate: Run) -> list[PairedCase]:
    """The cases the two runs share, with the holes of either (each run's own, under the same
    judgements)."""
    theirs = {case.id: case for case in reference.cases}
    paired = []
    for case in candidate.cases:
        before = theirs.get(case.id)
        if before is None:
            continue
        paired.append(PairedCase.of(before, case))
    return paired


def extremes(case: PairedCase, measure: Measure) -> tuple[list[float], list[float], bool] | None:
    """The least and the greatest difference with exactly 0, 1, ... of the case's holes relevant,
    and whether they are exact; None when the measure is N/A for the case."""
    base = case.delta(measure)
    if base is None:
        return None
    holes = case.holes
    structure = measure.kind.holes if measure.depth(case.k) <= case.k else None
    if not holes:
        return [base], [base], True
    if structure == "sum":
        return _sum_extremes(case, measure, base)
    if structure == "first":
        return _first_extremes(case, measure, base)
    if len(holes) <= BRUTE_FORCE_HOLES:
        return _enumerated(case, measure)
    return [base, -1.0], [base, 1.0], False


def _sum_extremes(
    case: PairedCase, measure: Measure, base: float
) -> tuple[list[float], list[float], bool]:
    # with j holes relevant the difference is (c + sum of w(h)) / D(j), w(h) the candidate's gain
    # less the reference's: the best j are the j of largest w, and one hole's difference orders them
    # by w
    alone = sorted(case.holes, key=lambda key: (case.defined(measure, [key]), key))
    lowest, highest = [base], [base]
    for j in range(1, len(alone) + 1):
        lowest.append(case.defined(measure, alone[:j]))
        highest.append(case.defined(measure, alone[-j:]))
    return lowest, highest, True


def _first_extremes(
    case: PairedCase, measure: Measure, base: float
) -> tuple[list[float], list[float], bool]:
    # each run's value is the largest of its base value and each relevant hole's own value
    grades = dict(case.grades)

    def own(ranking: tuple[str, ...]) -> list[float]:
        return [_score(measure, ranking, high_grades(grades, [key]), case.k) for key in case.holes]

    after, before = own(case.candidate), own(case.reference)
    after0, before0 = (
        _score(measure, case.candidate, grades, case.k),
        _score(measure, case.reference, grades, case.k),
    )
    highest = [base] + _best_first(after, before, after0, before0)
    lowest = [base] + [-value for value in _best_first(before, after, before0, after0)]
    return lowest, highest, True


def _best_first(gain: list[float], loss: list[float], gain0: float, loss0: float) -> list[float]:
    """For j = 1..n: the largest max(gain0, max gain over S) - max(loss0, max loss over S), |S| =
    j."""
    order = sorted(range(len(gain)), key=lambda index: loss[index])
    values, best_gain = [], gain0
    # S within the first position + 1 by loss: its loss <= this one's
    for index in order:
        best_gain = max(best_gain, gain[index])
        values.append(best_gain - max(loss0, loss[index]))
    # a set of j holes fits within the first t >= j of them: the best over t >= j
    for position in range(len(values) - 2, -1, -1):
        values[position] = max(values[position], values[position + 1])
    return values


def _enumerated(case: PairedCase, measure: Measure) -> tuple[list[float], list[float], bool]:
    lowest, highest = [], []
    for j in range(len(case.holes) + 1):
        found = [case.defined(measure, chosen) for chosen in combinations(case.holes, j)]
        lowest.append(min(found))
        highest.append(max(found))
    return lowest, highest, True


def flip_count(cases: Sequence[PairedCase], measure: Measure, target: float, up: bool) -> FlipCount:
    """The least number of holes whose relevance moves the mean difference (candidate - reference)
    over the cases where the measure is defined to ``target`` or above (``up``), or below it (not
    ``up``).

    Taking holes relevant never changes which cases are defined (a case with
    no relevant key has no grade to give them).
    """
    curves, exact = [], True
    for case in cases:
        found = extremes(case, measure)
        if found is not None:
            lowest, highest, exact_here = found
            curves.append(np.asarray(highest if up else [-value for value in lowest]))
            exact = exact and exact_here
    if not curves:
        return FlipCount(None, exact)
    count = len(curves)
    need = (target - FLOAT_NOISE) * count if up else -(target - FLOAT_NOISE) * count
    best = np.full(
        1, sum(curve[0] for curve in curves)
    )  # best[t]: the largest sum with t holes relevant

    def reached(total: float) -> bool:
        return total >= need if up else total > need

    if reached(best[0]):
        return FlipCount(0, exact)
    for curve in curves:
        grown = np.full(len(best) + len(curve) - 1, -np.inf)
        for j, value in enumerate(curve - curve[0]):
            np.maximum(grown[j : j + len(best)], best + value, out=grown[j : j + len(best)])
        best = grown
    hits = np.flatnonzero(best >= need) if up else np.flatnonzero(best > need)
    return FlipCount(int(hits[0]) if len(hits) else None, exact)


def completions(case: CaseResult, measure: Measure) -> tuple[float, float] | None:
    """The least and the greatest value ``measure`` takes on ``case`` over every way its holes could
    be judged (each relevant at the case's highest grade, or not): the true interval, min first,
    which the value (no hole relevant) and the high bound (every hole relevant) need not span --
    nDCG with a hole below its relevant keys falls when the hole is relevant. Exact where
    :func:`extremes` is; else the whole [0, 1]. None when the measure is N/A for the case."""
    alone = PairedCase(
        case.id,
        case.k,
        (),
        case.keys,
        dict(case.relevant),
        tuple(dict.fromkeys(hole.key for hole in case.holes or ())),
    )
    found = extremes(
        alone, measure
    )  # against an empty ranking, which scores 0, the difference is the value
    if found is None:
        return None
    lowest, highest, exact = found
    return (min(lowest), max(highest)) if exact else (0.0, 1.0)


def mean_completions(cases: Sequence[CaseResult], measure: Measure) -> tuple[float, float] | None:
    """The true interval of the mean of ``measure`` over ``cases`` (those defining it) however the
    holes are judged: each case's holes are its own, so the means of the cases' least and greatest
    values are reached."""
    found = [bounds for case in cases if (bounds := completions(case, measure)) is not None]
    if not found:
        return None
    return sum(low for low, _ in found) / len(found), sum(high for _, high in found) / len(found)


def _plausible(
    population: int,
    relevant: int,
    drawn: int,
    found: int,
    alpha: tuple[int, int] = CONFIDENCE_ALPHA,
) -> bool:
    """Whether ``relevant`` relevant rows among ``population`` leave a chance above alpha of finding
    at most ``found`` in a uniform sample of ``drawn``: P(X <= found) > alpha, in exact integers."""
    numerator, denominator = alpha
    ways = sum(comb(relevant, i) * comb(population - relevant, drawn - i) for i in range(found + 1))
    return ways * denominator > comb(population, drawn) * numerator


def upper_relevant(
    population: int, drawn: int, found: int, alpha: tuple[int, int] = CONFIDENCE_ALPHA
) -> int:
    """The one-sided upper bound (1 - alpha, 95% by default) on the relevant rows among the
    ``population - drawn`` not sampled, when a uniform sample of ``drawn`` of ``population`` rows
    held ``found`` relevant ones (hypergeometric, exact)."""
    if not 0 <= found <= drawn <= population:
        raise ValueError(
            f"a sample of {drawn} with {found} relevant cannot come from {population} rows"
        )
    # the total relevant lies in [found, population - (drawn - found)]; found itself is plausible (P
    # = 1), and plausibility falls as the total grows: the first total above found that is not, less
    # one, is the largest
    totals = range(found + 1, population - (drawn - found) + 1)
    return bisect_left(
        totals, True, key=lambda total: not _plausible(population, total, drawn, found, alpha)
    )


def settling_sample(holes: int, m: int) -> int | None:
    """The smallest uniform sample of the ``holes`` that, with none of it relevant, bounds the
    relevant holes left below ``m`` (so a gate with flip count m fails conclusively); None when no
    sample short of judging them all does (then judging every hole settles it)."""
    if m > holes:
        return 0
    if upper_relevant(holes, holes - 1, 0) >= m:
        return None
    samples = range(
        1, holes - 1
    )  # the bound falls as the sample grows: the least sample below m (holes - 1 is)
    return 1 + bisect_left(samples, True, key=lambda drawn: upper_relevant(holes, drawn, 0) < m)
