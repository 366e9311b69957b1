"""Slices of a report -- each tag's cases measured, compared and gated on their own -- and power
planning: how many cases a corpus and each slice need to see a change (docs/slices.md).

A corpus's tags make slices (:meth:`ptah.core.corpus.Corpus.slices`), each with a digest over its
tag and cases. Each run keeps each slice's means, as the whole run's over the slice's cases; a
slice of fewer than :data:`MIN_CASES` cases is listed, not measured. A slice comparison is the
whole run's restricted to the slice's cases (paired bootstrap interval and sign-flip test per
measure); the tests of one comparison section -- every (run, slice, measure) -- are one family,
Holm-corrected (:func:`ptah.core.significance.holm_adjusted`) unless the request says
``correction: none``, each carrying its ``adjusted_p`` and whether it ``survives``. A baseline's
slice is compared only with the slice of the same digest; another is reported not comparable,
with why.

:func:`cases_needed` is the paired normal approximation over the per-case differences ``d_i =
candidate_i - reference_i`` with sample spread ``s``::

    n = ceil(((z(1 - alpha / 2) + z(power)) * s / delta) ** 2)

never below the smallest n at which the sign-flip test can reach p < alpha (2 / 2^n: 6 cases at
0.05); tests hold it within 10% of ``power`` by simulating that test. :func:`report_sample` takes
``s`` from the largest of a report's pairs (each later run with the first, or one run with the
baseline's reference run, cases not in ``cases_changed`` moving by 0), or, for one run alone,
``sqrt(2)`` times its per-case spread (two independent runs: errs high, and the plan says so). A
slice uses its own ``s``; with fewer than two values, or ``s`` = 0, it cannot say.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from types import MappingProxyType

from ptah.core.baseline import Evidence, compare, gates
from ptah.core.compared import Family, MeasureComparison, SliceComparison
from ptah.core.comparison import BETTER, WORSE, compare_pair, paired_differences
from ptah.core.corpus import Corpus, slice_digest
from ptah.core.errors import IncomparableBaseline, InputError
from ptah.core.gate_parts import GatePower
from ptah.core.measures import Measure
from ptah.core.parts import SliceMeans
from ptah.core.report import Gate, Report, Run, make_run
from ptah.core.report_parts import ListedSlice
from ptah.core.request import StatisticsSettings, gate_key
from ptah.core.significance import holm_adjusted

PAIRED, INDEPENDENT = "paired", "independent"


SMALLEST = 1e-6  # of a change, a power, an alpha: below it a quantile is 1.0 or a count overflows


def check_settings(delta: float, power: float, alpha: float) -> None:
    """``ValueError`` (a sentence) unless ``SMALLEST`` <= delta <= 1 and ``SMALLEST`` <= power,
    alpha <= 1 - ``SMALLEST``: the range in which every quantile and count :func:`cases_for_spread`
    takes is a finite number (alpha 1e-300 makes ``1 - alpha / 2`` equal 1, a change of 1e-300 makes
    the count overflow)."""
    for name, value, top in (
        ("the change to detect", delta, 1.0),
        ("power", power, 1 - SMALLEST),
        ("alpha", alpha, 1 - SMALLEST),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not SMALLEST <= value <= top
        ):
            raise ValueError(f"{name} must be from {SMALLEST:g} to {top:g}, not {value!r}")


def fewest_cases(alpha: float) -> int:
    """The smallest n whose sign-flip test can reach p < ``alpha``: 2 / 2^n < alpha."""
    n = 1
    while 2.0 ** (1 - n) >= alpha:
        n += 1
    return n


def cases_for_spread(spread: float, delta: float, power: float, alpha: float) -> int | None:
    """The cases needed when the paired differences have standard deviation ``spread`` (module
    docs); None when ``spread`` is 0 (nothing varies, nothing to plan) or not finite."""
    check_settings(delta, power, alpha)
    if not math.isfinite(spread) or spread <= 0:
        return None
    from statistics import NormalDist  # with fractions and decimal: 2 ms a process, asked rarely

    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)
    needed = math.ceil(
        round((z * spread / delta) ** 2, 9)
    )  # rounding: 16.000000000001 is 16 cases, not 17
    return max(needed, fewest_cases(alpha))


def spread(differences: Sequence[float]) -> float | None:
    """The sample standard deviation of ``differences``; None for fewer than two."""
    from statistics import stdev

    return stdev(differences) if len(differences) >= 2 else None


def cases_needed(
    differences: Sequence[float], delta: float, power: float, alpha: float
) -> int | None:
    """The cases needed to see a mean paired difference of ``delta`` with probability ``power`` at
    two-sided level ``alpha``, from the spread of the paired ``differences`` measured (module docs);
    None when it cannot say: fewer than two differences, or all equal. ``ValueError`` for a setting
    out of range."""
    check_settings(delta, power, alpha)
    found = spread(differences)
    return None if found is None else cases_for_spread(found, delta, power, alpha)


@dataclass(frozen=True)
class Sample:
    """What a report measured of one measure, for planning: per pairing, each case's paired
    difference (basis ``paired``), or the single run's per-case values (basis ``independent``);
    ``source`` says which, in words."""

    measure: str
    basis: str
    source: str
    values: tuple[
        Mapping[str, float], ...
    ]  # per pairing: case id -> difference (or value); undefined cases absent

    def spread(self, case_ids: Sequence[str]) -> tuple[int, float | None]:
        """Over ``case_ids``: how many cases have a value, and the spread of the paired differences
        (the largest over the pairings; sqrt(2) x the values' for the independent basis); None when
        it cannot say."""
        found: list[tuple[float, int]] = []
        count = 0
        for values in self.values:
            held = [values[case_id] for case_id in case_ids if case_id in values]
            count = max(count, len(held))
            deviation = spread(held)
            if deviation is not None:
                found.append((deviation, len(held)))
        if not found:
            return count, None
        deviation, count = max(found)
        return count, deviation * math.sqrt(2) if self.basis == INDEPENDENT else deviation


def report_sample(report: Report, measure: str) -> Sample:
    """The paired differences (or single-run values) of ``measure`` a report holds (module docs).
    ``KeyError`` when the report's first run does not carry the measure."""
    name = str(Measure.parse(measure))
    reference = report.runs[0]
    if name not in reference.means:
        raise KeyError(name)
    if len(report.runs) >= 2:
        pairings = [
            paired_differences(reference, run, name) for run in report.runs[1:] if name in run.means
        ]
        if pairings:
            others = ", ".join(run.name for run in report.runs[1:] if name in run.means)
            return Sample(
                name,
                PAIRED,
                f"paired differences of {others} against {reference.name}",
                tuple(pairings),
            )
    if len(report.runs) == 1 and report.comparisons:
        key = Measure.parse(name).key
        compared = report.comparisons[0]
        if key in compared.aggregates:
            moved = {case.id: case.metrics[key].delta for case in compared.cases_changed}
            differences = {
                case.id: delta
                for case in reference.cases
                if case.values.get(name) is not None
                and (delta := moved.get(case.id, 0.0)) is not None
            }
            baseline = compared.generation or "the baseline"
            return Sample(
                name,
                PAIRED,
                f"paired differences of {reference.name} against {baseline}",
                (differences,),
            )
    values = {
        case.id: value for case in reference.cases if (value := case.values.get(name)) is not None
    }
    return Sample(
        name,
        INDEPENDENT,
        f"{reference.name} alone has no pairs, so the spread is sqrt(2) x its per-case "
        "values', as for two independent runs (paired runs usually spread less, so these "
        "counts err high)",
        (values,),
    )


@dataclass(frozen=True)
class SlicePlan:
    """The plan for the whole corpus (``tag`` None) or one slice: cases with a value, their spread,
    and the cases needed (None: cannot say)."""

    tag: str | None
    digest: str
    cases: int
    spread: float | None
    needed: int | None

    @property
    def underpowered(self) -> bool:
        return self.needed is not None and self.cases < self.needed

    def as_dict(self) -> dict:
        return asdict(self) | {"underpowered": self.underpowered}


@dataclass(frozen=True)
class MeasurePlan:
    """One measure's plan: the change to detect, the settings, the basis, and the corpus's and each
    slice's plan."""

    measure: str
    delta: float
    power: float
    alpha: float
    basis: str
    source: str
    overall: SlicePlan
    slices: tuple[SlicePlan, ...]

    def as_dict(self) -> dict:
        return {
            "measure": self.measure,
            "delta": self.delta,
            "power": self.power,
            "alpha": self.alpha,
            "basis": self.basis,
            "source": self.source,
            "corpus": self.overall.as_dict(),
            "slices": [plan.as_dict() for plan in self.slices],
        }


def plan(corpus: Corpus, sample: Sample, delta: float, power: float, alpha: float) -> MeasurePlan:
    """The cases ``corpus`` and each of its slices need to see a change of ``delta`` in ``sample``'s
    measure."""
    check_settings(delta, power, alpha)

    def one(tag: str | None, digest: str, case_ids: list[str]) -> SlicePlan:
        count, deviation = sample.spread(case_ids)
        needed = (
            None
            if deviation is None or count < 2
            else cases_for_spread(deviation, delta, power, alpha)
        )
        return SlicePlan(tag, digest, count, deviation, needed)

    overall = one(None, corpus.digest, [case.id for case in corpus.cases])
    slices = tuple(
        one(tag, slice_digest(tag, cases), [case.id for case in cases])
        for tag, cases in corpus.slices().items()
    )
    return MeasurePlan(
        sample.measure,
        float(delta),
        float(power),
        float(alpha),
        sample.basis,
        sample.source,
        overall,
        slices,
    )


MIN_CASES = 2
MAX_TESTS = 10_000  # the tests one comparison section corrects: slices x measures x runs compared
POWER = 0.8  # the power a gate's note plans for (``ptah corpus plan --power`` asks for another)
CORRECTIONS = ("holm", "none")

Slices = Mapping[
    str, tuple[str, tuple[str, ...]]
]  # tag -> (slice digest, case ids in corpus order)


def corpus_slices(corpus: Corpus) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each tag's slice digest and case ids, tags in code point order."""
    return {
        tag: (slice_digest(tag, cases), tuple(case.id for case in cases))
        for tag, cases in corpus.slices().items()
    }


def check_tests(slices: Slices, measures: int, compared: int) -> None:
    """Refuse (exit 2), before any run is measured, a comparison whose family would hold more than
    :data:`MAX_TESTS` tests: each slice of :data:`MIN_CASES` cases or more, for each measure and run
    compared."""
    tested = sum(1 for _, ids in slices.values() if len(ids) >= MIN_CASES)
    tests = tested * measures * compared
    if tests > MAX_TESTS:
        raise InputError(
            f"the slices would make {tests:,} tests in one comparison ({tested:,} slices x {measures} "
            f"measures x {compared} runs compared), more than the limit of {MAX_TESTS:,}; compare fewer "
            "runs or measures, or use fewer tags"
        )


def listed(slices: Slices) -> dict[str, ListedSlice]:
    """The report's ``corpus.slices``: each tag's digest and case ids."""
    return {tag: ListedSlice(digest, tuple(ids)) for tag, (digest, ids) in slices.items()}


def sliced(run: Run, ids: Sequence[str]) -> Run:
    """``run`` over the cases ``ids`` names only, its means and counts made again from those
    cases."""
    wanted = set(
        ids
    )  # a set: a slice's cases found in one pass over the run's, not one scan of ids per case
    part = make_run(
        run.generation, run.search, [case for case in run.cases if case.id in wanted], run.measures
    )
    return replace(part, variant=run.variant)


def slice_means(run: Run, slices: Slices) -> Mapping[str, SliceMeans]:
    """The run's ``slices`` member: each slice's cases and, from :data:`MIN_CASES` cases, its means
    and judged@k."""
    found = {}
    for tag, (digest, ids) in slices.items():
        entry = SliceMeans(digest, len(ids), None, None)
        if len(ids) >= MIN_CASES:
            part = sliced(run, ids)
            means = {Measure.parse(name).key: mean for name, mean in part.means.items()}
            entry = replace(entry, means=MappingProxyType(means), judged=part.judged)
        found[tag] = entry
    return MappingProxyType(found)


def slice_comparisons(
    reference: Run,
    candidate: Run,
    slices: Slices,
    settings: StatisticsSettings,
    reference_slices: Mapping[str, ListedSlice] | None = None,
    paths: Evidence = Evidence(),
) -> dict[str, SliceComparison]:
    """Each slice's comparison of ``candidate`` with ``reference``: per measure the interval, test
    and finding, and the slice's cases now failing or worse on a measure. ``reference_slices`` (a
    baseline's ``corpus.slices``): a slice is compared only where the baseline holds one of the same
    digest. ``paths``: what a settling command names (:func:`ptah.core.comparison.compare_pair`)."""
    found = {}
    for tag, (digest, ids) in slices.items():
        if reference_slices is not None:
            theirs = reference_slices.get(tag)
            if theirs is None or theirs.digest != digest:
                why = (
                    "the baseline has no slice of this tag"
                    if theirs is None
                    else "the baseline's slice holds other cases (or other expectations)"
                )
                found[tag] = SliceComparison(digest, len(ids), False, why, None, ())
                continue
        if len(ids) < MIN_CASES:
            why = f"fewer than {MIN_CASES} cases"
            found[tag] = SliceComparison(digest, len(ids), False, why, None, ())
            continue
        compared = compare_pair(sliced(reference, ids), sliced(candidate, ids), settings, paths)
        failing = tuple(
            change.id
            for change in compared.cases_changed
            if not change.passed.candidate
            or any(
                metric.delta is not None and metric.delta < 0 for metric in change.metrics.values()
            )
        )
        found[tag] = SliceComparison(digest, len(ids), True, None, compared.measures, failing)
    return found


def correct(
    sections: Sequence[Mapping[str, SliceComparison]], correction: str, alpha: float
) -> tuple[list[dict[str, SliceComparison]], Family]:
    """Control the family of every slice test in ``sections`` (each a :func:`slice_comparisons`
    result): each section again with each measure's ``adjusted_p`` and ``survives``, and the
    ``family`` member the report keeps."""
    p_values = [None if test.test is None else test.test.p_value for test in _tests(sections)]
    adjusted = iter(holm_adjusted(p_values) if correction == "holm" else p_values)
    corrected = [
        {tag: _adjusted(entry, adjusted, alpha) for tag, entry in section.items()}
        for section in sections
    ]
    tested = sum(1 for p in p_values if p is not None)
    surviving = sum(1 for test in _tests(corrected) if test.survives)
    return corrected, Family(correction, alpha, tested, surviving)


def _tests(sections: Sequence[Mapping[str, SliceComparison]]) -> list[MeasureComparison]:
    """Every slice's comparison of each measure in ``sections``, in order."""
    return [
        measure
        for section in sections
        for entry in section.values()
        if entry.measures
        for measure in entry.measures.values()
    ]


def _adjusted(entry: SliceComparison, adjusted: Iterator, alpha: float) -> SliceComparison:
    """``entry`` with each measure's next adjusted p from ``adjusted`` (in the order
    :func:`correct` collects them) and whether its finding survives at ``alpha``."""
    if not entry.measures:
        return entry
    measures = {}
    for key, measure in entry.measures.items():
        p = next(adjusted)
        survives = p is not None and p < alpha and measure.finding in (BETTER, WORSE)
        measures[key] = replace(measure, adjusted_p=p, survives=survives)
    return replace(entry, measures=MappingProxyType(measures))


def slice_gates(
    run: Run,
    reference: Run,
    thresholds: Mapping[str, float],
    slices: Slices,
    reference_slices: Mapping[str, ListedSlice],
    baseline_path: str,
    evidence: Evidence = Evidence(),
) -> list[Gate]:
    """The drop gates of ``run``'s slices (``recall@billing``, ``nDCG@*``:
    :func:`ptah.core.request.gate_key`), each judged like a whole run's
    (:func:`ptah.core.baseline.gates`: the holes rules included) on the slice's cases against the
    same slice of the baseline's reference run, and named ``max-recall-drop@billing``.

    A slice named by its tag must be in the corpus, hold :data:`MIN_CASES` cases or more and be in
    the baseline with the same digest (else :class:`IncomparableBaseline`, exit 2). ``@*`` gates
    every slice of the baseline that held :data:`MIN_CASES` cases or more: tags are outside the
    corpus digest, so one the corpus no longer has, or whose cases changed (a retag), fails its gate
    naming the tag and the cases it held -- renaming tags never switches a gate off. A slice only
    the corpus has is left to the comparison (there is nothing to drop from).
    """
    found = []
    for key, threshold in thresholds.items():
        measure, tag = gate_key(key)
        if tag == "*":
            held = [
                each for each, entry in reference_slices.items() if len(entry.cases) >= MIN_CASES
            ]
        else:
            held = [tag or ""]
        for each in held:
            problem = _ungated(each, slices, reference_slices)
            if problem is not None:
                if tag != "*":
                    raise _ungated_error(key, problem, baseline_path)
                found.append(
                    Gate(
                        f"max-{measure.key}-drop@{each}",
                        run.name,
                        False,
                        _retagged(each, slices, reference_slices[each].cases),
                        threshold,
                    )
                )
                continue
            ids = slices[each][1]
            part = sliced(run, ids)
            theirs = sliced(reference, ids)
            whole = [
                gate
                for gate in gates(
                    part, compare(part, theirs), {str(measure): threshold}, evidence, theirs
                )
                if gate.is_drop_gate
            ]
            found += [replace(gate, name=f"{gate.name}@{each}") for gate in whole]
    return found


def _retagged(tag: str, slices: Slices, held: Sequence[str]) -> str:
    """Why the baseline's slice ``tag`` (its cases ``held``) fails an ``@*`` gate: the corpus lost
    or changed it."""
    cases = f"{len(held)} cases: {_some(held)}"
    if tag not in slices:
        now = f"no case of the corpus is tagged {tag} now"
    else:
        now = f"the corpus's slice {tag} holds other cases or expectations now ({_some(slices[tag][1])})"
    return (
        f"the baseline's slice {tag} held {cases}; {now}, and a slice the baseline holds stays gated: tag those "
        "cases as they were, or make a new baseline (ptah report rebaseline)"
    )


def _some(ids: Sequence[str], shown: int = 10) -> str:
    """``a, b, c`` -- at most ``shown`` ids, then how many more."""
    head = ", ".join(ids[:shown])
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown:,} more"


def _ungated_error(key: str, problem: str, baseline_path: str | None) -> IncomparableBaseline:
    """The drop gate ``key`` of one slice cannot be held against the baseline (exit 2)."""
    return IncomparableBaseline(
        lambda words: f"{words.option('max_drop', key)}: {problem} (the baseline {baseline_path})"
    )


def _ungated(tag: str, slices: Slices, reference_slices: Mapping[str, ListedSlice]) -> str | None:
    """Why the slice ``tag`` cannot be gated against the baseline; None when it can."""
    if tag not in slices:
        return f"no case of the corpus is tagged {tag}"
    digest, ids = slices[tag]
    if len(ids) < MIN_CASES:
        return f"the slice {tag} holds {len(ids)} case, fewer than {MIN_CASES}"
    theirs = reference_slices.get(tag)
    if theirs is None:
        return f"the baseline has no slice {tag}; make a new baseline with the corpus's tags"
    if theirs.digest != digest:
        return f"the baseline's slice {tag} holds other cases (or other expectations); make a new baseline"
    return None


def power_note(
    gate: Gate, run: Run, reference: Run, slices: Slices, alpha: float, power: float = POWER
) -> Gate:
    """``gate`` with its ``power`` member: the cases the corpus (or the gate's slice) needs to see a
    drop of its threshold with probability ``power`` at level ``alpha``, from the per-case
    differences the run measured against the baseline (:func:`cases_needed`), beside
    the cases it has. A note, never a verdict."""
    if not gate.is_drop_gate or not gate.threshold:
        return gate
    name, tag = gate.name, ""
    if not name.endswith("-drop"):  # max-MAP@10-drop@billing: a slice's gate
        name, _, tag = name.rpartition("@")
        if (
            tag not in slices or gate.drop is None
        ):  # a slice of the baseline the corpus lost: nothing measured
            return gate
    ids = set(slices[tag][1]) if tag else None  # a set: one lookup a case, not a scan of the slice
    measure = next(m for m in run.measures if f"max-{m.key}-drop" == name)
    differences = [
        difference
        for case_id, difference in paired_differences(reference, run, str(measure)).items()
        if ids is None or case_id in ids
    ]
    needed = cases_needed(differences, gate.threshold, power, alpha)
    has = len(differences)
    return replace(
        gate,
        power=GatePower(
            power=power,
            alpha=alpha,
            cases=has,
            needed=needed,
            underpowered=needed is not None and needed > has,
        ),
    )
