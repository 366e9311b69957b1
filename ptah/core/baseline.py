"""Baselines and gates: comparing a report with an earlier one, and the verdict.

Comparability: a baseline is comparable with a corpus when their digests
match or they differ in judgements alone (:mod:`ptah.core.rescore`, which
measures the baseline again from its rankings); otherwise
:func:`check_comparable` raises ``IncomparableBaseline`` naming both
digests. The digest is what a report says of itself, so the cases it holds are checked too (:func:`check_cases`): a run's case ids must be
exactly its corpus's, or a baseline cut down to its worst cases (every mean
recomputed to match) would pass a gate it should not.

Each run of the current report is compared with the baseline's *reference*
run (its first), so a new generation is measured against what was shipped.

Gates, each a ``{"name", "passed", ...}`` entry in the report:

* ``required`` -- every required key of every case is in its top k; with a
  baseline, every one the baseline found (a key it missed too is a *known
  miss*, reported with both ranks, not failed on);
* ``forbidden`` -- no forbidden key appears in any top k;
* ``max-<measure>-drop`` (recall, mrr, ndcg), only with a baseline -- fails
  when ``baseline mean - current mean > threshold``. Thresholds are absolute,
  0 <= X <= 1. The comparison allows 1e-12 of floating-point noise so that a
  drop of exactly X passes. A mean that is N/A on either side fails the gate:
  a number that cannot be compared is never taken as no regression.
  *Inconclusive* (not passed; the report's verdict ``inconclusive``, exit 4,
  unless another gate fails) when it fails on the current run's mean and
  passes on the current run's high bound (the baseline at its recorded
  value): the holes in the judgements decide it (:mod:`ptah.core.judged`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ptah.core.calibration import ModelJudge
from ptah.core.corpus import Corpus
from ptah.core.errors import IncomparableBaseline, ReportError
from ptah.core.flips import flip_count, settling_sample, upper_relevant
from ptah.core.measures import Measure
from ptah.core.provenance import provenance
from ptah.core.report import REPORT_FORMATS, Gate, KnownMiss, Report, Run
from ptah.core.request import gate_key
from ptah.core.rescore import difference
from ptah.core.verdicts import counted

FLOAT_NOISE = 1e-12


def check_report_format(document: object, path: str) -> dict:
    """Refuse a parsed JSON document that is not an object whose ``format`` is ``ptah-report@1`` or ``@2``."""
    if not isinstance(document, dict):
        raise ReportError(f"{path}: not a ptah report (the top level is not a JSON object)")
    found = document.get("format")
    if found not in REPORT_FORMATS:
        shown = repr(found) if not isinstance(found, str) or len(found) <= 40 else f"a text of {len(found)} characters"
        expected = " or ".join(repr(f) for f in REPORT_FORMATS)
        raise ReportError(f"{path}: format is {shown}, not {expected}; pass a report that ptah wrote")
    return document


def check_comparable(corpus: Corpus, baseline: Report, path: str, corpus_path: str | None = None) -> None:
    """The baseline at ``path`` measured ``corpus``, or one that differs from it in judgements alone (the same case
    ids, queries and depths: :func:`ptah.core.rescore.difference`); :class:`IncomparableBaseline` (exit 2) naming
    both digests, how they differ and the rebaseline command with ``corpus_path`` (``corpus``'s path) otherwise."""
    theirs = baseline.corpus["digest"]
    if theirs == corpus.digest:
        return
    why = difference(corpus, baseline)
    if why is None:
        return
    command = f"ptah report rebaseline {path} --corpus {corpus_path or corpus.path or 'CORPUS'} --output NEW.json"
    raise IncomparableBaseline(
        f"the baseline {path} measured a different corpus (digest {theirs}); this corpus is {corpus.digest}, and "
        f"they differ in more than judgements: {why}. Measure its runs again on this corpus with `{command}`, or "
        "evaluate the corpus it was made with."
    )


def check_cases(expected: Sequence[str], runs: Sequence[Run], path: str, corpus: str) -> None:
    """Every one of ``runs`` (of the report at ``path``) holds exactly the cases ``expected`` (``corpus``'s
    ids); :class:`IncomparableBaseline` (exit 2) naming the first missing and the first extra id otherwise."""
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
    """A drop gate needs its measure on the baseline's reference run: say how to get it, or refuse (exit 2)."""
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


def compare(run: Run, baseline_run: Run) -> dict:
    """Deltas (current - baseline) of every mean both carry, and every case whose measures or verdict
    changed (those that flipped between pass and fail first). ``current_high`` is the current mean's high
    bound (null when unknown)."""
    measures = [m for m in run.measures if str(m) in baseline_run.means]
    aggregates = {}
    for m in measures:
        now, before = run.means[str(m)].value, baseline_run.means[str(m)].value
        aggregates[m.key] = {"baseline": before, "current": now, "delta": _delta(now, before),
                             "current_high": run.means[str(m)].high}
    before_cases = {case.id: case for case in baseline_run.cases}
    changed: list[dict[str, Any]] = []
    for case in run.cases:
        old = before_cases.get(case.id)
        if old is None:
            continue
        deltas = {
            m.key: {"baseline": old.values[str(m)], "current": case.values[str(m)],
                    "delta": _delta(case.values[str(m)], old.values[str(m)])}
            for m in measures
        }
        if any(d["baseline"] != d["current"] for d in deltas.values()) or old.passed != case.passed:
            changed.append({"id": case.id, "passed": {"baseline": old.passed, "current": case.passed}, "metrics": deltas})
    # cases that flipped between pass and fail first, then file order
    changed.sort(key=lambda c: c["passed"]["baseline"] == c["passed"]["current"])
    return {
        "generation": baseline_run.generation.get("name"),
        "identity": baseline_run.generation.get("identity"),
        "provenance": provenance(run, baseline_run),  # another generation identity, another source snapshot
        "aggregates": aggregates,
        "cases_changed": changed,
    }


def movement(drop: float) -> str:
    """How a mean moved, said with one sign: ``dropped 0.0625``, ``rose 0.0625`` or ``unchanged``."""
    if abs(drop) <= FLOAT_NOISE:
        return "unchanged"
    shown = f"{abs(drop):.4f}"
    return ("dropped " if drop > 0 else "rose ") + ("less than 0.0001" if shown == "0.0000" else shown)


@dataclass(frozen=True)
class Sampled:
    """A random sample of a run's holes judged: ``population`` holes then, ``drawn`` of them judged, ``found``
    relevant; ``seed`` its seed (for the report)."""

    population: int
    drawn: int
    found: int
    seed: int
    index: int | None = None  # the sample's place in the judgement record (what calibrates a model judge)

    def plausible(self) -> int:
        return upper_relevant(self.population, self.drawn, self.found)


def required_gate(run: Run, reference: Run | None = None) -> Gate:
    """Every required key in its case's top k; against a baseline (``reference``, its reference run), every one
    the baseline found: a key its case's baseline missed too is a known miss, reported with both ranks and not
    failed on (DESIGN.md, "Known misses")."""
    required = run.required
    if not required["cases"]:
        return Gate("required", run.name, True, "no required keys: no case names one")
    cases = counted(required["cases"], "case")
    if reference is None:
        return Gate("required", run.name, required["failed"] == 0, f"{required['failed']} of {cases} missed a required key")
    before = {case.id: {miss.key: miss for miss in case.missed} for case in reference.cases}
    known, failed = [], 0
    for case in run.cases:
        theirs = before.get(case.id, {})
        known += [KnownMiss(case.id, miss.key, theirs[miss.key].rank, theirs[miss.key].where, miss.rank, miss.where)
                  for miss in case.missed if miss.key in theirs]
        failed += any(miss.key not in theirs for miss in case.missed)
    if not known:
        return Gate("required", run.name, failed == 0, f"{failed} of {cases} missed a required key")
    shown = "; ".join(f'"{miss.key}" of case "{miss.case}" (baseline: {miss.baseline_where}; now: {miss.current_where})'
                      for miss in known[:MAX_CASES_NAMED])
    more = f" and {len(known) - MAX_CASES_NAMED} more" if len(known) > MAX_CASES_NAMED else ""
    misses = "1 known miss" if len(known) == 1 else f"{len(known):,} known misses"
    return Gate("required", run.name, failed == 0,
                f"{failed} of {cases} missed a required key the baseline found; {misses}, which the baseline missed "
                f"too: {shown}{more}", known_misses=tuple(known))


def gates(run: Run, comparison: Mapping | None, thresholds: Mapping[str, float], corpus_path: str | None = None,
          policy: str = "bound", sampled: Sampled | None = None, ignored: Sequence[str] = (),
          judges: Sequence[ModelJudge] = (), reference: Run | None = None) -> list[Gate]:
    """The gate verdicts of one run (see the module docs); ``corpus_path`` names the corpus in the commands that
    list and judge the holes deciding an inconclusive gate; ``policy`` is the request's ``holes`` and
    ``sampled`` the run's judged random sample of holes, if any (``ignored``: why others were not used), and
    ``judges`` the model judges whose grades may move U (:mod:`ptah.core.calibration`); ``reference`` the
    baseline's reference run, whose misses are known misses of the required gate."""
    forbidden = run.forbidden
    result = [
        required_gate(run, reference),
        Gate("forbidden", run.name, forbidden["leaking"] == 0,
             f"{forbidden['leaking']} of {counted(forbidden['cases'], 'case')} leaked a forbidden key"
             if forbidden["cases"] else "no forbidden keys: no case names one"),
    ]
    for name, threshold in thresholds.items():
        measure = Measure.parse(name)
        entry = (comparison or {}).get("aggregates", {}).get(measure.key, {})
        before, now, high = entry.get("baseline"), entry.get("current"), entry.get("current_high")
        drop_high, inconclusive, holes = None, False, None
        if before is None or now is None:
            passed, drop = False, None
            detail = f"{measure.label} is N/A on one side, so its drop cannot be measured"
        else:
            drop = before - now
            passed = drop <= threshold + FLOAT_NOISE
            detail = (f"{measure.label} {before:.4f} -> {now:.4f} ({movement(drop)}; a drop of {threshold:.4f} is "
                      "allowed)")
            if high is not None:
                drop_high = before - high
            if not passed and run.cases and all(case.holes is not None for case in run.cases):
                holes = _decided_by_holes(run, measure, before - threshold, policy, sampled, judges) | {
                    "samples_ignored": list(ignored)}
                inconclusive = holes["inconclusive"]
                detail += "; " + _holes_sentence(run, measure, holes, corpus_path)
        result.append(Gate(f"max-{measure.key}-drop", run.name, passed, detail, threshold, drop, drop_high, inconclusive,
                           holes))
    return result


def _decided_by_holes(run: Run, measure: Measure, target: float, policy: str, sampled: Sampled | None,
                      judges: Sequence[ModelJudge] = ()) -> dict:
    """What the holes say of a drop gate failing on its mean (DESIGN.md, "Judged keys and holes"): the report's
    ``holes`` member of the gate. A model judge trusted on the sample replaces the sample's U with its own (the
    largest, when several are)."""
    pairs = [(case.id, hole.key) for case in _deciding(run, measure) for hole in case.holes or ()]
    count = len(pairs)
    flips = flip_count(run.cases, measure, target)
    plausible = count if sampled is None else min(count, sampled.plausible())
    accounts = [judge.entry(pairs, plausible) for judge in judges]
    used = [entry["plausible_relevant"] for entry in accounts if entry["used"]]
    decided = {"policy": policy, "holes": count, "flip_count": flips.m, "flip_count_exact": flips.exact,
               "plausible_relevant": max(used) if used else plausible, "sample": None if sampled is None else {
                   "seed": sampled.seed, "population": sampled.population, "drawn": sampled.drawn,
                   "relevant": sampled.found}} | ({"judges": accounts} if accounts else {})
    plausible = decided["plausible_relevant"]
    inconclusive = policy == "bound" and flips.m is not None and flips.m <= plausible
    settle = settling_sample(count, flips.m) if inconclusive and flips.m is not None else None
    return decided | {"inconclusive": inconclusive, "settling_sample": settle}


def run_flags(run: Run) -> str:
    """The flags that make ``run`` again in ``ptah corpus holes`` and ``judge``: ``--variant NAME`` for a variant's
    run, else ``-g NAME`` and, for a channel other than vector, ``--channel CHANNEL``."""
    if run.variant is not None:
        return f" --variant {run.variant['name']}"
    channel = run.search.get("channel")
    name = run.generation.get("text_of") or run.generation.get("name") or ""
    if channel not in (None, "vector") and name.startswith(f"{channel}:"):
        name = name[len(channel) + 1:]  # hybrid:NAME is the hybrid channel over generation NAME
    return f" -g {name}" + (f" --channel {channel}" if channel not in (None, "vector") else "")


def _holes_sentence(run: Run, measure: Measure, holes: Mapping, corpus_path: str | None) -> str:
    """Why the holes do or do not decide a drop gate failing on its mean, with the commands that settle it."""
    count, m, plausible = holes["holes"], holes["flip_count"], holes["plausible_relevant"]
    if holes["policy"] == "misses":
        return f"{counted(count, 'unjudged row')} counted as not relevant (--holes misses)"
    if count == 0:
        return "every row in the top k is judged"
    least = "at least " if not holes["flip_count_exact"] else ""
    if m is None:
        return f"it fails even with all {counted(count, 'unjudged row')} taken relevant"
    needed = f"{least}{counted(m, 'unjudged row')} of {count:,} would have to be relevant to pass"
    if not holes["inconclusive"]:
        return f"{needed}, and at most {plausible:,} plausibly are ({_evidence(holes)})"
    where = run_flags(run)
    corpus = corpus_path or "CORPUS"
    cases = [case for case in _deciding(run, measure)  # the cases whose holes can move the measure
             if case.holes and case.highs and case.highs[str(measure)] != case.values[str(measure)]]
    named = ", ".join(repr(case.id) for case in cases[:MAX_CASES_NAMED])
    more = f" and {len(cases) - MAX_CASES_NAMED} more" if len(cases) > MAX_CASES_NAMED else ""
    sentence = (f"inconclusive: {needed}, and as many as {plausible:,} may be ({_evidence(holes)}; in "
                f"{counted(len(cases), 'case')}: {named}{more})")
    listed = f"list them with `ptah corpus holes {corpus}{where}`, judge them, and evaluate again"
    settle = holes["settling_sample"]
    if settle:
        return (f"{sentence}; judge a random sample of {settle:,}: if none is relevant, the gate fails -- "
                f"`ptah corpus judge {corpus} --sample {settle}{where}`; or {listed}")
    return f"{sentence}; {listed}"


def _deciding(run: Run, measure: Measure) -> list:
    """The run's cases whose holes can move the measure's mean: those where it is defined (a case with no
    relevant key is N/A whatever its holes are)."""
    return [case for case in run.cases if case.values.get(str(measure)) is not None]


def _evidence(holes: Mapping) -> str:
    sample = holes["sample"]
    said = ("no random sample of them judged" if sample is None else
            f"one-sided 95% bound from a random sample of {sample['drawn']:,} of {sample['population']:,} holes "
            f"with {sample['relevant']:,} relevant")
    return "; ".join([said, *(_judge_said(entry) for entry in holes.get("judges", ()))])


def _judge_said(entry: Mapping) -> str:
    """One model judge's part of a gate's evidence: its agreement with the person and what it did to U."""
    kappa = "undefined" if entry["kappa"] is None else f"{entry['kappa']:.2f}"
    rates = "".join(f", {name.upper()} {entry[name]:.2f} [{entry[name + '_interval'][0]:.2f}, "
                    f"{entry[name + '_interval'][1]:.2f}]" for name in ("tpr", "tnr") if entry[name] is not None)
    cost = entry.get("cost")
    spent = "" if not cost else f", {int(cost.get('requests', 0)):,} requests" + (
        f" and {int(cost['server_prompt_tokens']):,} prompt tokens" if cost.get("server_prompt_tokens") else "")
    agreed = f"model judge {entry['name']} (kappa {kappa} on {entry['sampled']:,} sampled holes{rates}{spent})"
    if not entry["used"]:
        return f"{agreed} graded {entry['graded']:,} of them but may not move it: {entry['why_not']}"
    moved = entry["moved"]
    return (f"{agreed} graded {entry['graded']:,} of them and puts it at {entry['plausible_relevant']:,} "
            f"({'+' if moved > 0 else ''}{moved:,} from the sample alone)" if moved else
            f"{agreed} graded {entry['graded']:,} of them and leaves it at {entry['plausible_relevant']:,}")


MAX_CASES_NAMED = 5
