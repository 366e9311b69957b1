"""The sentences of a report -- its verdict, each gate, each finding, its slices, a variant's
controls, a run's time per query -- built once for every format.

Each format only marks the words up: a value from a file or the source comes in quoted as the
format quotes it, or plain where the format escapes the whole sentence (HTML, XML). A finding's
sentence follows its finding, so it agrees with the cell beside it; an interval that excludes 0
with no finding of the test is "no clear difference", never "within noise". A finding between two
timed runs ends with the cost more a query ("..., +180.2 ms p50 and +190.1 ms p95 a query").

Of the slices (:mod:`ptah.core.slicing`): each slice's means per run (:func:`mean_text`: the
judged mean and the mean with every hole relevant where they differ, its denominator, judged@k;
one under :data:`ptah.core.slicing.MIN_CASES` cases is listed not measured); per comparison each
slice's tests (:func:`slice_tests`: delta, interval, p, adjusted p, survives), the slices not
compared and why, the cases now failing or worse, and the family line (:func:`family_sentence`:
"27 slice tests, Holm at alpha 0.05: 1 finding survives"). A drop gate's power note
(:func:`power_phrase`) is said wherever the gate is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from ptah.core.compared import (
    BaselineComparison,
    CostDelta,
    Family,
    Interval,
    MeasureComparison,
    Settle,
    SliceComparison,
)
from ptah.core.measures import Mean, Measure
from ptah.core.parts import Cost, RunVariant, SliceMeans, StageCost
from ptah.core.report import Gate, Report, Run, counted
from ptah.core.request import DEFAULT_LEVEL
from ptah.core.side_by_side import PairComparison
from ptah.core.significance import p_value_phrase, p_value_text
from ptah.core.slicing import MIN_CASES
from ptah.render.layout import bounded, milliseconds


class SliceTest(NamedTuple):
    """One slice's comparison on one measure, as the columns read."""

    tag: str
    cases: int
    key: str  # the measure's report key
    # the slice's comparison on the measure, with the family's adjusted_p and survives
    entry: MeasureComparison

    @property
    def label(self) -> str:
        return Measure.parse(self.key).label

    @property
    def adjusted(self) -> str:
        """The adjusted p as p reads (``~`` for a Monte Carlo test's), ``N/A`` without a test."""
        test, adjusted = self.entry.test, self.entry.adjusted_p
        return p_value_text(
            None if test is None or adjusted is None else replace(test, p_value=adjusted)
        )

    @property
    def survives(self) -> str:
        return "N/A" if self.entry.test is None else "yes" if self.entry.survives else "no"


# what a slice's mean a..b is, said once for every format
MEAN_RANGE = "a..b where the holes move it: judged and with every hole relevant, the smaller first"


def mean_text(mean: Mean | None) -> str:
    """A slice's mean with its bounds and its denominator: ``0.7500..0.8750 (4)``; ``N/A`` when not
    measured."""
    if mean is None:
        return "N/A"
    return f"{bounded(mean.value, mean.high)} ({mean.denominator})"


def measured(slices: Mapping[str, SliceMeans] | None) -> list[tuple[str, SliceMeans]]:
    """The slices of a run's ``slices`` member that have means, in the report's order (tags in code
    point order)."""
    return [(tag, entry) for tag, entry in (slices or {}).items() if entry.means is not None]


def unmeasured_phrase(
    slices: Mapping[str, SliceMeans] | None, quote: Callable[[object], str] = str
) -> str | None:
    """``not measured, fewer than 2 cases: estimates (1), taxes (1)``; None when every slice was
    measured."""
    small = [
        f"{quote(tag)} ({entry.cases})"
        for tag, entry in (slices or {}).items()
        if entry.means is None
    ]
    return f"not measured, fewer than {MIN_CASES} cases: " + ", ".join(small) if small else None


Slices = Mapping[str, SliceComparison]  # a comparison's slices, by tag


def slice_tests(slices: Slices | None) -> list[SliceTest]:
    """Every compared slice's test per measure, slice by slice."""
    return [
        SliceTest(tag, entry.cases, key, measure)
        for tag, entry in (slices or {}).items()
        if entry.measures
        for key, measure in entry.measures.items()
    ]


def not_compared(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """The slices not compared, a phrase per reason: ``estimates, taxes: fewer than 2 cases``."""
    why: dict[str | None, list[str]] = {}
    for tag, entry in (slices or {}).items():
        if not entry.comparable:
            why.setdefault(entry.why, []).append(quote(tag))
    return [f"{', '.join(tags)}: {reason}" for reason, tags in why.items()]


def failing_phrases(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """Each slice's cases now failing or worse on a measure: ``billing (3 of 4): stop-paying,
    pricing, plan-refund``."""
    return [
        f"{quote(tag)} ({len(entry.failing)} of {entry.cases}): "
        + ", ".join(map(quote, entry.failing))
        for tag, entry in (slices or {}).items()
        if entry.failing
    ]


def family_sentence(family: Family) -> str:
    """``27 slice tests, Holm at alpha 0.05: 1 finding survives``; without a correction, the
    findings at p < alpha."""
    tests, surviving, alpha = family.tests, family.surviving, f"{family.alpha:.4g}"
    found = counted(surviving, "finding")
    if family.correction == "holm":
        return f"{counted(tests, 'slice test')}, Holm at alpha {alpha}: {found} {'survives' if surviving == 1 else 'survive'}"
    return f"{counted(tests, 'slice test')}, no correction: {found} at p < {alpha}"


def survivors(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """The findings that survive the correction: ``billing nDCG -0.3208 worse``."""
    return [
        f"{quote(test.tag)} {test.label} {test.entry.delta:+.4f} {test.entry.finding}"
        for test in slice_tests(slices)
        if test.entry.survives
    ]


def baseline_family(report: Report) -> Family | None:
    """The family of the slice tests against the baseline (None without one, or without tags)."""
    return None if report.baseline is None else report.baseline.family


def family_lines(report: Report, quote: Callable[[object], str] = str) -> list[str]:
    """One line per family of slice tests: how many tests, the correction, and each finding that
    survives it: ``slices vs title-body: 27 slice tests, Holm at alpha 0.05: 1 finding survives
    (hybrid billing nDCG -0.3208 worse)``."""
    lines = []
    comparison = report.comparison
    if comparison is not None and comparison.family is not None:
        found = [
            f"{quote(candidate.run)} {found}"
            for candidate in comparison.candidates
            for found in survivors(candidate.slices, quote)
        ]
        lines.append(
            f"slices vs {quote(comparison.reference)}: {family_sentence(comparison.family)}"
            + (f" ({'; '.join(found)})" if found else "")
        )
    family = baseline_family(report)
    if family is not None:
        found = [
            f"{quote(each.against or '')} {found}"
            for each in report.comparisons
            for found in survivors(each.slices, quote)
        ]
        lines.append(
            f"slices vs the baseline: {family_sentence(family)}"
            + (f" ({'; '.join(found)})" if found else "")
        )
    return lines


def gate_slice(gate: Gate, slices: Mapping) -> str | None:
    """The tag of a slice's drop gate (``max-recall-drop@billing``: ``billing``); None for a whole
    run's gate, ``max-DCG@5-drop`` included."""
    name, _, tag = gate.name.rpartition("@")
    return tag if gate.is_drop_gate and name.endswith("-drop") and tag in slices else None


def power_phrase(gate: Gate) -> str | None:
    """A drop gate's note when its corpus (or slice) is underpowered for its threshold:
    ``underpowered: needs 120 cases to see a drop of 0.02 (power 0.8, alpha 0.05), has 25``; None
    otherwise (a note, never a verdict), and None for a gate that failed conclusively: the drop it
    saw is real whatever the power to see one."""
    power = gate.power
    if power is None or not power.underpowered or not (gate.passed or gate.inconclusive):
        return None
    return (
        f"underpowered: needs {power.needed:,} cases to see a drop of {gate.threshold:.4g} "
        f"(power {power.power:.4g}, alpha {power.alpha:.4g}), has {power.cases:,}"
    )


def interval_text(found: Interval | None) -> str:
    """An interval of differences as sentences and the terminal write it: ``-0.1875..+0.0000``, or
    ``N/A``."""
    return "N/A" if found is None else f"{found.low:+.4f}..{found.high:+.4f}"


def verdict_sentence(report: Report) -> tuple[str, str]:
    """The verdict's word (``pass``, ``FAIL``, ``INCONCLUSIVE``) and what decided it, counting the
    gates."""
    gates = report.gates
    total = counted(len(gates), "gate")
    failed = [gate for gate in gates if not gate.passed and not gate.inconclusive]
    undecided = [gate for gate in gates if gate.inconclusive]
    if report.verdict == "inconclusive":
        commands = settling_commands(undecided)
        if not commands:
            return "INCONCLUSIVE", (
                f"the holes in the judgements decide {len(undecided)} of {total}; "
                "judge them and evaluate again"
            )
        named = "; ".join(f"`{command}`" for command in commands)
        one = (
            "one sample settles them"
            if len(undecided) > 1 and len(commands) == 1
            else "judge and evaluate again"
        )
        return (
            "INCONCLUSIVE",
            f"the holes in the judgements decide {len(undecided)} of {total}; {one}: {named}",
        )
    if report.verdict != "pass":
        more = f"; the holes in the judgements decide {len(undecided)} more" if undecided else ""
        return "FAIL", f"{len(failed)} of {total} failed{more}"
    return "pass", {1: "the one gate", 2: "both gates"}.get(len(gates), f"all {total}") + " passed"


def settling_commands(gates: Sequence[Gate]) -> list[str]:
    """One settling command for each pair of runs the inconclusive ``gates`` compare: a sample of
    both runs' holes serves every gate between them (the gates of one run against the baseline),
    so the command of the largest size any of them names."""
    largest: dict[str, tuple[int, str]] = {}
    for gate in gates:
        command = None if gate.holes is None else gate.holes.command
        size = None if gate.holes is None else gate.holes.settling_sample
        run = gate.generation or ""
        if command and size and size > largest.get(run, (0, ""))[0]:
            largest[run] = (size, command)
    return [command for _, command in largest.values()]


def gate_word(gate: Gate) -> str:
    return "pass" if gate.passed else "INCONCLUSIVE" if gate.inconclusive else "FAIL"


def gate_sentence(
    gate: Gate, quote: Callable[[object], str] = str, mark: Callable[[str], str] = str
) -> str:
    """``WORD NAME (RUN): DETAIL``, the word marked by ``mark`` and the values quoted by ``quote``,
    and the power note of a drop gate whose corpus (or slice) is too small for its threshold
    (:func:`gate_detail`); never cut."""
    return f"{mark(gate_word(gate))} {quote(gate.name)} ({quote(gate.generation)}): {quote(gate_detail(gate))}"


def gate_detail(gate: Gate) -> str:
    """The gate's detail, then its power note where it has one: ``...; underpowered: needs 120 cases
    ...``."""
    note = power_phrase(gate)
    return gate.detail if note is None else f"{gate.detail}; {note}"


def rescored_sentence(report: Report) -> str | None:
    """How the baseline was measured again from its rankings (``baseline.rescored``): ``baseline
    re-scored under 12 judgements added since`` (and those changed), or that its stored values did
    not follow from its rankings; None when the baseline's numbers stood as written."""
    rescored = None if report.baseline is None else report.baseline.rescored
    if rescored is None:
        return None
    cases = counted(rescored.cases_changed, "case")
    if not rescored.judged_since:
        return f"baseline re-scored from its rankings: the values it stored for {cases} do not follow from them"
    added, changed = rescored.judgements_added, rescored.judgements_changed
    since = f"{counted(added, 'judgement')} added" + (
        f" and {changed:,} changed" if changed else ""
    )
    return f"baseline re-scored under {since} since ({cases} measured differently)"


def level_of(report: Report) -> float:
    """The interval's level the report's statistics were drawn at."""
    return (
        DEFAULT_LEVEL if report.comparison is None else report.comparison.statistics.bootstrap.level
    )


def finding_sentence(
    run: str,
    against: str,
    key: str,
    entry: MeasureComparison,
    level: float,
    cost: CostDelta | None = None,
) -> str:
    """One sentence on ``run`` against ``against`` (both already quoted) on measure ``key``: the
    finding, the interval, p and the cases that moved (module docs); and, when both runs were timed,
    what ``run`` costs more a query (``cost``: the comparison's ``cost``, :func:`time_delta`)."""
    label, change, finding = Measure.parse(key).label, entry.delta, entry.finding
    if entry.test is None or change is None:
        return f"{run} vs {against}: {label} cannot be compared (no case defines it on both sides)"
    spread = (
        f"{round(level * 100)}% CI {interval_text(entry.interval)}, {p_value_phrase(entry.test)}"
    )
    told = (
        f"({spread}; {counted(entry.wins, 'case')} better, {entry.losses} worse, {entry.ties} tied)"
    )
    if cost is not None:
        told += ", " + time_delta(cost)
    if entry.settle:
        return (
            f"{run} vs {against}: {label} {change:+.4f} on the judged rows is {judged_phrase(entry)} "
            f"({round(level * 100)}% CI {interval_text(entry.interval)}); {settle_phrase(entry.settle)}"
            + ("" if cost is None else f"; {time_delta(cost)}")
        )
    if finding in ("better", "worse"):
        return f"{run} is {finding} than {against} on {label} by {abs(change):.4f} {told}"
    if finding.startswith("inconclusive"):
        why = "unjudged rows, taken relevant, would change it"
    elif entry.interval and (entry.interval.low > 0 or entry.interval.high < 0):
        finding, why = (
            "no clear difference",
            "the interval excludes 0 but the test does not find a difference",
        )
    else:
        return f"{run} vs {against}: {label} {change:+.4f} is within noise {told}"
    return f"{run} vs {against}: {label} {change:+.4f} is {finding}: {why} {told}"


def judged_phrase(entry: MeasureComparison) -> str:
    """A finding on the judged values first, its p and how the changed cases went: ``worse: p =
    0.0020, 10 of 10 changed cases worse``; ``no clear difference: p = 0.4102, 3 of 7 changed cases
    better, 4 worse``."""
    judged, wins, losses = entry.judged_finding, entry.wins, entry.losses
    changed = wins + losses
    if changed == 0:
        moved = "no case changed"
    elif judged == "better":
        moved = f"{wins:,} of {counted(changed, 'changed case')} better"
    elif judged == "worse":
        moved = f"{losses:,} of {counted(changed, 'changed case')} worse"
    else:
        moved = f"{wins:,} of {counted(changed, 'changed case')} better, {losses:,} worse"
    return f"{judged}: {p_value_phrase(entry.test)}, {moved}"


def settle_phrase(settle: Settle) -> str:
    """What the holes could change of a finding and the one command that settles it: ``inconclusive:
    2 of 93 plausible holes, taken relevant, would change it; judge a random sample of both runs'
    holes to settle it: `ptah corpus sample ...```."""
    m = settle.flip_count
    holes = counted(settle.plausible, "plausible hole")
    return (
        f"inconclusive: {m:,} of {holes}, taken relevant, would change it; judge a random sample of both "
        f"runs' holes to settle it: `{settle.command}`"
    )


def finding_cell(entry: MeasureComparison | None) -> str:
    """A finding in a table's cell: ``worse``, or for one the holes decide, the judged values'
    finding and how many holes could change it: ``worse on judged rows; inconclusive (2 of 93
    plausible holes)``; ``N/A`` for a measure not compared."""
    if entry is None:
        return "N/A"
    if not entry.settle:
        return entry.finding
    return f"{entry.judged} on judged rows; {_inconclusive(entry.settle)}"


def _inconclusive(settle: Settle) -> str:
    return f"inconclusive ({settle.flip_count:,} of {counted(settle.plausible, 'plausible hole')})"


def time_delta(cost: CostDelta) -> str:
    """A comparison's ``cost`` (candidate minus reference, ms a query): ``+180.2 ms p50 and +190.1
    ms p95 a query``."""
    return f"{milliseconds(cost.p50_ms, sign=True)} p50 and {milliseconds(cost.p95_ms, sign=True)} p95 a query"


def finding_brief(key: str, change: float | None, entry: MeasureComparison) -> str:
    """A finding in a few words, for a line of several: ``recall -0.1600 worse (p = 0.0312)``."""
    judged = entry.judged_finding
    text = f"{Measure.parse(key).label} {'N/A' if change is None else f'{change:+.4f}'} {judged}"
    text += (
        f" ({p_value_phrase(entry.test)})" if judged in ("better", "worse") and entry.test else ""
    )
    settle = entry.settle
    return text if not settle else text + f" on judged rows; {_inconclusive(settle)}"


def findings(report: Report, quote: Callable[[object], str] = str) -> list[str]:
    """Every finding's sentence: each candidate against the reference run, then each run against the
    baseline."""
    level = level_of(report)
    found = []
    if report.comparison is not None:
        for candidate in report.comparison.candidates:
            found += candidate_findings(candidate, str(report.comparison.reference), level, quote)
    for run, comparison in zip(report.runs, report.comparisons):
        found += baseline_findings(run.name, comparison, level, quote)
    return found


def candidate_findings(
    candidate: PairComparison,
    reference: str | None,
    level: float,
    quote: Callable[[object], str] = str,
) -> list[str]:
    """The finding sentences of one candidate run against the reference run."""
    return [
        finding_sentence(quote(candidate.run), quote(reference), key, entry, level, candidate.cost)
        for key, entry in candidate.measures.items()
    ]


def baseline_findings(
    run: str, compared: BaselineComparison, level: float, quote: Callable[[object], str] = str
) -> list[str]:
    """The finding sentences of one run against the baseline's reference run."""
    against = f"the baseline {quote(compared.generation)}"
    return [
        finding_sentence(quote(run), against, key, entry, level, compared.cost)
        for key, entry in (compared.significance or {}).items()
    ]


# --- variants and what each run cost ------------------------------------------


def variant_sentence(variant: RunVariant, quote: Callable[[object], str] = str) -> str:
    """A variant's executed controls in one line: ``variant reranked: lexical over title-body,
    rerank bi-encoder (title-body) on the top 20``; the channels a channel fuses in brackets
    (``hybrid (lexical + vector)``), a vector search other than exact, and the rerank stage: its
    kind, what scores (a model, or the generation whose model does), and a service's address."""
    channels, made = list(variant.channels), variant.channel
    searched = made if channels == [made] else f"{made} ({' + '.join(channels)})"
    text = f"variant {quote(variant.name)}: {quote(searched)} over {quote(variant.generation)}"
    search = variant.search
    if search.mode != "exact":
        at = f" at ef_search {search.ef_search}" if search.ef_search is not None else ""
        text += f", {quote(search.mode)} search{at}"
    rerank = variant.rerank
    if rerank is not None:
        scorer = rerank.model or rerank.generation or variant.generation
        service = rerank.service
        where = f" at {quote(service.base_url)}" if service is not None and service.base_url else ""
        text += f", rerank {quote(rerank.kind)} ({quote(scorer)}{where}) on the top {rerank.candidates:,}"
    return text


def model_phrase(run: Run, quote: Callable[[object], str] = str) -> str:
    """What scored ``run``, for its header, never ``None``: ``model
    sentence-transformers/all-MiniLM-L6-v2``; a lexical run has no model: ``BM25 (lexical: lucene,
    k1=1.5, b=0.75)``; a hybrid run fuses its model with BM25; a run whose report names no model
    says so."""
    if run.channel == "lexical":
        settings = run.generation.settings or {}
        told = ", ".join(
            f"{name}={settings[name]}" if name != "method" else str(settings[name])
            for name in ("method", "k1", "b")
            if name in settings
        )
        return f"BM25 (lexical{': ' + quote(told) if told else ''})"
    model = run.generation.model
    said = "no model recorded" if model is None else f"model {quote(model)}"
    return said + (" fused with BM25 (lexical)" if run.channel == "hybrid" else "")


def cost_sentence(cost: Cost, quote: Callable[[object], str] = str) -> str:
    """A run's ``cost`` in one line: ``time per query: p50 186.8 ms, p95 217.1 ms (search 6.8 ms
    timed per batch, 3.1% of the evaluation; rerank p50 180.0 ms, p95 210.0 ms timed per query,
    95.0% of the evaluation)``."""
    stages = "; ".join(
        f"{quote(name)} {stage_phrase(stage, quote)}" for name, stage in cost.stages.items()
    )
    return f"time per query: p50 {milliseconds(cost.p50_ms)}, p95 {milliseconds(cost.p95_ms)}" + (
        f" ({stages})" if stages else ""
    )


def stage_phrase(stage: StageCost, quote: Callable[[object], str] = str) -> str:
    """One stage's time per query (one figure when p50 and p95 agree, as a stage timed per batch's
    do), how it was timed, its share of the evaluation's time and a service's usage: ``6.8 ms timed
    per batch, 3.1% of the evaluation``."""
    p50, p95 = stage.p50_ms, stage.p95_ms
    times = milliseconds(p50) if p50 == p95 else f"p50 {milliseconds(p50)}, p95 {milliseconds(p95)}"
    text = f"{times} timed {stage.timed}"
    if stage.load_s:
        text += f" (loading the model took {stage.load_s:,.2f} s, left out of the time per query)"
    if stage.share is not None:
        text += f", {stage.share:.1%} of the evaluation"
    if stage.usage:
        text += f", usage {usage_phrase(stage.usage, quote)}"
    return text


def usage_phrase(usage: Mapping, quote: Callable[[object], str] = str) -> str:
    """A service's usage as ``requests 3, retries 0, input tokens 1,234``: each figure it reported,
    in its order."""
    return ", ".join(
        f"{quote(name.replace('_', ' '))} {value:,}"
        for name, value in usage.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    )


def timed_runs(
    report: Report,
) -> tuple[list[str], list[tuple[Run, Cost, CostDelta | None]]]:
    """What the reports tabulate of the runs' cost: every stage named (in the order the runs first
    name them), and each timed run with its cost and its ``cost`` against the reference run (None
    for the reference, or when either run was not timed). No run is timed in a report written before
    ptah timed them: ``([], [])``."""
    costs = [(run, run.cost) for run in report.runs if run.cost is not None]
    stages = list(dict.fromkeys(name for _, cost in costs for name in cost.stages))
    against = (
        {}
        if report.comparison is None
        else {candidate.run: candidate.cost for candidate in report.comparison.candidates}
    )
    return stages, [(run, cost, against.get(run.name)) for run, cost in costs]
