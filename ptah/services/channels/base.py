"""The channel seam: what a run of an evaluation searches with, declared once and registered by
name.

A :class:`Channel` measures one planned run (:class:`RunPlan`: a channel over
a declared generation) and returns a typed :class:`~ptah.core.report.Run`.
Channels share the expensive *sides* of an evaluation through
:class:`Sides` -- a generation's vectors are read, verified and searched
once however many runs use them; a template's lexical index is loaded once.

Every channel ranks its own way and measures through the same loop,
:func:`ptah.core.report.measure_case` (here :func:`measure_scores` for
channels that score every row), so every number in a report comes from one
piece of code.

Runs: every channel (in the order asked, default ``vector``) with every
generation (in the order asked, default the active one), channel-major, then
each variant asked (``variants:`` in the specification), named by it. A
(channel, generation) pair asked twice is measured once. A run's name is the
generation's for ``vector``, ``CHANNEL:NAME`` otherwise. Nothing falls back:
an unknown channel, generation or variant is exit 2.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ptah.core.corpus import Case, Corpus, composite_spellings, shown_key
from ptah.core.errors import InputError, UnknownGeneration, UnknownKey
from ptah.core.measures import Measure
from ptah.core.ranking import QueryRanking, rank_many
from ptah.core.report import CaseResult, measure_case, ranking_depth
from ptah.core.request import VECTOR, EvaluationRequest, SearchOptions
from ptah.core.spec import Spec, Variant
from ptah.services.channels.registry import CHANNELS
from ptah.services.project import Opened

MAX_UNKNOWN_LISTED = 10


@dataclass(frozen=True)
class RunPlan:
    """One run to measure: a channel over a declared generation, as a variant's (named by it) or
    not."""

    channel: str
    generation: str
    variant: Variant | None = None

    @property
    def name(self) -> str:
        if self.variant is not None:
            return self.variant.name
        if getattr(CHANNELS.get(self.channel), "bare_name", False):
            return self.generation
        return f"{self.channel}:{self.generation}"


def plan_runs(
    spec: Spec,
    names: Sequence[str | None] | None,
    channels: Sequence[str] | None,
    variants: Sequence[str] = (),
) -> list[RunPlan]:
    """The runs to measure, in order (see the module docs); typed errors for what does not exist."""
    plans = _plain_runs(spec, names, channels) if channels or names or not variants else []
    for name in dict.fromkeys(variants):
        if name not in spec.variants:
            raise InputError(
                f'{spec.path}: no variant named "{name}"; the specification declares '
                f"{', '.join(spec.variants) or 'none (add variants:)'}"
            )
        variant = spec.variants[name]
        CHANNELS.get(variant.channel)
        plan = RunPlan(variant.channel, spec.generation(variant.generation).name, variant)
        if any(other.name == plan.name for other in plans):
            raise InputError(
                f'the variant "{name}" has the name of another run of this evaluation; rename it or '
                "evaluate them apart"
            )
        plans.append(plan)
    return plans


def check_record_run(spec: Spec, request: EvaluationRequest) -> None:
    """Refuse (exit 2), before any work, ``record_run`` on an evaluation none of whose runs is of
    an ``outside`` channel (:class:`~ptah.services.channels.registry.Channel`): it would record
    nothing."""
    path = request.record_run
    if path is None:
        return
    plans = plan_runs(spec, list(request.generations) or None, request.channels, request.variants)
    if any(getattr(CHANNELS.get(plan.channel), "outside", False) for plan in plans):
        return
    outside = [name for name in CHANNELS.names() if getattr(CHANNELS.get(name), "outside", False)]
    runs = f"runs of channel {' or '.join(outside)}" if outside else "runs of an outside search"
    raise InputError(
        lambda words: (
            f"{words.option('record_run', path)}: records the rankings of {runs}, and this "
            f"evaluation has none; evaluate one, or leave {words.option('record_run')} out"
        )
    )


def _no_generation(spec: Spec, name: str) -> UnknownGeneration:
    """Channel ``name`` asked without a generation, and the specification has no active one."""
    return UnknownGeneration(
        lambda words: (
            f"{spec.path}: {words.option('channels', name)} reads its text (and, for hybrid, its "
            "vectors) from a generation, and none is named or active; pass "
            f"{words.option('generations', 'NAME')}"
        )
    )


def _plain_runs(
    spec: Spec, names: Sequence[str | None] | None, channels: Sequence[str] | None
) -> list[RunPlan]:
    channels = list(channels or [VECTOR])
    for name in channels:
        CHANNELS.get(name)
    plans: list[RunPlan] = []
    for name in channels:
        for generation in names or [None]:
            bare = getattr(CHANNELS.get(name), "bare_name", False)
            if generation is None and not bare and spec.active is None:
                raise _no_generation(spec, name)
            plan = RunPlan(name, spec.generation(generation).name)
            if plan not in plans:
                plans.append(plan)
    return plans


@dataclass
class Sides:
    """What the runs of one evaluation share, each made once: a generation's vector side, a
    template's lexical side; ``given``, what the caller handed a channel by its name. ``timings`` collects the seconds each step took, for the run that first
    needed it."""

    project: Opened
    corpus: Corpus
    request: EvaluationRequest
    cache: dict = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    channels: tuple[
        str, ...
    ] = ()  # every channel the evaluation's runs use (default: the request's)
    given: Mapping[str, object] = field(
        default_factory=dict
    )  # what the caller handed a channel by its name (the API's retriever=fn)

    def __post_init__(self) -> None:
        self.channels = self.channels or tuple(self.request.channels)

    def within(self, search: SearchOptions, depth: int | None = None) -> Sides:
        """The sides of runs searching with ``search``, each case ranked at least ``depth`` deep (a
        rerank stage's candidates): these sides when nothing differs, else sides of their own, made
        once, charging the same timings."""
        if search == self.request.search and depth is None:
            return self

        def make() -> Sides:
            corpus = (
                self.corpus
                if depth is None
                else replace(
                    self.corpus,
                    cases=tuple(replace(case, k=max(case.k, depth)) for case in self.corpus.cases),
                )
            )
            return Sides(
                self.project,
                corpus,
                replace(self.request, search=search),
                timings=self.timings,
                channels=self.channels,
                given=self.given,
            )

        return self.once(("sides", search, depth), make)

    @property
    def measures(self) -> tuple[Measure, ...]:
        return self.request.all_measures

    def once(self, key: tuple, make: Callable[[], object]):
        """The value made for ``key``, made by ``make()`` the first time it is asked for."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def charge(self, step: str, since: float) -> None:
        self.timings[step] += time.perf_counter() - since

    def take_timings(self) -> dict[str, float]:
        """The seconds spent since the last call, by step."""
        taken = dict(self.timings)
        self.timings.clear()
        return taken

    def check_keys(self, keys: set[str]) -> None:
        """Every key the corpus expects must be a row of the run; say which are not, and why (exit
        2).

        A key whose row is in the source but has no vector (an incomplete
        generation measured with ``allow_stale``) is a miss, not a bad corpus.
        """
        named: dict[str, list[str]] = defaultdict(list)
        for case in self.corpus.cases:
            for key in sorted(case.expected_keys() - keys):
                named[key].append(case.id)
        if not named:
            return
        status = self.project.source.lookup(list(named))
        unknown = {key: cases for key, cases in named.items() if status.get(key) != "ok"}
        if not unknown:
            return
        listed = sorted(unknown)[:MAX_UNKNOWN_LISTED]
        width = len(self.project.spec.source.key_fields)
        spellings = {key: composite_spellings(key, width) for key in listed}
        found = self.project.source.lookup([s for each in spellings.values() for s in each])
        lines = []
        for key in listed:
            where = ", ".join(f'"{c}"' for c in unknown[key])
            if status.get(key) == "filtered":
                lines.append(
                    f"key {key!r} (case {where}) is a row the filter excludes; a query whose answer is a row your "
                    "filter excludes measures the filter, not the model"
                )
            else:
                meant = next(
                    (spelled for spelled in spellings[key] if found.get(spelled) == "ok"), None
                )
                hint = (
                    ""
                    if meant is None
                    else (
                        f"; the row {shown_key(meant)} is spelled with U+001F between its key fields: "
                        + '"'
                        + meant.replace("\x1f", "\\x1f")
                        + '" in YAML (a double-quoted string)'
                    )
                )
                lines.append(
                    f"key {key!r} (case {where}) is not in table {self.project.spec.source.table}{hint}"
                )
        more = len(unknown) - len(lines)
        suffix = f"\n... and {more} more unknown keys" if more > 0 else ""
        path = self.corpus.path
        raise UnknownKey(f"{path}: " + f"\n{path}: ".join(lines) + suffix)


def measure_scores(
    cases: Sequence[Case],
    keys: Sequence[str],
    columns: Mapping[str, int],
    scores: np.ndarray,
    measures: Sequence[Measure],
    *,
    matched_only: bool = False,
    matched_by: str = "the query matched",
) -> list[CaseResult]:
    """Each case measured on its row of ``scores`` (cases x rows, one column per key; ``columns`` by
    key).

    With ``matched_only`` (lexical, hybrid) a score of 0 means the row did not
    match at all (no query term, or in neither fused channel's top rows): such
    rows are not results, a case's ranking holds only the rows it matched --
    possibly fewer than k -- and a missed key that was not matched has no
    rank, rather than one key order alone would give it: it reads "not among
    the 12 rows ``matched_by``", the count the case's own.
    """
    rankings = rank_many(
        scores,
        keys,
        [case.k for case in cases],
        expected=[case.expected_keys() for case in cases],
        asked=[case.required for case in cases],
        columns=columns,
        reach=[ranking_depth(case, measures) for case in cases],
    )
    if not matched_only:
        return measure_rankings(cases, rankings, len(keys), measures)
    results = []
    for row, case, ranking in zip(scores, cases, rankings):

        def rank_of(key: str, row=row, ranks=ranking.ranks) -> int | None:
            return ranks[key] if key in ranks and row[columns[key]] > 0 else None

        matched = [(key, score) for key, score in ranking.ranked if score > 0]
        count = int(np.count_nonzero(row > 0))
        results.append(
            measure_case(
                case,
                matched,
                measures=measures,
                searched=count,
                rank_of=rank_of,
                ties=ranking.ties,
                unranked=f"not among the {count:,} {_rows(count)} {matched_by}",
            )
        )
    return results


def measure_rankings(
    cases: Sequence[Case],
    rankings: Sequence[QueryRanking],
    searched: int,
    measures: Sequence[Measure],
) -> list[CaseResult]:
    """Each case measured on its ranking of every one of ``searched`` rows (:func:`rank_many`'s, or
    a stream's)."""
    return [
        measure_case(
            case,
            ranking.ranked,
            measures=measures,
            searched=searched,
            rank_of=ranking.ranks.get,
            ties=ranking.ties,
        )
        for case, ranking in zip(cases, rankings)
    ]


def _rows(count: int) -> str:
    return "row" if count == 1 else "rows"
