"""Baselines and gates: a report compared with an earlier one, re-scored under the current corpus,
and the verdict.

A baseline is comparable with a corpus when their digests match or they differ in judgements
alone (the same case ids, queries and depths: :func:`difference`); otherwise
:func:`check_comparable` raises ``IncomparableBaseline``. A run's case ids must be exactly its
corpus's (:func:`check_cases`), or a baseline cut down to its worst cases would pass. Each run is
compared with the baseline's *reference* run, its first.

A gate never reads the numbers the file holds: :func:`rescore` measures each stored ranking again
with the loop every fresh run uses (:func:`ptah.core.report.measure_case`), under the current
corpus and judgement record (docs/holes.md, "A new baseline after the corpus changed"). A
fixed-depth measure deeper than a case's k keeps its stored value, raised to the kept top k's
where higher; a missed required key keeps its stored rank, one required since reads "not in the
top k".

Gates, each a :class:`~ptah.core.report.Gate`:

* ``required`` -- every required key of every case is in its top k; with a baseline, every one the
  baseline found (a key it missed too is a *known miss*, reported with both ranks);
* ``forbidden`` -- no forbidden key appears in any top k;
* ``max-<measure>-drop`` (with a baseline) -- fails when ``baseline mean - current mean >
  threshold`` (absolute, 0 <= X <= 1, with 1e-12 of noise allowed, so a drop of exactly X passes);
  a mean N/A on either side fails. *Inconclusive* (verdict ``inconclusive``, exit 4, unless
  another gate fails) when it fails on the current mean and passes on its high bound: the holes
  decide it (:mod:`ptah.core.judged`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from ptah.core.calibration import ModelJudge
from ptah.core.compared import (
    BaselineCaseChange,
    BaselineComparison,
    BaselineMean,
    BaselinePassed,
    BaselineValue,
    MeasureComparison,
)
from ptah.core.corpus import Case, Corpus, slice_digest
from ptah.core.errors import IncomparableBaseline, ReportError, capital
from ptah.core.estimate import (
    NO_RATES,
    Estimate,
    Rates,
    estimate,
    flip_count,
    paired_cases,
    upper_relevant,
)
from ptah.core.gate_parts import GateHoles, HolesSample, JudgeAccount
from ptah.core.measures import Measure
from ptah.core.provenance import provenance
from ptah.core.ranking import Ties
from ptah.core.report import (
    REPORT_FORMATS,
    CaseResult,
    Gate,
    KnownMiss,
    Report,
    Run,
    counted,
    make_run,
    measure_case,
)
from ptah.core.report_parts import Rescoring
from ptah.core.request import gate_key
from ptah.core.significance import p_value_phrase

NOISE = 1e-12  # a recomputed value this close to the stored one is the same value


@dataclass(frozen=True)
class Rescored:
    """A baseline measured again (:func:`rescore`): the report with its runs re-measured, the digest
    it measured, the judgements added and changed since (over every run's cases), and the cases
    whose values or verdict differ from what the file stored."""

    report: Report
    measured: str
    added: int
    changed: int
    cases_changed: int

    @property
    def judged_since(self) -> bool:
        """Whether the judgements differ from those the baseline measured under: the corpus's digest
        (which then differs in judgements alone), or a judgement of its record that the baseline's
        top k did not have."""
        return self.measured != self.report.corpus.digest or bool(self.added or self.changed)

    def entry(self) -> Rescoring | None:
        """The report's ``baseline.rescored`` member; None when the file's numbers stand as they
        were."""
        if not self.judged_since and not self.cases_changed:
            return None
        return Rescoring(
            judgements_added=self.added,
            judgements_changed=self.changed,
            cases_changed=self.cases_changed,
            judged_since=self.judged_since,
        )


def difference(corpus: Corpus, baseline: Report) -> str | None:
    """How the baseline's cases differ from ``corpus``'s beyond their judgements: the first case
    missing on either side, asking another query or looking to another depth; None when they differ
    in judgements alone."""
    cases = {case.id: case for case in corpus.cases}
    for run in baseline.runs:
        for stored in run.cases:
            case = cases.get(stored.id)
            if case is None:
                return f'its case "{stored.id}" is not in the corpus'
            if stored.query != case.query:
                return f'case "{stored.id}" asks another query now'
            if stored.k != case.k:
                return f'case "{stored.id}" looked {stored.k} deep and looks {case.k} deep now'
        held = {stored.id for stored in run.cases}
        for case_id in cases:
            if case_id not in held:
                return f'case "{case_id}" of the corpus is not in it'
    return None


def rescore(corpus: Corpus, baseline: Report) -> Rescored:
    """``baseline`` with every run re-measured from its stored rankings under ``corpus`` and its
    judgement record (module docs), its corpus member saying ``corpus``'s digest and each slice's
    digest over the same cases now. The baseline holds exactly ``corpus``'s cases
    (:func:`difference` is None)."""
    cases = {case.id: case for case in corpus.cases}
    runs = tuple(rescore_run(cases, run) for run in baseline.runs)
    added: set[tuple[str, str]] = set()
    changed: set[tuple[str, str]] = set()
    for run in baseline.runs:
        for stored in run.cases:
            new, regraded = judgement_changes(cases[stored.id], stored)
            added |= {(stored.id, key) for key in new}
            changed |= {(stored.id, key) for key in regraded}
    differing = sum(
        1
        for before, after in zip(baseline.runs, runs)
        for old, new in zip(before.cases, after.cases)
        if _differs(old, new)
    )
    slices = {
        tag: replace(entry, digest=slice_digest(tag, [cases[case_id] for case_id in entry.cases]))
        if all(case_id in cases for case_id in entry.cases)
        else entry
        for tag, entry in (baseline.corpus.slices or {}).items()
    }
    described = replace(
        baseline.corpus,
        digest=corpus.digest,
        slices=MappingProxyType(slices) if slices else baseline.corpus.slices,
    )
    report = replace(baseline, runs=runs, corpus=described)
    return Rescored(report, baseline.corpus.digest, len(added), len(changed), differing)


def rescore_run(cases: Mapping[str, Case], run: Run) -> Run:
    """``run`` re-measured from its stored rankings: every case by :func:`rescore_case`, its means
    and counts made again; what it describes (generation, search, variant, cost) kept as written."""
    results = [rescore_case(cases[stored.id], stored, run.measures) for stored in run.cases]
    made = make_run(run.generation, run.search, results, run.measures, run.ann)
    return replace(made, variant=run.variant, cost=run.cost, slices=run.slices)


def rescore_case(case: Case, stored: CaseResult, measures: Sequence[Measure]) -> CaseResult:
    """The stored case measured again on its stored ranking under ``case`` (its grades and judged
    keys now): its values, highs, holes, judged@k, misses and hits; ties and the index comparison
    kept as written."""
    ties = Ties(stored.ties.cutoff_score, stored.ties.tied_outside, stored.ties.expected_tied)
    ranked = [(result.key, result.score) for result in stored.ranking]
    result = measure_case(case, ranked, measures=measures, searched=case.k, ties=ties)
    placed = {miss.key: miss for miss in stored.missed}
    values, highs = dict(result.values), dict(result.highs or {})
    if len(ranked) >= case.k:  # the ranking was cut at k: a measure looking deeper lacks its rows
        for m in measures:
            name, before = str(m), stored.values.get(str(m))
            now = values[name]
            if m.depth(case.k) > case.k and before is not None and now is not None:
                values[name] = larger = max(now, before)
                highs[name] = max(highs.get(name) or 0.0, larger)
    return replace(
        result,
        values=MappingProxyType(values),
        highs=MappingProxyType(highs),
        ann=stored.ann,
        missed=tuple(placed.get(miss.key, miss) for miss in result.missed),
    )


def judgement_changes(case: Case, stored: CaseResult) -> tuple[set[str], set[str]]:
    """The keys judged for ``case`` now that the stored case did not judge (as far as it tells: the
    keys it names, and its top k less its holes), and those whose grade or role (required,
    forbidden) changed since. A key the record judges outside the stored top k is left out: no
    number of the baseline depends on it."""
    grades = dict(stored.relevant)
    named = set(grades) | set(stored.required) | set(stored.forbidden)
    known = named | (
        set(stored.keys) - {hole.key for hole in stored.holes}
        if stored.holes is not None
        else set()
    )
    now = case.expected_keys() | (case.judged & set(stored.keys))
    added = set(now - known)
    changed = {
        key
        for key in named
        if (grades.get(key), key in stored.required, key in stored.forbidden)
        != (case.relevant.get(key), key in case.required, key in case.forbidden)
    }
    return added, changed


def _differs(old: CaseResult, new: CaseResult) -> bool:
    """Whether a re-measured case's values or verdict differ from what the file stored."""
    if old.passed != new.passed or set(old.values) != set(new.values):
        return True
    for name, value in new.values.items():
        before = old.values[name]
        if before is None or value is None:
            if (before is None) != (value is None):
                return True
        elif not math.isclose(before, value, abs_tol=NOISE):
            return True
    return False


FLOAT_NOISE = 1e-12
MAX_CASES_NAMED = 5


def check_report_format(document: object, path: str) -> dict:
    """Refuse a parsed JSON document that is not an object whose ``format`` is ``ptah-report@1`` or
    ``@2``."""
    if not isinstance(document, dict):
        raise ReportError(f"{path}: not a ptah report (the top level is not a JSON object)")
    found = document.get("format")
    if found not in REPORT_FORMATS:
        shown = (
            repr(found)
            if not isinstance(found, str) or len(found) <= 40
            else f"a text of {len(found)} characters"
        )
        expected = " or ".join(repr(f) for f in REPORT_FORMATS)
        raise ReportError(
            f"{path}: format is {shown}, not {expected}; pass a report that ptah wrote"
        )
    return document


def check_comparable(
    corpus: Corpus,
    baseline: Report,
    path: str,
    corpus_path: str | None = None,
    spec_path: str | None = None,
) -> None:
    """The baseline at ``path`` measured ``corpus``, or one that differs from it in judgements alone
    (the same case ids, queries and depths: :func:`difference`);
    :class:`IncomparableBaseline` (exit 2) naming both digests, how they differ and the rebaseline
    command with ``corpus_path`` (``corpus``'s path) and ``spec_path`` (the spec the evaluation
    used) otherwise."""
    theirs = baseline.corpus.digest
    if theirs == corpus.digest:
        return
    why = difference(corpus, baseline)
    if why is None:
        return
    again = corpus_path or corpus.path or "CORPUS"
    raise IncomparableBaseline(
        lambda words: (
            f"the baseline {path} measured a different corpus (digest {theirs}); this corpus is "
            f"{corpus.digest}, and they differ in more than judgements: {why}. "
            f"{capital(words.rebaseline(path, again, spec_path))}, or evaluate the corpus it was "
            "made with."
        )
    )


def check_cases(expected: Sequence[str], runs: Sequence[Run], path: str, corpus: str) -> None:
    """Every one of ``runs`` (of the report at ``path``) holds exactly the cases ``expected``
    (``corpus``'s ids); :class:`IncomparableBaseline` (exit 2) naming the first missing and the
    first extra id otherwise."""
    wanted = set(expected)
    for run in runs:
        ids = [case.id for case in run.cases]
        held = set(ids)
        missing = [case_id for case_id in expected if case_id not in held]
        extra = [case_id for case_id in ids if case_id not in wanted]
        if not missing and not extra:
            continue
        said = []
        if missing:
            said.append(f'lacks case "{missing[0]}" of {corpus}' + _more(len(missing) - 1))
        if extra:
            said.append(f'holds case "{extra[0]}", which {corpus} does not' + _more(len(extra) - 1))
        raise IncomparableBaseline(
            f"{path}: run {run.name} {' and '.join(said)}; a report's cases are exactly its corpus's, so it cannot "
            "be compared case by case"
        )


def _more(count: int) -> str:
    return f" ({count:,} more)" if count else ""


def check_measures(baseline: Report, thresholds: Mapping[str, float], path: str) -> None:
    """A drop gate needs its measure on the baseline's reference run: say how to get it, or refuse
    (exit 2)."""
    run = baseline.runs[0]
    for gated in thresholds:
        name = str(gate_key(gated)[0])
        if name not in run.means:
            raise IncomparableBaseline(
                f"the baseline {path} has no {name} to measure a drop against; "
                f"write a new baseline with the measure {name} requested"
            )


def _delta(current: float | None, baseline: float | None) -> float | None:
    if current is None or baseline is None:
        return None
    return current - baseline


def compare(run: Run, baseline_run: Run) -> BaselineComparison:
    """Deltas (current - baseline) of every mean both carry, and every case whose measures or
    verdict changed (those that flipped between pass and fail first). ``current_high`` is the
    current mean's high bound (null when unknown). ``against`` names ``run``; the paired
    ``significance`` and the baseline's holes lost are the caller's to add."""
    measures = [m for m in run.measures if str(m) in baseline_run.means]
    aggregates = {}
    for m in measures:
        now, before = run.means[str(m)].value, baseline_run.means[str(m)].value
        aggregates[m.key] = BaselineMean(before, now, _delta(now, before), run.means[str(m)].high)
    before_cases = {case.id: case for case in baseline_run.cases}
    changed: list[BaselineCaseChange] = []
    for case in run.cases:
        old = before_cases.get(case.id)
        if old is None:
            continue
        deltas = {
            m.key: BaselineValue(
                old.values[str(m)],
                case.values[str(m)],
                _delta(case.values[str(m)], old.values[str(m)]),
            )
            for m in measures
        }
        if any(d.baseline != d.current for d in deltas.values()) or old.passed != case.passed:
            changed.append(
                BaselineCaseChange(
                    case.id, BaselinePassed(old.passed, case.passed), MappingProxyType(deltas)
                )
            )
    # cases that flipped between pass and fail first, then file order
    changed.sort(key=lambda c: not c.flipped)
    return BaselineComparison(
        generation=baseline_run.generation.name,
        identity=baseline_run.generation.identity,
        # another generation identity, another source snapshot
        provenance=provenance(run, baseline_run),
        aggregates=MappingProxyType(aggregates),
        cases_changed=tuple(changed),
        against=run.name,
    )


def movement(drop: float) -> str:
    """How a mean moved, said with one sign: ``dropped 0.0625``, ``rose 0.0625`` or
    ``unchanged``."""
    if abs(drop) <= FLOAT_NOISE:
        return "unchanged"
    shown = f"{abs(drop):.4f}"
    return ("dropped " if drop > 0 else "rose ") + (
        "less than 0.0001" if shown == "0.0000" else shown
    )


@dataclass(frozen=True)
class Evidence:
    """What a run's drop gates know of its holes beyond the two rankings, one value per run: the
    hole policy, the judged samples' counts per stratum (all samples: ``rates``; the latest:
    ``latest``, stratum -> (population, judged, relevant), for U), why other samples were not used,
    the model judges, and the paths the settling command names (None: the corpus has no file, the
    server's)."""

    policy: str = "bound"
    rates: Rates = NO_RATES
    latest: Mapping[str, tuple[int, int, int]] | None = None
    seed: int | None = None
    index: int | None = (
        None  # the latest sample's place in the judgement record (what calibrates a model judge)
    )
    samples: int = 0  # how many recorded samples the rates read
    ignored: tuple[str, ...] = ()
    judges: tuple[ModelJudge, ...] = ()
    corpus_path: str | None = None
    baseline_path: str | None = None
    spec_path: str | None = None


def required_gate(run: Run, reference: Run | None = None) -> Gate:
    """Every required key in its case's top k; against a baseline (``reference``, its reference
    run), every one the baseline found: a key its case's baseline missed too is a known miss,
    reported with both ranks and not failed on (docs/evaluating.md, "The numbers")."""
    required = run.required
    if not required.cases:
        return Gate("required", run.name, True, "no required keys: no case names one")
    cases = counted(required.cases, "case")
    if reference is None:
        return Gate(
            "required",
            run.name,
            required.failed == 0,
            f"{required.failed} of {cases} missed a required key",
        )
    before = {case.id: {miss.key: miss for miss in case.missed} for case in reference.cases}
    known, failed = [], 0
    for case in run.cases:
        theirs = before.get(case.id, {})
        known += [
            KnownMiss(
                case.id,
                miss.key,
                theirs[miss.key].rank,
                theirs[miss.key].where,
                miss.rank,
                miss.where,
            )
            for miss in case.missed
            if miss.key in theirs
        ]
        failed += any(miss.key not in theirs for miss in case.missed)
    if not known:
        return Gate("required", run.name, failed == 0, f"{failed} of {cases} missed a required key")
    shown = "; ".join(
        f'"{miss.key}" of case "{miss.case}" (baseline: {miss.baseline_where}; now: {miss.current_where})'
        for miss in known[:MAX_CASES_NAMED]
    )
    more = f" and {len(known) - MAX_CASES_NAMED} more" if len(known) > MAX_CASES_NAMED else ""
    misses = "1 known miss" if len(known) == 1 else f"{len(known):,} known misses"
    return Gate(
        "required",
        run.name,
        failed == 0,
        f"{failed} of {cases} missed a required key the baseline found; {misses}, which the baseline missed "
        f"too: {shown}{more}",
        known_misses=tuple(known),
    )


def gates(
    run: Run,
    comparison: BaselineComparison | None,
    thresholds: Mapping[str, float],
    evidence: Evidence = Evidence(),
    baseline_run: Run | None = None,
) -> list[Gate]:
    """The gate verdicts of one run (see the module docs); a drop gate with ``baseline_run`` in hand
    (and both runs listing their holes) is settled by the holes of both
    (:func:`_decided_by_holes`)."""
    forbidden = run.forbidden
    result = [
        required_gate(run, baseline_run),
        Gate(
            "forbidden",
            run.name,
            forbidden.leaking == 0,
            f"{forbidden.leaking} of {counted(forbidden.cases, 'case')} leaked a forbidden key"
            if forbidden.cases
            else "no forbidden keys: no case names one",
        ),
    ]
    both_listed = baseline_run is not None and all(
        case.holes is not None for case in (*run.cases, *baseline_run.cases)
    )
    for name, threshold in thresholds.items():
        measure = Measure.parse(name)
        entry = None if comparison is None else comparison.aggregates.get(measure.key)
        before, now, high = (
            (None, None, None)
            if entry is None
            else (entry.baseline, entry.current, entry.current_high)
        )
        drop_high, inconclusive, holes = None, False, None
        if before is None or now is None:
            passed, drop = False, None
            detail = f"{measure.label} is N/A on one side, so its drop cannot be measured"
        else:
            drop = before - now
            passed = drop <= threshold + FLOAT_NOISE
            detail = (
                f"{measure.label} {before:.4f} -> {now:.4f} ({movement(drop)}; a drop of {threshold:.4f} is "
                "allowed)"
            )
            if high is not None:
                drop_high = before - high
            if both_listed and run.cases:
                assert baseline_run is not None
                holes, passed = _decided_by_holes(
                    run, baseline_run, measure, threshold, passed, evidence
                )
                inconclusive = holes.inconclusive
                if inconclusive:
                    assert holes.settling_sample is not None
                    command = sample_command([run], holes.settling_sample, evidence)
                    holes = replace(holes, command=command)
                detail += "; " + _holes_sentence(run, holes, evidence)
            tested = (
                None
                if comparison is None or comparison.significance is None
                else comparison.significance.get(measure.key)
            )
            if not inconclusive and (said := _threshold_decides(drop, threshold, passed, tested)):
                detail += "; " + said
        result.append(
            Gate(
                f"max-{measure.key}-drop",
                run.name,
                passed,
                detail,
                threshold,
                drop,
                drop_high,
                inconclusive,
                holes,
            )
        )
    return result


def _threshold_decides(
    drop: float, threshold: float, passed: bool, tested: MeasureComparison | None
) -> str | None:
    """Which of the two a drop gate's reader sees decides it, where they disagree: the threshold,
    never the paired test (``tested``, the measure's significance entry) that the findings beside
    the gate report; None when the test's finding agrees with the gate (worse for a failure,
    anything else for a pass) or there is none."""
    if tested is None or tested.test is None:
        return None
    finding = tested.judged_finding
    if passed == (finding != "worse"):
        return None
    p = p_value_phrase(tested.test)
    if passed:
        return (
            f"the gate decides: a drop of {_shown(drop)} is within the {threshold:.4f} allowed, though the paired "
            f"test finds the run worse ({p}): a real drop no larger than the allowance"
        )
    return (
        f"the gate decides: a drop of {_shown(drop)} is more than the {threshold:.4f} allowed; the paired test "
        f"alone finds {'the run better' if finding == 'better' else 'no clear difference'} ({p})"
    )


def _decided_by_holes(
    run: Run,
    baseline_run: Run,
    measure: Measure,
    threshold: float,
    passes: bool,
    evidence: Evidence,
) -> tuple[GateHoles, bool]:
    """What the holes of both runs say of a drop gate that ``passes`` (or not) on its judged values
    (docs/holes.md): the gate's ``holes`` member (its command the caller's to add), and its verdict
    under holes."""
    cases = [case for case in paired_cases(baseline_run, run) if case.grades]
    pairs = [(case.id, key) for case in cases for key in case.holes]
    count = len(pairs)
    flips = flip_count(cases, measure, -threshold, up=not passes)
    plausible = _plausible_relevant(count, evidence.latest)
    accounts = [judge.entry(pairs, plausible) for judge in evidence.judges]
    used = [entry.plausible_relevant for entry in accounts if entry.plausible_relevant is not None]
    plausible = max(used) if used else plausible
    found = estimate(cases, measure, evidence.rates) if count else None
    exact_rule = flips.m is None or flips.m > plausible
    # the estimate may turn the judged values' verdict over only on two samples or more: one pilot's
    # view of the relevant rate is the likeliest to mislead it (replayed on CISI: one wrong pass of
    # 60 loops, after a pilot)
    within = (
        found is not None
        and found.high <= threshold + FLOAT_NOISE
        and (passes or evidence.samples >= 2)
    )
    beyond = (
        found is not None
        and found.low > threshold + FLOAT_NOISE
        and (not passes or evidence.samples >= 2)
    )
    if evidence.policy == "misses" or exact_rule:
        passed, inconclusive = passes, False
    elif within:
        passed, inconclusive = True, False
    elif beyond:
        passed, inconclusive = False, False
    else:
        passed, inconclusive = False, True
    latest = evidence.latest
    settle = _settling(count, flips.m, found, threshold, evidence.rates) if inconclusive else None
    decided = GateHoles(
        policy=evidence.policy,
        holes=count,
        flip_count=flips.m,
        flip_count_exact=flips.exact,
        direction="pass" if not passes else "fail",
        plausible_relevant=plausible,
        sample=None
        if latest is None
        else HolesSample(
            seed=evidence.seed,
            population=sum(counts[0] for counts in latest.values()),
            drawn=sum(counts[1] for counts in latest.values()),
            relevant=sum(counts[2] for counts in latest.values()),
        ),
        strata=evidence.rates.strata(),
        estimate=None if found is None else found.part(),
        inconclusive=inconclusive,
        samples_ignored=tuple(evidence.ignored),
        judges=tuple(accounts) if accounts else None,
        settling_sample=settle,
    )
    return decided, passed


def _plausible_relevant(count: int, latest: Mapping[str, tuple[int, int, int]] | None) -> int:
    """U: every hole, or the sum over the latest sample's strata of each one's exact one-sided bound
    (97.5% in all, shared equally between the strata: Bonferroni), never more than the holes."""
    if latest is None:
        return count
    alpha = (1, 40 * max(1, len(latest)))
    return min(
        count,
        sum(
            upper_relevant(population, judged, found, alpha)
            for population, judged, found in latest.values()
        ),
    )


PILOT = 20


def _settling(
    count: int, m: int | None, found: Estimate | None, threshold: float, rates: Rates
) -> int:
    """The sample expected to settle an inconclusive gate, from the relevant rate seen so far: the
    smaller of the sample whose bound on the relevant holes falls below m at that rate and the one
    that narrows the estimate's interval to its distance from the threshold, and never more than as
    many again as judged so far (before any sample: a pilot of 2 x sqrt(holes), at least 20) nor
    than the holes."""
    judged = sum(rates.judged.values())
    seen = rates.seen()
    sizes = []
    if m is not None:
        rate = seen or 0.0
        sizes.append(
            next(
                (
                    n
                    for n in _sizes(count)
                    if upper_relevant(count, n, round(rate * n), (1, 40)) < m
                ),
                count,
            )
        )
    if found is not None and judged:
        half = (found.high - found.low) / 2
        margin = abs(found.drop - threshold)
        if margin > FLOAT_NOISE and half > 0:
            sizes.append(math.ceil(judged * ((half / margin) ** 2 - 1)) if half > margin else PILOT)
    # a step at a time: at most as many again as judged so far (before any sample, a pilot of 2 x
    # sqrt(holes), at least 20), so an estimate still unsure of the rate does not name every hole at
    # once
    sizes.append(max(PILOT, math.ceil(2 * math.sqrt(count)), judged))
    return max(1, min(count, *sizes))


def _sizes(count: int) -> list[int]:
    """The sample sizes tried, growing by a quarter each time, up to every hole."""
    sizes, size = [], 1
    while size < count:
        sizes.append(size)
        size = max(size + 1, math.ceil(size * 1.25))
    return [*sizes, count]


def spec_flag(path: str | None) -> str:
    """What a command a sentence names adds for the spec the work used: `` --spec PATH``; nothing
    for none (ptah.yaml of the working directory), so that the command runs as written."""
    return f" --spec {path}" if path else ""


def run_flags(run: Run) -> str:
    """The flags that make ``run`` again in ``ptah corpus holes`` and ``sample``: ``--variant NAME``
    for a variant's run, else ``-g NAME`` and, for a channel other than vector, ``--channel
    CHANNEL``."""
    if run.variant is not None:
        return f" --variant {run.variant.name}"
    channel = run.search.channel
    name = run.generation.text_of or run.generation.name or ""
    if channel != "vector" and name.startswith(f"{channel}:"):
        name = name[len(channel) + 1 :]  # hybrid:NAME is the hybrid channel over generation NAME
    return f" -g {name}" + (f" --channel {channel}" if channel != "vector" else "")


def _holes_sentence(run: Run, holes: GateHoles, evidence: Evidence) -> str:
    """What the holes of both runs do to a drop gate, and the one command that settles it when they
    decide it."""
    count, m, plausible = holes.holes, holes.flip_count, holes.plausible_relevant
    if holes.policy == "misses":
        return f"{counted(count, 'unjudged row')} of either run counted as not relevant (--holes misses)"
    if count == 0:
        return "every row in either run's top k is judged"
    way = "pass" if holes.direction == "pass" else "fail"
    rows = (
        "the only unjudged row of either run"
        if count == 1
        else f"the {count:,} unjudged rows of either run"
    )
    if m is None:
        said = (
            f"{rows} could not make it {way}"
            if count == 1
            else f"none of {rows} could make it {way}"
        )
    elif count == 1:
        said = (
            f"{rows} would make it {way} if relevant, and "
            f"{'it plausibly is not' if m > plausible else 'it may be'} ({_evidence(holes)})"
        )
    else:
        least = "" if holes.flip_count_exact else "at least "
        said = (
            f"{least}{m:,} of {rows} would have to be relevant to make it {way}, and "
            f"{'at most' if m > plausible else 'as many as'} {plausible:,} plausibly are ({_evidence(holes)})"
        )
    found = holes.estimate
    if found is not None:
        low, high = found.interval
        said += (
            f"; under complete judgement the drop is estimated at {_shown(found.drop)} "
            f"(95% interval {_shown(low)} to {_shown(high)})"
        )
    if not holes.inconclusive:
        return said
    return f"inconclusive: {said}; judge a random sample of both runs' holes to settle it: `{holes.command}`"


def _shown(value: float) -> str:
    """A drop to four places, never "-0.0000"."""
    shown = f"{value:.4f}"
    return "0.0000" if shown == "-0.0000" else shown


def sample_command(runs: Sequence[Run], size: int, evidence: Evidence) -> str:
    """The one command whose sample settles an inconclusive gate or finding: a stratified sample of
    the holes of ``runs`` (and of the baseline's reference run, when ``evidence`` names a
    baseline)."""
    corpus = evidence.corpus_path or "CORPUS"
    baseline = f" --baseline {evidence.baseline_path}" if evidence.baseline_path else ""
    flags = "".join(dict.fromkeys(run_flags(run) for run in runs))
    return f"ptah corpus sample {corpus} {size}{baseline}{flags}{spec_flag(evidence.spec_path)}"


def _evidence(holes: GateHoles) -> str:
    sample = holes.sample
    said = (
        "no random sample of them judged"
        if sample is None
        else f"bound from a random sample of {sample.drawn:,} of {sample.population:,} holes "
        f"with {sample.relevant:,} relevant"
    )
    return "; ".join([said, *(_judge_said(entry) for entry in holes.judges or ())])


def _judge_said(entry: JudgeAccount) -> str:
    """One model judge's part of a gate's evidence: its agreement with the person and what it did to
    U."""
    kappa = "undefined" if entry.kappa is None else f"{entry.kappa:.2f}"
    rates = "".join(
        f", {name.upper()} {rate:.2f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"
        for name, rate, bounds in (
            ("tpr", entry.tpr, entry.tpr_interval),
            ("tnr", entry.tnr, entry.tnr_interval),
        )
        if rate is not None and bounds is not None
    )
    cost = entry.cost
    spent = (
        ""
        if not cost
        else f", {int(cost.get('requests', 0)):,} requests"
        + (
            f" and {int(cost['server_prompt_tokens']):,} prompt tokens"
            if cost.get("server_prompt_tokens")
            else ""
        )
    )
    agreed = (
        f"model judge {entry.name} (kappa {kappa} on {entry.sampled:,} sampled holes{rates}{spent})"
    )
    if not entry.used:
        return f"{agreed} graded {entry.graded:,} of them but may not move it: {entry.why_not}"
    moved = entry.moved
    return (
        f"{agreed} graded {entry.graded:,} of them and puts it at {entry.plausible_relevant:,} "
        f"({'+' if moved > 0 else ''}{moved:,} from the sample alone)"
        if moved
        else f"{agreed} graded {entry.graded:,} of them and leaves it at {entry.plausible_relevant:,}"
    )
