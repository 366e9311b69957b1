"""Vector search through a pgvector HNSW index: building the index, and measuring it against exact search.

``ptah inference index NAME --hnsw [--m M --ef-construction E]`` builds (or
replaces) a generation's HNSW index over cosine distance
(:func:`build_index`); only the pgvector store has one.

``evaluate --search MODE``:

* ``exact`` (the default) -- every query scored against every row in memory
  (:mod:`ptah.services.evaluate`); works on every store;
* ``index`` -- each case's ranking is what the generation's HNSW index
  answers (``ORDER BY embedding <=> query LIMIT n`` with ``SET LOCAL
  hnsw.ef_search``), i.e. the search a team serves; a store without an index
  (the SQLite store, or a generation never indexed) is refused with
  :class:`CapabilityUnavailable` (exit 3), never answered exactly instead;
* ``both`` -- the cases are measured on the index's rankings, and each case
  and the means also carry the exact search's measures, the deltas
  (index - exact) and the **ANN recall**: what share of the exact top k the
  index returned.

ANN recall of a case = |hits| / |exact top k|, where exact top k is the exact
ranking cut at the case's depth (fewer when the generation has fewer rows)
and a hit is a key of the index's top k that is in the exact top k or scores
(exactly) at least the exact k-th score -- a row tied with the cutoff is as
good an answer. N/A when the exact top k is empty. Means carry explicit
denominators, as every mean does.

The index search reads the same snapshot as the exact search: the snapshot
that read the vectors is shared (``snapshot(like=…)``) before it ends.

Index rankings: each query asks the index for ``max(k, ef_search)`` rows (an
HNSW scan returns at most ``ef_search``); they are re-ordered by ptah's rule
(score descending, ties by key ascending) and cut at k. A missed required key
is placed within those candidates, else "not in the top ef_search".
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ptah.core.corpus import Case
from ptah.core.errors import CapabilityUnavailable, InputError, UnknownGeneration
from ptah.core.metrics import evaluate_case, mean_of
from ptah.core.ranking import find_ties, top_k
from ptah.core.outcomes import MEASURES, CaseOutcome, mean_dict, run_dict

SEARCH_MODES = ("exact", "index", "both")
DEFAULT_EF_SEARCH = 40  # pgvector's own default
EF_SEARCH_RANGE = range(1, 1001)  # pgvector's limits for hnsw.ef_search
DEFAULT_M, M_RANGE = 16, range(2, 101)  # pgvector's defaults and limits for an HNSW index
DEFAULT_EF_CONSTRUCTION, EF_CONSTRUCTION_RANGE = 64, range(4, 1001)


@dataclass(frozen=True)
class IndexSummary:
    """What ``ptah inference index`` built."""

    generation: str
    identity: str
    index: dict
    vectors: int
    seconds: float

    def as_dict(self) -> dict:
        return {"generation": self.generation, "identity": self.identity, "index": dict(self.index),
                "vectors": self.vectors, "seconds": self.seconds}


def build_index(project, name: str | None = None, *, m: int = DEFAULT_M,
                ef_construction: int = DEFAULT_EF_CONSTRUCTION) -> IndexSummary:
    """Build (or replace) generation ``name``'s HNSW cosine index, holding its build lock meanwhile.

    Raises :class:`InputError` (exit 2) for parameters pgvector refuses
    (``m`` 2..100, ``ef_construction`` 4..1000 and at least ``2 * m``),
    :class:`CapabilityUnavailable` (exit 3) on the SQLite store,
    :class:`UnknownGeneration` (exit 2) for a generation never built, and
    :class:`StoreUnavailable` (exit 3) while a build of it runs.
    """
    for option, value, allowed in (("--m", m, M_RANGE), ("--ef-construction", ef_construction, EF_CONSTRUCTION_RANGE)):
        if isinstance(value, bool) or value not in allowed:
            raise InputError(f"{option} must be a whole number from {allowed.start} to {allowed.stop - 1}, not {value!r}.")
    if ef_construction < 2 * m:
        raise InputError(f"--ef-construction ({ef_construction}) must be at least twice --m ({m}); pgvector requires it.")
    if not project.store_capabilities.vector_index:
        raise CapabilityUnavailable(
            "the SQLite store has no vector index; keep the generations in PostgreSQL with pgvector "
            "(store: postgresql://…) to build one."
        )
    started = time.perf_counter()
    generation = project.generation(name)
    identity = generation.identity.identity
    store = project.store()
    if store is None or store.generation(identity) is None:
        raise UnknownGeneration(
            f'generation "{generation.name}" has not been built with its current settings (identity {identity}); '
            f"run `ptah inference build {generation.name}` first."
        )
    with store.build_lock(identity, generation.name):
        index = store.create_hnsw_index(identity, m, ef_construction)
        with store.snapshot() as snapshot:
            vectors = snapshot.vector_count(identity)
    return IndexSummary(generation.name, identity, index, vectors, round(time.perf_counter() - started, 3))


@dataclass(frozen=True)
class SearchOptions:
    """How evaluate searches: ``mode`` (exact, index, both) and the HNSW ``ef_search`` (None: 40).

    Raises :class:`InputError` (exit 2) for an unknown mode, an ``ef_search``
    outside 1..1000, or an ``ef_search`` given with ``exact``.
    """

    mode: str = "exact"
    ef_search: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise InputError(f"--search must be one of {', '.join(SEARCH_MODES)}, not {self.mode!r}.")
        if self.ef_search is not None:
            if self.mode == "exact":
                raise InputError("--ef-search applies to index search; add --search index or --search both.")
            if isinstance(self.ef_search, bool) or self.ef_search not in EF_SEARCH_RANGE:
                raise InputError(f"--ef-search must be a whole number from 1 to 1000, not {self.ef_search!r}.")

    @property
    def uses_index(self) -> bool:
        return self.mode != "exact"

    @property
    def effective_ef_search(self) -> int:
        return DEFAULT_EF_SEARCH if self.ef_search is None else self.ef_search


EXACT = SearchOptions()


def check_search(project, options: SearchOptions, channels: list[str] | None = None) -> None:
    """Refuse, before any work, index search where it cannot be what was asked for.

    The SQLite store has no vector index at all; and the hybrid channel fuses
    the exact vector ranking, so it cannot honour an index search
    (:class:`CapabilityUnavailable`, exit 3). The lexical channel is exact by
    nature and is measured as such beside the index-searched vector runs.
    """
    if options.uses_index and "hybrid" in (channels or ()):
        raise CapabilityUnavailable(
            f"--search {options.mode} applies to the vector channel; the hybrid channel fuses the exact vector "
            "ranking, so run it with --search exact (or evaluate the index on --channel vector)."
        )
    if options.uses_index and not project.store_capabilities.vector_index:
        raise CapabilityUnavailable(
            f"--search {options.mode} needs a vector index, and the SQLite store has none; keep the generations "
            "in PostgreSQL with pgvector (store: postgresql://…) and build one with `ptah inference index NAME "
            "--hnsw`, or evaluate with --search exact."
        )


def hold_index(project, store, snapshot, generation, options: SearchOptions) -> "IndexSearch | None":
    """For index modes: check the generation has an HNSW index and pin a second transaction on ``snapshot``'s state.

    Call it while ``snapshot`` is open; None for ``exact``. Raises
    :class:`CapabilityUnavailable` (exit 3) when the generation has no index.
    """
    if not options.uses_index:
        return None
    check_search(project, options)
    identity = generation.identity.identity
    index = snapshot.index(identity)
    if index is None:
        raise CapabilityUnavailable(
            f'generation "{generation.name}" has no HNSW index in {store.where}; build one with '
            f"`ptah inference index {generation.name} --hnsw`, or evaluate with --search exact."
        )
    stack = ExitStack()
    shared = stack.enter_context(store.snapshot(like=snapshot))
    return IndexSearch(identity, index, options, shared, stack)


@dataclass
class IndexSearch:
    """An index search pinned to the snapshot the exact search read.

    The exact search hands it each block of cases it scored
    (:meth:`search_block`), so the index's rankings are held against exact
    scores without keeping every case's scores; :meth:`close` ends the pinned
    transaction and :meth:`run` makes the report run.
    """

    identity: str
    index: dict
    options: SearchOptions
    snapshot: object
    stack: ExitStack
    outcomes: list[CaseOutcome] = field(default_factory=list)
    exact_scores: list[dict[str, float]] = field(default_factory=list)  # per case: the exact score of its index top k
    seconds: float = 0.0

    def close(self) -> None:
        self.stack.close()

    __del__ = close  # an evaluation that failed before run() still ends the pinned transaction

    def search_block(self, cases: Sequence[Case], queries: np.ndarray, scores: np.ndarray,
                     columns: Mapping[str, int]) -> None:
        """Search the index for these cases; ``scores`` are their exact scores (cases x rows, columns by key)."""
        clock = time.perf_counter()
        ef_search = self.options.effective_ef_search
        found = self.snapshot.nearest(self.identity, queries, [max(case.k, ef_search) for case in cases], ef_search)
        for case, candidates, row in zip(cases, found, scores):
            outcome = _outcome(case, candidates)
            self.outcomes.append(outcome)
            if self.options.mode == "both":
                self.exact_scores.append(
                    {key: float(row[columns[key]]) for key, _ in outcome.ranked if key in columns}
                )
        self.seconds += time.perf_counter() - clock

    def run(self, info: dict, exact: list[CaseOutcome], timings: dict) -> dict:
        """The report run of the index search (``both``: with the exact comparison); records its time."""
        self.close()
        timings["index_search"] = self.seconds
        ef_search = self.options.effective_ef_search
        search = {"channel": "vector", "mode": self.options.mode, "similarity": "cosine",
                  "index": dict(self.index), "ef_search": ef_search}
        run = run_dict(info, search, self.outcomes, searched=ef_search)
        if self.options.mode == "both":
            _compare_with_exact(run, self.outcomes, exact, self.exact_scores)
        return run


def _outcome(case, candidates: list[tuple[str, float]]) -> CaseOutcome:
    if candidates:
        candidate_keys = [key for key, _ in candidates]
        candidate_scores = np.array([score for _, score in candidates], dtype=np.float64)
        ordered = top_k(candidate_scores, candidate_keys, len(candidates))
        ties = find_ties(candidate_scores, candidate_keys, case.k, case.expected_keys())
    else:
        ordered, ties = [], find_ties(np.empty(0), [], case.k, case.expected_keys())
    positions = {key: rank for rank, (key, _) in enumerate(ordered, start=1)}
    metrics = evaluate_case(case, ordered[: case.k], positions.get)
    return CaseOutcome(case, tuple(ordered[: case.k]), metrics, ties)


def ann_recall(index_top: list[str], exact_top: list[tuple[str, float]], exact_score: dict[str, float]) -> float | None:
    """Share of the exact top k that the index returned; a row tied with the exact cutoff counts (module docs)."""
    if not exact_top:
        return None
    wanted = {key for key, _ in exact_top}
    cutoff = exact_top[-1][1]
    hits = sum(1 for key in dict.fromkeys(index_top) if key in wanted or exact_score.get(key, -np.inf) >= cutoff)
    return min(hits, len(exact_top)) / len(exact_top)


def _compare_with_exact(run: dict, outcomes: list[CaseOutcome], exact: list[CaseOutcome],
                        exact_scores: list[dict[str, float]]) -> None:
    """Add each case's ``ann`` (recall, exact measures, deltas, missed keys) and the means' ``aggregates.ann``.

    ``exact_scores[i]`` holds case i's exact score of each key of its index top k that is a row.
    """
    recalls: list[float | None] = []
    for case_dict, index_outcome, exact_outcome, exact_score in zip(run["cases"], outcomes, exact, exact_scores):
        exact_top = list(exact_outcome.ranked[: exact_outcome.case.k])
        index_top = [key for key, _ in index_outcome.ranked]
        recall = ann_recall(index_top, exact_top, exact_score)
        recalls.append(recall)
        measures = {name: exact_outcome.measure(name) for name in MEASURES}
        case_dict["ann"] = {
            "recall": recall,
            "exact": measures,
            "delta": {name: _delta(index_outcome.measure(name), measures[name]) for name in MEASURES},
            "missed": [key for key, _ in exact_top if key not in set(index_top)],
        }
    exact_means = {name: mean_dict(mean_of(o.measure(name) for o in exact)) for name in MEASURES}
    run["aggregates"]["ann"] = {
        "recall": mean_dict(mean_of(recalls)),
        "exact": exact_means,
        "delta": {name: _delta(run["aggregates"][name]["value"], exact_means[name]["value"]) for name in MEASURES},
    }


def _delta(index: float | None, exact: float | None) -> float | None:
    return None if index is None or exact is None else index - exact
