"""What an evaluation is asked to do: one value, checked when it is made.

:class:`EvaluationRequest` carries the generations, channels, extra measures,
drop gates, baseline, search mode, fusion and statistics of one evaluation;
the CLI builds one from its options and the Python API from keyword
arguments, and both hand it to the same use case
(:func:`ptah.services.evaluate.evaluate`). Every check that needs no file and
no database happens here (exit 2 through :class:`InputError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from ptah.core.baseline import check_thresholds
from ptah.core.comparison import StatisticsSettings
from ptah.core.errors import InputError
from ptah.core.fusion import DEFAULT_RRF_DEPTH, DEFAULT_RRF_K, check_fusion
from ptah.core.measures import DEFAULT_MEASURES, Measure
from ptah.core.visible import abbreviated

VECTOR, LEXICAL, HYBRID = "vector", "lexical", "hybrid"
SEARCH_MODES = ("exact", "index", "both")
DEFAULT_EF_SEARCH = 40  # pgvector's own default
EF_SEARCH_RANGE = range(1, 1001)  # pgvector's limits for hnsw.ef_search


@dataclass(frozen=True)
class Fusion:
    """How the hybrid channel fuses: the RRF constant and how deep each channel's ranking counts."""

    k: float = DEFAULT_RRF_K
    depth: int = DEFAULT_RRF_DEPTH

    def __post_init__(self) -> None:
        try:
            check_fusion(self.k, self.depth)
        except ValueError as exc:
            raise InputError(str(exc)) from None


@dataclass(frozen=True)
class SearchOptions:
    """How the vector channel searches: ``mode`` (exact, index, both) and the HNSW ``ef_search`` (None: 40)."""

    mode: str = "exact"
    ef_search: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise InputError(f"the search mode must be one of {', '.join(SEARCH_MODES)}, not {abbreviated(repr(self.mode))}.")
        if self.ef_search is not None:
            if self.mode == "exact":
                raise InputError("ef_search applies to index search; search in mode index or both.")
            if isinstance(self.ef_search, bool) or not isinstance(self.ef_search, int) or self.ef_search not in EF_SEARCH_RANGE:
                raise InputError(f"ef_search must be a whole number from 1 to 1000, not {abbreviated(repr(self.ef_search))}.")

    @property
    def uses_index(self) -> bool:
        return self.mode != "exact"

    @property
    def effective_ef_search(self) -> int:
        return DEFAULT_EF_SEARCH if self.ef_search is None else self.ef_search


EXACT = SearchOptions()


def _measures(given: Iterable[Measure | str]) -> tuple[Measure, ...]:
    result: list[Measure] = []
    for item in given:
        try:
            measure = item if isinstance(item, Measure) else Measure.parse(item)
        except ValueError as exc:
            raise InputError(f"measure: {exc}") from None
        if measure not in result:
            result.append(measure)
    return tuple(result)


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation, as asked.

    * ``generations`` -- names, in order (empty: the specification's active one);
    * ``channels`` -- ``vector``, ``lexical``, ``hybrid`` in order; each with each
      generation is a run, channel-major; the first run is the reference;
    * ``measures`` -- measures beyond the defaults (recall, MRR, nDCG at each
      case's depth), e.g. ``MAP@10``; a measure a drop gate names is measured
      too;
    * ``max_drop`` -- measure -> the largest absolute drop of its mean against
      the baseline's reference run that passes (0..1); needs ``baseline``;
    * ``baseline`` -- the path of an earlier report of the same corpus;
    * ``allow_stale`` -- measure an incomplete or stale generation instead of
      refusing it (recorded in the report);
    * ``search``, ``fusion``, ``statistics`` -- see their types;
    * ``fail_on_stale_judgements`` -- a judgement whose row's text changed
      since it was judged fails the ``stale-judgements`` gate (exit 1); it is
      listed either way.
    """

    generations: tuple[str, ...] = ()
    channels: tuple[str, ...] = (VECTOR,)
    measures: tuple[Measure, ...] = ()
    max_drop: Mapping[str, float] = field(default_factory=dict)
    baseline: str | None = None
    allow_stale: bool = False
    search: SearchOptions = EXACT
    fusion: Fusion = Fusion()
    statistics: StatisticsSettings = StatisticsSettings()
    fail_on_stale_judgements: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.generations, str) or isinstance(self.channels, str):
            raise InputError("generations and channels are lists of names, not one text")
        object.__setattr__(self, "generations", tuple(self.generations))
        object.__setattr__(self, "channels", tuple(self.channels) or (VECTOR,))
        drops = check_thresholds(dict(self.max_drop), self.baseline is not None)
        object.__setattr__(self, "max_drop", MappingProxyType(drops))
        extra = _measures([*self.measures, *drops])
        object.__setattr__(self, "measures", tuple(m for m in extra if m not in DEFAULT_MEASURES))
        if self.baseline is not None:
            object.__setattr__(self, "baseline", str(self.baseline))

    @property
    def all_measures(self) -> tuple[Measure, ...]:
        """Every measure the runs report: the defaults, then the extra ones in the order asked."""
        return (*DEFAULT_MEASURES, *self.measures)
