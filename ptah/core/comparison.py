"""Side by side: every run of a report against the reference (the first), case by case, with
significance.

:func:`compare_runs` makes a report's ``comparison`` section (typed as
:class:`ptah.core.side_by_side.Comparison`; its JSON: ``ptah/schemas/report.schema.json``). Per measure, a case is *paired* when both runs define it; the
candidate wins, ties or loses it on its value, and the interval and the test are
:mod:`ptah.core.significance`'s over the paired differences ``candidate - reference``. The finding
is ``better`` (``worse``) when their mean is above (below) zero and the test's p-value is below
``alpha``, else ``no clear difference``; it is ``inconclusive`` when holes that may plausibly be
relevant could change it, and ``settle`` then says how to settle it. How those holes are counted,
and why: docs/design.md ("Findings and their holes").
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from ptah.core.baseline import Evidence, sample_command
from ptah.core.compared import CostDelta, MeasureComparison, Settle
from ptah.core.estimate import PairedCase, extremes, settling_sample
from ptah.core.measures import Measure
from ptah.core.report import CaseResult, Run
from ptah.core.request import StatisticsSettings
from ptah.core.side_by_side import (
    Comparison,
    Flipped,
    PairCaseChange,
    PairComparison,
    PairPassed,
    PairValue,
    Statistics,
)
from ptah.core.significance import paired_bootstrap, sign_flip_test

BETTER, WORSE, UNCLEAR, INCONCLUSIVE = "better", "worse", "no clear difference", "inconclusive"


def settle(flips: int, plausible: int, runs: Sequence[Run], paths: Evidence) -> Settle:
    """How to settle a finding ``flips`` of the ``plausible`` holes could change: m
    (``flip_count``), U (``plausible``), the sample expected to settle it when none of it is
    relevant (every hole when no smaller one does) and the command that draws it, naming the paths
    of ``paths`` and every one of ``runs``."""
    size = settling_sample(plausible, flips) or plausible
    return Settle(flips, plausible, size, sample_command(runs, size, paths))


def compare_runs(
    runs: Sequence[Run],
    settings: StatisticsSettings = StatisticsSettings(),
    paths: Evidence = Evidence(),
) -> Comparison | None:
    """The ``comparison`` section: every run after the first against the first; None for a single
    run. ``paths``: the corpus and spec the settling commands name."""
    if len(runs) < 2:
        return None
    reference = runs[0]
    return Comparison(
        reference.name,
        Statistics.from_dict(settings.as_dict()),
        tuple(compare_pair(reference, run, settings, paths) for run in runs[1:]),
    )


def shared_measures(reference: Run, candidate: Run) -> list[Measure]:
    """The measures both runs carry, in the candidate's order."""
    return [m for m in candidate.measures if str(m) in reference.means]


def compare_pair(
    reference: Run,
    candidate: Run,
    settings: StatisticsSettings = StatisticsSettings(),
    paths: Evidence = Evidence(),
) -> PairComparison:
    """One candidate run against the reference run, paired by case id, the changed cases flips
    first; ``paths``: what the settling command names (a baseline's path makes it draw from the
    baseline's reference run, not ``reference``)."""
    sides = [candidate] if paths.baseline_path else [reference, candidate]
    theirs = {case.id: case for case in reference.cases}
    pairs = [(theirs[case.id], case) for case in candidate.cases if case.id in theirs]
    measures = shared_measures(reference, candidate)
    changed = [
        change
        for before, after in pairs
        if (change := _case_change(before, after, measures)) is not None
    ]
    changed.sort(key=lambda change: not change.flipped)  # stable: flips first, then corpus order
    return PairComparison(
        candidate.name,
        candidate.search.channel,
        MappingProxyType(
            {
                m.key: _measure(str(m), reference, candidate, pairs, settings, sides, paths)
                for m in measures
            }
        ),
        Flipped(
            now_failing=sum(1 for c in changed if c.flipped and not c.passed.candidate),
            now_passing=sum(1 for c in changed if c.flipped and c.passed.candidate),
        ),
        _cost(reference, candidate),
        tuple(changed),
    )


def _cost(reference: Run, candidate: Run) -> CostDelta | None:
    """``cost``: the candidate's time per query minus the reference's (p50, p95 ms), when both were
    timed."""
    before, after = reference.cost, candidate.cost
    if before is None or after is None or before.p50_ms is None or after.p50_ms is None:
        return None
    return CostDelta(after.p50_ms - before.p50_ms, after.p95_ms - before.p95_ms)  # type: ignore[operator]


def _measure(
    name: str,
    reference: Run,
    candidate: Run,
    pairs,
    settings: StatisticsSettings,
    sides: Sequence[Run],
    paths: Evidence,
) -> MeasureComparison:
    """One measure's entry: both means and their delta, wins, ties, losses, the interval, the
    test, the finding (and the one on the judged values alone) and the holes; ``sides`` and
    ``paths``: the runs and paths its settling command names."""
    differences = list(paired_differences(reference, candidate, name).values())
    wins, losses = sum(1 for d in differences if d > 0), sum(1 for d in differences if d < 0)
    old_mean = reference.means[name].value
    new_mean = candidate.means[name].value
    interval = paired_bootstrap(differences, settings.resamples, settings.seed, settings.level)
    test = sign_flip_test(differences, settings.resamples, settings.seed, settings.exact_limit)
    judged = _finding(differences, test.p_value if test else None, settings.alpha)
    paired = [pair for pair in pairs if all(case.values[name] is not None for case in pair)]
    unknown = any(
        case.holes is None for pair in pairs for case in pair
    )  # read from a ptah-report@1
    both = [] if unknown else [PairedCase.of(before, after) for before, after in paired]
    holes = sum(len(case.holes) for case in both)  # either run's, each once, over the paired cases
    flips = _flips(name, both, judged, settings) if holes else None
    return MeasureComparison(
        reference=old_mean,
        candidate=new_mean,
        delta=None if old_mean is None or new_mean is None else new_mean - old_mean,
        cases=len(differences),
        wins=wins,
        ties=len(differences) - wins - losses,
        losses=losses,
        undefined=len(pairs) - len(differences),
        interval=interval,
        test=test,
        finding=judged if flips is None else INCONCLUSIVE,
        judged=judged,
        settle=None if flips is None else settle(flips, holes, sides, paths),
        holes=holes,
    )


def _flips(
    name: str, paired: Sequence[PairedCase], finding: str, settings: StatisticsSettings
) -> int | None:
    """The fewest holes found that, taken relevant, change ``finding``: the candidate's (towards
    ``better``) unless it is ``better``, the reference's (towards ``worse``) unless it is ``worse``;
    None when none found. Greedy, so an upper bound of the least. ``paired``: the cases both runs
    define the measure on, with the holes of either."""
    found = []
    if finding != BETTER:  # holes that lift the candidate over the reference
        found.append(_flip_way(name, paired, True, finding, settings))
    if finding != WORSE:  # holes that lift the reference over the candidate
        found.append(_flip_way(name, paired, False, finding, settings))
    counts = [count for count in found if count is not None]
    return min(counts) if counts else None


def _flip_way(
    name: str, paired: Sequence[PairedCase], up: bool, finding: str, settings: StatisticsSettings
) -> int | None:
    """Take holes relevant one at a time, each lifting both runs that return it, the greatest move
    of a case's difference (candidate - reference) ``up`` (or down) first, and return the fewest
    that change the finding (by bisection over that order)."""
    measure = Measure.parse(name)
    curves = []
    for case in paired:
        found = extremes(case, measure)
        curves.append(
            [case.delta(measure) or 0.0] if found is None else (found[1] if up else found[0])
        )
    steps = [
        (abs(curve[j] - curve[j - 1]), index, j)
        for index, curve in enumerate(curves)
        for j in range(1, len(curve))
        if (curve[j] > curve[j - 1]) == up and curve[j] != curve[j - 1]
    ]
    steps.sort(key=lambda step: -step[0])

    def changed(taken: int) -> bool:
        lifted: dict[int, int] = {}
        for _, index, j in steps[:taken]:
            lifted[index] = max(lifted.get(index, 0), j)
        differences = [curve[lifted.get(index, 0)] for index, curve in enumerate(curves)]
        test = sign_flip_test(differences, settings.resamples, settings.seed, settings.exact_limit)
        return _finding(differences, test.p_value if test else None, settings.alpha) != finding

    if not steps or not changed(len(steps)):
        return None
    least = 1 + bisect_left(
        range(1, len(steps)), True, key=changed
    )  # changed(len(steps)) is, as seen above
    taken: dict[int, int] = {}
    for _, index, j in steps[:least]:
        taken[index] = max(taken.get(index, 0), j)
    return sum(taken.values())  # holes: the deepest prefix taken in each case


def _finding(differences: list[float], p_value: float | None, alpha: float) -> str:
    if p_value is None or p_value >= alpha:
        return UNCLEAR
    total = math.fsum(differences)
    return BETTER if total > 0 else WORSE if total < 0 else UNCLEAR


def _case_change(
    before: CaseResult, after: CaseResult, measures: Sequence[Measure]
) -> PairCaseChange | None:
    """The case's per-measure values on both sides, or None when nothing about it changed."""
    metrics = {}
    for m in measures:
        old, new = before.values[str(m)], after.values[str(m)]
        metrics[m.key] = PairValue(old, new, None if old is None or new is None else new - old)
    flipped = before.passed != after.passed
    if not flipped and all(m.reference == m.candidate for m in metrics.values()):
        return None
    return PairCaseChange(
        after.id, PairPassed(before.passed, after.passed), flipped, MappingProxyType(metrics)
    )


def paired_differences(reference: Run, candidate: Run, name: str) -> dict[str, float]:
    """Each candidate case's ``name`` value minus the reference's (by case id), in the candidate's
    order, over the cases both runs define it on."""
    theirs = {case.id: case.values.get(name) for case in reference.cases}
    return {
        case.id: new - old
        for case in candidate.cases
        if (new := case.values.get(name)) is not None and (old := theirs.get(case.id)) is not None
    }


def case_deltas(reference: Run, candidate: Run, measure: str) -> list[tuple[str, float | None]]:
    """Every case of the candidate in corpus order with its ``measure`` delta against the reference
    (None when undefined on either side or the reference lacks the case)."""
    found = paired_differences(reference, candidate, str(Measure.parse(measure)))
    return [(case.id, found.get(case.id)) for case in candidate.cases]


def against_baseline(
    baseline_run: Run,
    run: Run,
    settings: StatisticsSettings = StatisticsSettings(),
    paths: Evidence = Evidence(),
) -> Mapping[str, MeasureComparison]:
    """The per-measure statistics of ``run`` against a baseline report's reference run (as in
    :func:`compare_pair`'s ``measures``), over the measures both carry; ``paths`` names the
    baseline."""
    return compare_pair(baseline_run, run, settings, paths).measures
