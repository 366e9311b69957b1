"""When holes can decide a gate: the flip count m, the plausible relevant holes U, and the sample that settles.

Pinned in DESIGN.md ("Judged keys and holes"):

* the **flip count** m of a drop gate that fails on the current run's mean is
  the least number of the run's holes that, taken relevant at their case's
  highest grade, would make the mean pass (None: even every hole would not);
* the **plausible relevant holes** U: the number of holes, or, with a random
  sample of them judged, the one-sided 95% upper bound on the relevant holes
  among those still unjudged (:func:`upper_relevant`, hypergeometric, exact);
* the gate is **inconclusive** when m <= U and a conclusive failure when
  m > U; :func:`settling_sample` is the smallest sample that would make it
  conclusive if none of the sample were relevant.

m is exact for the registered measures: each is a sum over the ranking in
which a relevant key ranked higher never counts less, so a case's best j holes
are its j highest-ranked ones, and the least total over cases is a
multiple-choice knapsack over counts (:func:`flip_count`, dynamic
programming). A measure without that property (``MeasureKind.top_holes_first``
false) gets a proven lower bound instead: each case is credited its whole high
bound for one hole, so the true m is never smaller -- it can only make a
failure conclusive that really is.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from math import comb
from typing import Sequence

import numpy as np

from ptah.core.judged import high_grades
from ptah.core.measures import Measure
from ptah.core.report import CaseResult

CONFIDENCE_ALPHA = (1, 20)  # one-sided 95%: a count is plausible while P(as few relevant found) > 1/20
FLOAT_NOISE = 1e-12


@dataclass(frozen=True)
class FlipCount:
    """m (None: no set of holes flips the gate) and whether it is exact or a lower bound."""

    m: int | None
    exact: bool


def gain_curve(case: CaseResult, measure: Measure) -> list[float] | None:
    """The case's value with its 0, 1, ..., h highest-ranked holes taken relevant (None: the measure is N/A
    for the case, on every bound). Needs the holes within the measure's depth to be in the case's ranking."""
    relevant = dict(case.relevant)
    keys = [result.key for result in case.ranking]
    base = case.values[str(measure)]
    if base is None:
        return None
    holes = [hole.key for hole in sorted(case.holes or (), key=lambda hole: hole.rank)]
    curve = [base]
    for j in range(1, len(holes) + 1):
        score = measure.score(keys, high_grades(relevant, holes[:j]), case.k)
        curve.append(base if score is None else score)
    return curve


def case_curve(case: CaseResult, measure: Measure) -> tuple[list[float] | None, bool]:
    """The case's values with 0, 1, ... of its holes taken relevant, and whether that is exact: the
    :func:`gain_curve` where the measure's best holes are its highest-ranked and lie in the case's ranking;
    else ``[value, high]``, the whole high bound for one hole, which never asks more holes than the truth.
    None when the measure is N/A for the case."""
    if measure.kind.top_holes_first and measure.depth(case.k) <= case.k:
        return gain_curve(case, measure), True
    value, high = case.values[str(measure)], (case.highs or {}).get(str(measure))
    return (None if value is None else [value] if high is None or high <= value else [value, high]), False


def flip_count(cases: Sequence[CaseResult], measure: Measure, target: float) -> FlipCount:
    """The least number of holes that lift the mean of ``measure`` over ``cases`` to ``target`` (module docs).

    The mean is over the cases where the measure is defined; taking holes
    relevant never changes which those are (a case with no relevant key has no
    highest grade to give them).
    """
    exact = True
    curves: list[list[float]] = []
    for case in cases:
        curve, exact_here = case_curve(case, measure)
        if curve is not None:
            curves.append(curve)
            exact = exact and exact_here
    if not curves:
        return FlipCount(None, exact)
    need = target * len(curves) - FLOAT_NOISE * len(curves)
    best = np.full(1, sum(curve[0] for curve in curves))  # best[t]: the largest sum of values with t holes relevant
    if best[0] >= need:
        return FlipCount(0, exact)
    for curve in curves:
        gains = np.asarray(curve) - curve[0]
        grown = np.full(len(best) + len(curve) - 1, -np.inf)
        for j, gain in enumerate(gains):
            np.maximum(grown[j:j + len(best)], best + gain, out=grown[j:j + len(best)])
        best = grown
    reached = np.flatnonzero(best >= need)
    return FlipCount(int(reached[0]) if len(reached) else None, exact)


def _plausible(population: int, relevant: int, drawn: int, found: int) -> bool:
    """Whether ``relevant`` relevant rows among ``population`` leave a chance above alpha of finding at most
    ``found`` in a uniform sample of ``drawn``: P(X <= found) > 1/20, in exact integers."""
    numerator, denominator = CONFIDENCE_ALPHA
    ways = sum(comb(relevant, i) * comb(population - relevant, drawn - i) for i in range(found + 1))
    return ways * denominator > comb(population, drawn) * numerator


def upper_relevant(population: int, drawn: int, found: int) -> int:
    """The one-sided 95% upper bound on the relevant rows among the ``population - drawn`` not sampled, when a
    uniform sample of ``drawn`` of ``population`` rows held ``found`` relevant ones (hypergeometric, exact)."""
    if not 0 <= found <= drawn <= population:
        raise ValueError(f"a sample of {drawn} with {found} relevant cannot come from {population} rows")
    # the total relevant lies in [found, population - (drawn - found)]; found itself is plausible (P = 1), and
    # plausibility falls as the total grows: the first total above found that is not, less one, is the largest
    totals = range(found + 1, population - (drawn - found) + 1)
    return bisect_left(totals, True, key=lambda total: not _plausible(population, total, drawn, found))


def settling_sample(holes: int, m: int) -> int | None:
    """The smallest uniform sample of the ``holes`` that, with none of it relevant, bounds the relevant holes
    left below ``m`` (so a gate with flip count m fails conclusively); None when no sample short of judging
    them all does (then judging every hole settles it)."""
    if m > holes:
        return 0
    if upper_relevant(holes, holes - 1, 0) >= m:
        return None
    samples = range(1, holes - 1)  # the bound falls as the sample grows: the least sample below m (holes - 1 is)
    return 1 + bisect_left(samples, True, key=lambda drawn: upper_relevant(holes, drawn, 0) < m)
