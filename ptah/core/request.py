"""What an evaluation is asked to do: one value, checked when it is made.

:class:`EvaluationRequest` carries the generations, channels, extra measures,
drop gates, baseline, search mode, fusion and statistics of one evaluation.
Each option is declared once, on its field (:func:`ptah.core.registry.option`:
type, default, bounds, help); ``ptah inference evaluate``'s options, the
keywords of ``Project.evaluate``, the server's evaluation body and its
OpenAPI schema are made from those declarations, and every one of them ends
here, in the same checks (exit 2 through :class:`OptionError`, naming the
option). Every check that needs no file and no database happens here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ptah.core.corpus import TAG_PATTERN
from ptah.core.measures import DEFAULT_MEASURES, Measure
from ptah.core.registry import OptionError, check_options, made, option
from ptah.core.visible import abbreviated

VECTOR, LEXICAL, HYBRID = "vector", "lexical", "hybrid"
SEARCH_MODES = ("exact", "index", "both")
DEFAULT_EF_SEARCH = 40  # pgvector's own default
DEFAULT_RRF_K, DEFAULT_RRF_DEPTH, MAX_RRF_DEPTH = (
    60,
    1000,
    100_000,
)  # the RRF paper's constant; see core.fusion
DEFAULT_RESAMPLES, MAX_RESAMPLES, DEFAULT_SEED = 10_000, 1_000_000, 0  # see core.significance
DEFAULT_LEVEL, EXACT_LIMIT = 0.95, 20


@dataclass(frozen=True)
class Fusion:
    """How the hybrid channel fuses: the RRF constant and how deep each channel's ranking counts."""

    k: float = option(
        DEFAULT_RRF_K,
        "Hybrid: the reciprocal rank fusion constant c in 1 / (c + rank).",
        name="rrf_k",
        kind=float,
        low=0,
    )
    depth: int = option(
        DEFAULT_RRF_DEPTH,
        "Hybrid: how many of each channel's top rows are fused.",
        name="rrf_depth",
        low=1,
        high=MAX_RRF_DEPTH,
    )

    def __post_init__(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class SearchOptions:
    """How the vector channel searches: ``mode`` (exact, index, both) and the HNSW ``ef_search``
    (None: 40)."""

    mode: str = option(
        "exact",
        "exact (every row scored in memory), index (the pgvector HNSW index, as served) or "
        "both (index, with its ANN recall and deltas against exact).",
        name="search",
        choices=SEARCH_MODES,
    )
    ef_search: int | None = option(
        None,
        f"Index search: hnsw.ef_search (default {DEFAULT_EF_SEARCH}).",
        kind=int,
        low=1,
        high=1000,
    )  # pgvector's limits

    def __post_init__(self) -> None:
        check_options(self)
        if self.ef_search is not None and self.mode == "exact":
            raise OptionError("ef_search", "applies to index search; search in mode index or both")

    @property
    def uses_index(self) -> bool:
        return self.mode != "exact"

    @property
    def effective_ef_search(self) -> int:
        return DEFAULT_EF_SEARCH if self.ef_search is None else self.ef_search


EXACT = SearchOptions()


@dataclass(frozen=True)
class StatisticsSettings:
    """How the significance numbers are drawn; recorded in the report so they can be reproduced."""

    resamples: int = option(
        DEFAULT_RESAMPLES,
        "Resamples for the paired bootstrap intervals and Monte Carlo sign-flip tests.",
        name="bootstrap",
        low=1,
        high=MAX_RESAMPLES,
    )
    seed: int = option(
        DEFAULT_SEED, "Seed of the bootstrap and Monte Carlo draws (recorded in the report).", low=0
    )
    level: float = DEFAULT_LEVEL
    exact_limit: int = EXACT_LIMIT

    def __post_init__(self) -> None:
        check_options(self)

    @property
    def alpha(self) -> float:
        return 1 - self.level

    def as_dict(self) -> dict:
        return {
            "seed": self.seed,
            "bootstrap": {
                "resamples": self.resamples,
                "level": self.level,
                "method": "percentile",
                "paired": True,
            },
            "permutation": {
                "test": "paired sign-flip",
                "statistic": "mean difference",
                "alternative": "two-sided",
                "exact_limit": self.exact_limit,
                "resamples": self.resamples,
            },
            "alpha": self.alpha,
        }


def _measures(given: Iterable[Measure | str]) -> tuple[Measure, ...]:
    result: list[Measure] = []
    for item in given:
        try:
            result.append(item if isinstance(item, Measure) else Measure.parse(item))
        except ValueError as exc:
            raise OptionError("measures", str(exc)) from None
    return tuple(dict.fromkeys(result))  # each once, in the order first asked


def gate_key(name: str) -> tuple[Measure, str | None]:
    """A drop gate's measure and slice: ``recall`` (the whole run), ``recall@billing`` (the slice of
    tag ``billing``), ``MAP@10@de``, ``nDCG@*`` (every slice). A suffix of digits is a measure's
    depth, so a tag of digits only is reached by ``@*``. ValueError for an unknown measure or a tag
    ptah does not accept."""
    head, at, tail = name.rpartition("@")
    if not at or tail.isdigit():
        return Measure.parse(name), None
    if tail != "*" and not TAG_PATTERN.fullmatch(tail):
        raise ValueError(
            f"{abbreviated(tail)!r} is not a tag (1 to 32 lowercase letters, digits, '.', '_' or '-'), "
            "nor * for every slice"
        )
    return Measure.parse(head), tail


def check_thresholds(
    thresholds: Mapping[str, float | None], has_baseline: bool
) -> dict[str, float]:
    """The drop thresholds that were given, keyed by measure (``recall``, ``MAP@10``) and slice
    (``recall@billing``, ``nDCG@*``; :func:`gate_key`), checked: a known measure, 0 <= X <= 1, and
    only with a baseline."""
    given: dict[str, float] = {}
    for name, value in thresholds.items():
        if value is None:
            continue
        try:
            parsed, tag = gate_key(name)
            measure = str(parsed) if tag is None else f"{parsed}@{tag}"
        except ValueError as exc:
            raise OptionError("max_drop", str(exc)) from None
        if (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1
        ):  # NaN too
            raise OptionError(
                "max_drop",
                f"the max drop of {measure} must be between 0 and 1 (an absolute drop), "
                f"not {abbreviated(repr(value))}",
            )
        given[measure] = float(value)
    if given and not has_baseline:
        raise OptionError(
            "max_drop",
            f"a max drop of {', '.join(given)} needs a baseline report to measure the drop against",
        )
    return given


HOLE_POLICIES = ("bound", "misses")


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation, as asked: each field is an option (:mod:`ptah.core.registry`), its help says
    what it is.

    Each channel with each generation is a run, channel-major, then each variant named (none are
    asked when only variants are: ``channels`` is then empty); the first run is the reference.
    ``measures`` are measured beyond the defaults (recall, MRR, nDCG at each case's depth), and so
    is each measure a drop gate names. ``search``, ``fusion`` and ``statistics`` hold options of
    their own. :meth:`of` makes one from the options by name (``ef_search``, ``rrf_k``,
    ``bootstrap`` …), as the API's keywords and the server's body name them.
    """

    generations: tuple[str, ...] = option(
        (),
        "Generation to evaluate (repeatable; default: the spec's active one).",
        flags=("--generation", "-g"),
    )
    channels: tuple[str, ...] = option(
        (),
        "vector (default), lexical (BM25 over the generation's text, no model) or hybrid (RRF of both); "
        "repeatable: each channel with each --generation is a run.",
        flags=("--channel",),
    )
    variants: tuple[str, ...] = option(
        (),
        "A variant the specification declares (variants:), evaluated as a run of its name after the "
        "--channel/--generation runs (repeatable).",
        flags=("--variant",),
    )
    measures: tuple[Measure, ...] = option(
        (),
        "Also report NAME@K (MAP@10, P@5, success@1, …) for every case, at depth K (repeatable).",
        flags=("--measure",),
    )
    max_drop: Mapping[str, float] = option(
        {},
        "NAME=X: fail (exit 1) when the mean of measure NAME (recall, MRR, nDCG, MAP@10, P@5, success@1…) fell "
        "by more than X; NAME=X@TAG gates the slice of cases tagged TAG, NAME=X@* every slice (repeatable; "
        "--max-recall-drop X is --max-drop recall=X).",
    )
    baseline: str | None = option(
        None,
        "A previous report (--output) to compare with; its corpus digest must match.",
        kind=str,
    )
    allow_stale: bool = option(
        False,
        "Measure an incomplete or stale generation instead of refusing (recorded in the report).",
    )
    holes: str = option(
        "bound",
        "How a drop gate treats holes (unjudged rows in a top k): bound (default) -- a gate failing on its "
        "mean is inconclusive (exit 4) while the holes that could plausibly be relevant could flip it; misses -- "
        "holes count as not relevant (trec_eval's convention), never inconclusive.",
        choices=HOLE_POLICIES,
    )
    min_kappa: float = option(
        0.6,
        "A model judge's grades (ptah corpus judge-model) may move the plausible relevant holes only when its "
        "Cohen's kappa with the person's random sample of holes is at least this (and 20 or more sampled holes were "
        "judged by both); below it they are reported and change nothing.",
        kind=float,
        low=-1,
        high=1,
    )
    excerpts: bool = option(
        False,
        "Record the first words of each ranked row (its judging text, cut to 100 characters) in the report, for "
        "the pages that show them beside the key; --html and --save html=PATH set it (a JSON report quotes no row "
        "text otherwise).",
        served=False,
    )
    max_p95_ms: float | None = option(
        None,
        "Fail (exit 1) when a run's 95th percentile time per query (every stage, milliseconds) exceeds this; "
        "times are reported either way.",
        kind=float,
        low=0,
    )
    correction: str = option(
        "holm",
        "How the family of per-slice tests (every run x slice x measure of a comparison) is corrected for "
        "testing many at once: holm (Holm's step-down method, default) or none.",
        choices=("holm", "none"),
    )
    record_run: str | None = option(
        None,
        "Write the rankings each outside retriever returned (a run of the retriever channel) to this "
        "file, as JSON Lines that options: {run: FILE} replays exactly; the report pins their digest.",
        kind=str,
        served=False,
    )  # a file on the server's machine is no client's to name
    search: SearchOptions = EXACT
    fusion: Fusion = Fusion()
    statistics: StatisticsSettings = StatisticsSettings()
    fail_on_stale_judgements: bool = option(
        False,
        "Fail (exit 1) when a judgement of the corpus's record (NAME.judged.yaml) was made on a row whose "
        "text changed since; they are listed either way.",
        served=False,
    )  # a registered corpus has no record

    def __post_init__(self) -> None:
        check_options(self)
        if not self.channels and not self.variants:
            object.__setattr__(self, "channels", (VECTOR,))
        drops = check_thresholds(self.max_drop, self.baseline is not None)
        object.__setattr__(self, "max_drop", MappingProxyType(drops))
        extra = _measures([*self.measures, *(gate_key(name)[0] for name in drops)])
        object.__setattr__(self, "measures", tuple(m for m in extra if m not in DEFAULT_MEASURES))

    @classmethod
    def of(cls, **options: Any) -> EvaluationRequest:
        """The request with these options (named as :func:`ptah.core.registry.declared` names them);
        TypeError for a name that is none of them."""
        return made(cls, options)

    @property
    def all_measures(self) -> tuple[Measure, ...]:
        """Every measure the runs report: the defaults, then the extra ones in the order asked."""
        return (*DEFAULT_MEASURES, *self.measures)
