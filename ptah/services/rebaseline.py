"""``ptah report rebaseline``: the runs of an old report measured again, by identity, on a new
corpus.

After a corpus changes (cases judged, added, holes filled) its digest differs,
and a baseline report of the old corpus can no longer be compared with. The
new baseline is the old report's generations measured on the new corpus --
the same runs, channels, search mode, fusion, extra measures and statistics
-- provided they are still what the old report measured:

* each run's generation is found among the declared ones by its identity
  (a generation renamed since is found under its new name); none with that
  identity: exit 3;
* it must be in the store, complete and fresh (``evaluate``'s own checks,
  never ``allow_stale``): otherwise exit 3;
* a variant's run is the variant of that name measured again, which must
  still be declared: otherwise exit 3;
* each run measured again must have the identity it had (a lexical or hybrid
  run's identity covers the text it searched): otherwise exit 3, since the
  new report would not be the old generations' baseline. A run of an
  ``outside`` channel (an outside retriever's: its identity is the digest of
  its answers, so it changes with the cases asked) must instead rank each
  case both corpora hold as it did, its top keys the same.
"""

from __future__ import annotations

import os

from ptah.core.comparison import StatisticsSettings
from ptah.core.corpus import Corpus
from ptah.core.errors import OperationalError, Said, StaleGeneration
from ptah.core.measures import DEFAULT_MEASURES, Measure
from ptah.core.report import Report, Run
from ptah.core.request import VECTOR, EvaluationRequest, Fusion, SearchOptions
from ptah.services.channels import channel
from ptah.services.evaluate import evaluate, load_baseline
from ptah.services.project import Opened


class CannotRebaseline(OperationalError):
    """An old report's runs cannot be measured again as they were (exit 3)."""


def rebaseline(project: Opened, old_path: str | os.PathLike, corpus: Corpus) -> Report:
    """The old report's runs measured on ``corpus`` (see the module docs)."""
    old = load_baseline(old_path)
    where = f"{old_path}"
    plain = tuple(run for run in old.runs if run.variant is None)
    names = [_declared(project, run, where) for run in plain]
    request = EvaluationRequest(
        generations=tuple(dict.fromkeys(names)),
        channels=tuple(dict.fromkeys(run.search.channel for run in plain)),
        variants=tuple(
            _variant(project, run, run.variant.name, where)
            for run in old.runs
            if run.variant is not None
        ),
        measures=tuple(
            dict.fromkeys(
                measure
                for run in old.runs
                for measure in map(Measure.parse, run.means)
                if measure not in DEFAULT_MEASURES
            )
        ),
        search=_search(plain),  # a variant's run searched as its variant declares
        fusion=_fusion(plain),
        statistics=_statistics(old),
    )
    try:
        report = evaluate(project, corpus, request)
    except StaleGeneration as exc:
        what, remedy = exc.what, exc.remedy  # a baseline is never measured as it is
        if remedy is None:
            raise CannotRebaseline(_cannot(where, exc)) from None
        raise CannotRebaseline(
            lambda words: (
                f"cannot rebaseline {where}: {what} {remedy(words)} first: a baseline is measured "
                "only on complete and fresh generations."
            )
        ) from None
    except OperationalError as exc:
        raise CannotRebaseline(_cannot(where, exc)) from None
    if len(report.runs) != len(old.runs):
        raise CannotRebaseline(
            f"cannot rebaseline {where}: its runs ({', '.join(r.name for r in old.runs)}) are not "
            "every channel with every generation, as evaluate measures them"
        )
    for before, now in zip(old.runs, report.runs):
        if getattr(channel(now.search.channel), "outside", False):
            _check_answers(before, now, where)
        elif before.generation.identity != now.generation.identity:
            raise CannotRebaseline(
                f"cannot rebaseline {where}: run {before.name} measured {before.generation.identity}, and measured "
                f"now it is {now.generation.identity} (its text or settings changed since); the old report's "
                "runs can no longer be reproduced"
            )
    return report


def _check_answers(before: Run, now: Run, where: str) -> None:
    """An outside search's run ranks each case both corpora hold as it did (the shorter of the two
    top keys the same); :class:`CannotRebaseline` naming the cases otherwise."""
    if before.generation.identity == now.generation.identity:
        return
    then = {case.id: case.keys for case in before.cases}
    held = [case for case in now.cases if case.id in then]
    if not held:
        raise CannotRebaseline(
            f"cannot rebaseline {where}: run {before.name} is an outside search's answers, and the "
            "corpus holds none of the old report's cases to hold them to"
        )
    changed = [
        case.id
        for case in held
        if case.keys[: len(then[case.id])] != then[case.id][: len(case.keys)]
    ]
    if changed:
        shown = ", ".join(changed[:3]) + (
            f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        )
        cases = "case" if len(changed) == 1 else "cases"
        raise CannotRebaseline(
            f"cannot rebaseline {where}: run {before.name}'s search answers otherwise now than the "
            f"old report recorded ({cases} {shown} ranked otherwise in the top k); its run can no "
            "longer be reproduced"
        )


def _variant(project: Opened, run: Run, name: str, where: str) -> str:
    """The variant ``name`` that ``run`` was, still declared."""
    if name not in project.spec.variants:
        raise CannotRebaseline(
            f"cannot rebaseline {where}: run {run.name} was the variant {name}, which the "
            "specification no longer declares"
        )
    return name


def _cannot(where: str, exc: OperationalError) -> Said:
    """``cannot rebaseline WHERE: `` and what ``exc`` says, in an interface's words."""
    return lambda words: f"cannot rebaseline {where}: {exc.said(words)}"


def _base_name(run: Run) -> str:
    """The declared generation a run searched: ``NAME`` of ``NAME`` or ``CHANNEL:NAME``."""
    channel = run.search.channel
    name = run.generation.name
    return name if channel == VECTOR else name.removeprefix(f"{channel}:")


def _declared(project: Opened, run: Run, where: str) -> str:
    """The declared generation of ``run``: a vector run's by its identity, else by its name."""
    name = _base_name(run)
    if run.search.channel != VECTOR:
        if name not in project.spec.generations:
            raise CannotRebaseline(
                f"cannot rebaseline {where}: run {run.name} searched the text of generation {name}, "
                "which the specification no longer declares"
            )
        return name
    identity = run.generation.identity
    for declared in project.spec.generations:
        if project.generation(declared).identity.identity == identity:
            return declared
    raise CannotRebaseline(
        f"cannot rebaseline {where}: no generation declared now has the identity of its run {name} ({identity}); "
        "its settings changed or it was removed, so its vectors are not the ones the old report measured"
    )


def _search(runs: tuple[Run, ...]) -> SearchOptions:
    for run in runs:
        if run.search.channel == VECTOR and run.search.mode != "exact":
            return SearchOptions(run.search.mode, run.search.ef_search)
    return SearchOptions()


def _fusion(runs: tuple[Run, ...]) -> Fusion:
    for run in runs:
        fusion = run.search.fusion
        if fusion is not None:
            return Fusion(k=fusion.k, depth=fusion.depth)
    return Fusion()


def _statistics(report: Report) -> StatisticsSettings:
    if report.comparison is None:
        return StatisticsSettings()
    statistics = report.comparison.statistics
    return StatisticsSettings(
        resamples=statistics.bootstrap.resamples,
        seed=statistics.seed,
        level=statistics.bootstrap.level,
    )
