"""When holes can decide a comparison: flip counts both ways, the plausible relevant holes, the
random sample of a comparison's holes and the estimate of a difference under complete judgement
(docs/holes.md).

A comparison puts a *candidate* run beside a *reference* run (a gate: the run against the
baseline's reference run; a finding: a run against the first). A *hole* is an unjudged key in
either top k; taken relevant (at the case's highest grade) it lifts every run that returns it, at
its own rank, and grows both denominators; a key no compared run returns stays not relevant.

* :func:`flip_count` -- the least number of holes whose relevance moves the mean difference across
  a target: up for a gate failing on its judged values, down for one passing. Exact for a measure
  whose ``holes`` structure is ``sum`` (``(c + sum of a(h)) / D(|S|)``: recall, nDCG, P) or
  ``first`` (the largest relevant key's own value: MRR, success), by enumeration up to
  :data:`BRUTE_FORCE_HOLES` holes a case otherwise, and beyond that a lower bound (each case's
  difference anywhere in [-1, 1]), which can only leave a verdict inconclusive.
* :func:`upper_relevant` -- the one-sided hypergeometric bound on the relevant rows left among a
  population's unjudged rows after a uniform sample.
* :func:`draw` -- a hole's stratum is the side it favours (``reference``, ``candidate`` or
  ``both``) and the band of its better rank (:data:`BANDS`), a function of the two rankings alone;
  n holes are allocated by each stratum's weight (1 / log2(rank + 1), halved for ``both``), at
  least one a stratum while n allows, drawn uniformly within each with ``random.Random(seed)`` and
  shuffled, so any first part of it is a stratified sample too.
* :func:`estimate` -- relevance modelled by a logistic regression on a hole's side and log rank
  over every judged sampled hole, with a normal prior (:data:`PRIOR_SCALES`); :data:`IMPUTATIONS`
  draws from its posterior's normal approximation make each unjudged hole relevant with the chance
  they give it; the estimate is the mean difference of the means, its 95% interval their 2.5th and
  97.5th percentiles (``benchmarks/verdict_replay.py`` checks the coverage).
"""

from __future__ import annotations

import functools
import math
import random
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import NamedTuple

import numpy as np

from ptah.core.gate_parts import HolesEstimate, HolesStratum
from ptah.core.judged import high_grades
from ptah.core.measures import Measure, MeasureKind, checked
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
        scores = _Scores(
            measure, self.k, (self.candidate, self.reference), self.grades, relevant_holes
        )
        if not scores.relevant:
            return None
        after, before = scores.values(relevant_holes)
        return after - before

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


class _Scores:
    """A case's rankings measured with sets of its holes relevant at its highest grade: what
    ``measure.score(ranking, high_grades(grades, chosen), k)`` gives for each, the rankings and the
    grades checked once and the measure looked up once. No ``relevant`` key: the measure is N/A."""

    def __init__(
        self,
        measure: Measure,
        k: int,
        rankings: Sequence[Sequence[str]],
        grades: Mapping[str, float],
        holes: Sequence[str],
    ) -> None:
        self.score = measure.kind.score
        self.depth = measure.depth(k)
        self.tops, self.relevant = checked(rankings, grades, self.depth)
        self.grades = grades
        self.high = max((grade for grade in grades.values() if grade > 0), default=0.0)
        # a hole that is also a graded key keeps its place among the grades, as in high_grades
        self.apart = grades.keys().isdisjoint(holes)

    def values(self, chosen: Sequence[str]) -> list[float]:
        """Each ranking's value with the ``chosen`` holes relevant."""
        relevant = self.with_relevant(chosen)
        return [self.score(top, relevant, self.depth) for top in self.tops]

    def first(self, chosen: Sequence[str]) -> float:
        """The first ranking's value with the ``chosen`` holes relevant."""
        return self.score(self.tops[0], self.with_relevant(chosen), self.depth)

    def with_relevant(self, chosen: Sequence[str]) -> dict[str, float]:
        """The relevant grades with the ``chosen`` holes at the highest grade, in high_grades'
        order."""
        if not chosen:
            return self.relevant
        if self.apart:
            return self.relevant | dict.fromkeys(chosen, float(self.high))
        graded = high_grades(self.grades, chosen)
        return {key: float(grade) for key, grade in graded.items() if grade > 0}


def extremes(case: PairedCase, measure: Measure) -> tuple[list[float], list[float], bool] | None:
    """The least and the greatest difference with exactly 0, 1, ... of the case's holes relevant,
    and whether they are exact; None when the measure is N/A for the case."""
    scores = _Scores(measure, case.k, (case.candidate, case.reference), case.grades, case.holes)
    if not scores.relevant:
        return None

    def delta(chosen: Sequence[str]) -> float:
        after, before = scores.values(chosen)
        return after - before

    base = delta(())
    holes = case.holes
    structure = measure.kind.holes if measure.depth(case.k) <= case.k else None
    return _by_structure(
        holes, delta, base, structure, lambda: _first_extremes(holes, scores, base)
    )


def _by_structure(
    holes: Sequence[str],
    value: Callable[[Sequence[str]], float],
    base: float,
    structure: str | None,
    first: Callable[[], tuple[list[float], list[float], bool]],
) -> tuple[list[float], list[float], bool]:
    """The least and the greatest ``value`` with exactly 0, 1, ... of ``holes`` relevant, and
    whether they are exact, by the measure's ``structure`` (``first``: what a "first" measure's
    extremes are); ``base``, the value with none."""
    if not holes:
        return [base], [base], True
    if structure == "sum":
        return _sum_extremes(holes, value, base)
    if structure == "first":
        return first()
    if len(holes) <= BRUTE_FORCE_HOLES:
        return _enumerated(holes, value)
    return [base, -1.0], [base, 1.0], False


def _sum_extremes(
    holes: Sequence[str], value: Callable[[Sequence[str]], float], base: float
) -> tuple[list[float], list[float], bool]:
    # with j holes relevant the difference is (c + sum of w(h)) / D(j), w(h) the candidate's gain
    # less the reference's: the best j are the j of largest w, and one hole's difference orders them
    # by w
    own = {key: value([key]) for key in holes}
    alone = sorted(holes, key=lambda key: (own[key], key))
    lowest, highest = [base], [base]
    for j in range(1, len(alone) + 1):
        if j == 1:  # one hole: measured above
            low, high = own[alone[0]], own[alone[-1]]
        elif j == len(alone):  # every hole: one set, measured once
            low = high = value(alone)
        else:
            low, high = value(alone[:j]), value(alone[-j:])
        lowest.append(low)
        highest.append(high)
    return lowest, highest, True


def _first_extremes(
    holes: Sequence[str], scores: _Scores, base: float
) -> tuple[list[float], list[float], bool]:
    # each run's value is the largest of its base value and each relevant hole's own value
    after, before = (list(values) for values in zip(*(scores.values([key]) for key in holes)))
    after0, before0 = scores.values(())
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


def _enumerated(
    holes: Sequence[str], value: Callable[[Sequence[str]], float]
) -> tuple[list[float], list[float], bool]:
    lowest, highest = [], []
    for j in range(len(holes) + 1):
        found = [value(chosen) for chosen in combinations(holes, j)]
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
    :func:`extremes` is; else the whole [0, 1]. None when the measure is N/A for the case.

    Remembered for the last few thousand cases, keyed by what it reads (the measure's registered
    kind included): a report's table asks it for each case and again for each mean."""
    holes = tuple(dict.fromkeys(hole.key for hole in case.holes or ()))
    relevant = tuple(dict(case.relevant).items())
    return _completions(case.id, case.k, case.keys, relevant, holes, measure, measure.kind)


@functools.lru_cache(maxsize=8192)
def _completions(
    id: str,
    k: int,
    keys: tuple[str, ...],
    relevant: tuple[tuple[str, float], ...],
    holes: tuple[str, ...],
    measure: Measure,
    kind: MeasureKind,
) -> tuple[float, float] | None:
    scores = _Scores(measure, k, (keys,), dict(relevant), holes)
    if not scores.relevant:
        return None
    value = scores.first
    base = value(())
    structure = kind.holes if measure.depth(k) <= k else None
    lowest, highest, exact = _by_structure(
        holes,
        value,
        base,
        structure,
        # one ranking: the largest of its value and each relevant hole's own value
        lambda: ([base], [base, *(value([key]) for key in holes)], True),
    )
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


IMPUTATIONS = 2000
LEVEL = 0.95
SIDES = ("reference", "candidate", "both")
BANDS = (
    (1, "1"),
    (3, "2-3"),
    (6, "4-6"),
    (10, "7-10"),
    (None, "11+"),
)  # the better rank's band: up to its bound
STRATA = tuple(f"{side}/{band}" for side in SIDES for _, band in BANDS)


class Unit(NamedTuple):
    """A hole of a sample's population: its stratum, its weight in the allocation and its better
    rank."""

    stratum: str
    weight: float
    rank: int


def stratum(reference_rank: int | None, candidate_rank: int | None) -> str:
    """The stratum of a hole ranked ``reference_rank`` by the reference and ``candidate_rank`` by
    the candidate(s) (None: not in that side's top k; at least one is given)."""
    ranks = [rank for rank in (reference_rank, candidate_rank) if rank is not None]
    if not ranks:
        raise ValueError("a hole of a comparison is in one side's top k at least")
    side = "both" if len(ranks) == 2 else "reference" if candidate_rank is None else "candidate"
    best = min(ranks)
    band = next(name for bound, name in BANDS if bound is None or best <= bound)
    return f"{side}/{band}"


def weight(reference_rank: int | None, candidate_rank: int | None) -> float:
    """How much a hole can move a difference, for the allocation: 1 / log2(best rank + 1), half for
    ``both``."""
    best = min(rank for rank in (reference_rank, candidate_rank) if rank is not None)
    return (0.5 if reference_rank is not None and candidate_rank is not None else 1.0) / math.log2(
        best + 1
    )


def allocate(weights: Mapping[str, Sequence[float]], size: int) -> dict[str, int]:
    """How many of ``size`` holes each stratum gets (``weights``: each stratum's holes' weights): at
    least one a non-empty stratum while ``size`` allows, the rest in proportion to the strata's
    total weights (largest remainders), never more than a stratum holds."""
    sizes = {name: len(found) for name, found in weights.items() if found}
    size = min(size, sum(sizes.values()))
    given = dict.fromkeys(sizes, 0)
    for name in sorted(sizes, key=lambda name: -sum(weights[name]))[:size]:
        given[name] = 1
    while sum(given.values()) < size:
        open_ = [name for name in sizes if given[name] < sizes[name]]
        left = size - sum(given.values())
        total = sum(sum(weights[name]) for name in open_)
        shares = {name: left * sum(weights[name]) / total for name in open_}
        added = {name: min(sizes[name] - given[name], math.floor(shares[name])) for name in open_}
        if not any(added.values()):
            best = max(open_, key=lambda name: (shares[name] - math.floor(shares[name]), name))
            added[best] = 1
        for name, count in added.items():
            given[name] += count
    return given


def draw(units: Mapping[tuple[str, str], Unit], size: int, seed: int) -> list[tuple[str, str]]:
    """A stratified random sample of ``size`` of ``units`` ((case id, key) -> :class:`Unit`), in a
    shuffled order (module docs); reproducible from ``seed`` and the units alone."""
    members: dict[str, list[tuple[str, str]]] = {name: [] for name in STRATA}
    for pair, (name, *_) in units.items():
        members[name].append(pair)
    weights = {name: [units[pair][1] for pair in sorted(found)] for name, found in members.items()}
    given = allocate(weights, size)
    rng = random.Random(seed)
    drawn = [
        pair
        for name in STRATA
        if given.get(name)
        for pair in rng.sample(sorted(members[name]), given[name])
    ]
    rng.shuffle(drawn)
    return drawn


@dataclass(frozen=True)
class Rates:
    """What the judged samples say of each stratum: how many of its holes were judged, and how many
    relevant."""

    judged: Mapping[str, int]
    relevant: Mapping[str, int]
    observed: tuple[
        tuple[str, int, bool], ...
    ] = ()  # each judged hole: its side, its better rank, relevant

    def as_dict(self) -> dict:
        return {
            name: {"judged": self.judged.get(name, 0), "relevant": self.relevant.get(name, 0)}
            for name in STRATA
            if self.judged.get(name)
        }

    def strata(self) -> dict[str, HolesStratum]:
        """Each stratum with judged holes: a gate's ``holes.strata``."""
        return {
            name: HolesStratum(self.judged.get(name, 0), self.relevant.get(name, 0))
            for name in STRATA
            if self.judged.get(name)
        }

    def seen(self) -> float | None:
        """The relevant rate over every judged hole (None: none judged)."""
        total = sum(self.judged.values())
        return sum(self.relevant.values()) / total if total else None


NO_RATES = Rates({}, {})
PRIOR_SCALES = (
    2.0,
    1.0,
    1.0,
    1.0,
)  # the prior's standard deviations (logit scale) of the model's coefficients


def _features(side: str, rank: int) -> list[float]:
    """A hole's place in the relevance model: a common term, its side (the baseline's alone, the
    run's alone; both is the base) and the log of its better rank."""
    return [1.0, float(side == "reference"), float(side == "candidate"), math.log2(rank + 1) - 2.0]


def relevance_draws(rates: Rates, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` draws of the relevance model's coefficients: a logistic regression of a judged
    hole's relevance on its side and the log of its better rank, with a normal prior
    (:data:`PRIOR_SCALES`), from the normal approximation of its posterior (Laplace)."""
    size = len(PRIOR_SCALES)
    prior = np.diag([1 / scale**2 for scale in PRIOR_SCALES])
    coefficients = np.zeros(size)
    design = np.array([_features(side, rank) for side, rank, _ in rates.observed]).reshape(-1, size)
    outcome = np.array([float(found) for *_, found in rates.observed])
    curvature = prior
    for _ in range(50):
        chance = 1 / (1 + np.exp(-design @ coefficients))
        gradient = design.T @ (outcome - chance) - prior @ coefficients
        curvature = (design.T * (chance * (1 - chance))) @ design + prior
        step = np.linalg.solve(curvature, gradient)
        coefficients = coefficients + step
        if np.abs(step).max() < 1e-9:
            break
    return rng.multivariate_normal(coefficients, np.linalg.inv(curvature), size=count)


@dataclass(frozen=True)
class Estimate:
    """The estimated drop (reference - candidate) of a measure's mean under complete judgement, and
    its 95% interval."""

    drop: float
    low: float
    high: float

    def part(self) -> HolesEstimate:
        """A gate's ``holes.estimate``."""
        return HolesEstimate(self.drop, (self.low, self.high), LEVEL)


def ranks(case: PairedCase, key: str) -> tuple[int | None, int | None]:
    """Where the reference and the candidate rank ``key`` within the case's top k (None: not
    there)."""

    def rank(ranking: Sequence[str]) -> int | None:
        top = list(ranking[: case.k])
        return top.index(key) + 1 if key in top else None

    return rank(case.reference), rank(case.candidate)


def estimate(
    cases: Sequence[PairedCase], measure: Measure, rates: Rates, seed: int = 0
) -> Estimate | None:
    """The estimated drop of ``measure``'s mean over the cases where it is defined (module docs);
    None when no case is, or the measure is neither a "sum" nor a "first" one."""
    structure = (
        measure.kind.holes if all(measure.depth(case.k) <= case.k for case in cases) else None
    )
    defined = [case for case in cases if case.grades]
    if structure not in ("sum", "first") or not defined:
        return None
    rng = np.random.default_rng(seed)
    chances = relevance_draws(rates, IMPUTATIONS, rng)
    total = np.zeros(IMPUTATIONS)
    for case in defined:
        total += _imputed(case, measure, structure, chances, rng)
    drops = -total / len(defined)
    low, high = np.quantile(drops, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Estimate(float(drops.mean()), float(low), float(high))


def _imputed(
    case: PairedCase,
    measure: Measure,
    structure: str,
    chances: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """The case's difference (candidate - reference) in each imputation."""
    grades = dict(case.grades)
    depth = measure.depth(case.k)
    base = case.delta(measure)
    assert base is not None
    if not case.holes:
        return np.full(len(chances), base)
    placed = []
    for key in case.holes:
        found = ranks(case, key)
        side = stratum(*found).split("/")[0]
        placed.append(_features(side, min(rank for rank in found if rank is not None)))
    odds = chances @ np.array(placed).T
    relevant = rng.random(odds.shape) < 1 / (1 + np.exp(-odds))
    if structure == "first":
        alone = np.array(
            [
                [measure.score(ranking, high_grades_of(grades, key), depth) for key in case.holes]
                for ranking in (case.candidate, case.reference)
            ]
        )
        after = np.maximum(
            measure.score(case.candidate, grades, depth) or 0.0, (relevant * alone[0]).max(axis=1)
        )
        before = np.maximum(
            measure.score(case.reference, grades, depth) or 0.0, (relevant * alone[1]).max(axis=1)
        )
        return after - before
    top = max(grades.values())
    after0, shared0 = measure.kind.split(case.candidate, grades, depth) or (0.0, 0.0)
    before0, _ = measure.kind.split(case.reference, grades, depth) or (0.0, 0.0)
    gains = np.array(
        [
            [
                (measure.kind.split(ranking, grades | {key: top}, depth) or (0.0, 0.0))[0] - start
                for key in case.holes
            ]
            for ranking, start in ((case.candidate, after0), (case.reference, before0))
        ]
    )
    denominators = np.array(
        [_denominator(measure, case, grades, count, top) for count in range(len(case.holes) + 1)]
    )
    found = relevant.sum(axis=1)
    return (after0 - before0 + relevant @ (gains[0] - gains[1])) / denominators[found]


def high_grades_of(grades: Mapping[str, float], key: str) -> dict[str, float]:
    return dict(grades) | {key: max(grades.values())}


def _denominator(
    measure: Measure, case: PairedCase, grades: Mapping[str, float], extra: int, grade: float
) -> float:
    """The shared denominator with ``extra`` more relevant keys at ``grade`` (keys no run
    returns)."""
    padded = dict(grades) | {f"\x00unranked {i}": grade for i in range(extra)}
    parts = measure.kind.split(case.reference, padded, measure.depth(case.k))
    assert parts is not None
    return parts[1]


def units_of(
    reference: Run | None, candidates: Sequence[Run], also: Iterable[tuple[str, str]] = ()
) -> dict[tuple[str, str], Unit]:
    """The population of a sample of holes: every hole of ``reference`` and ``candidates`` (and the
    pairs ``also``: judged since it was drawn), each with its stratum and weight from where the
    reference and the best of the candidates rank it in their top k; a pair neither ranks is left
    out."""
    where: dict[str, dict[str, list[int | None]]] = {}
    sides = [(0, reference)] if reference is not None else []
    sides += [(1, run) for run in candidates]
    wanted: set[tuple[str, str]] = set(also)
    for side, run in sides:
        for case in run.cases:
            ranked = where.setdefault(case.id, {})
            for rank, key in enumerate(case.keys[: case.k], start=1):
                found = ranked.setdefault(key, [None, None])
                current = found[side]
                found[side] = rank if current is None else min(current, rank)
            wanted.update((case.id, hole.key) for hole in case.holes or ())
    units = {}
    for case_id, key in wanted:
        ranks = where.get(case_id, {}).get(key)
        if ranks is not None and (ranks[0] is not None or ranks[1] is not None):
            best = min(rank for rank in ranks if rank is not None)
            units[(case_id, key)] = Unit(
                stratum(ranks[0], ranks[1]), weight(ranks[0], ranks[1]), best
            )
    return units
