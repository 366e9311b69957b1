"""Index search, a mode of the vector channel: what a generation's HNSW index answers, measured as
served.

* ``index`` -- each case's ranking is what the index answers (``ORDER BY
  embedding <=> query LIMIT n`` with ``SET LOCAL hnsw.ef_search``); a store
  without a vector index, or a generation never indexed, is refused with
  :class:`CapabilityUnavailable` (exit 3), never answered exactly instead;
* ``both`` -- the cases are measured on the index's rankings, and each case
  and the means also carry the exact search's measures, the deltas
  (index - exact) and the **ANN recall**.

ANN recall of a case = |hits| / |exact top k|, where exact top k is the exact
ranking cut at the case's depth (fewer when the generation has fewer rows)
and a hit is a key of the index's top k that is in the exact top k or scores
(exactly) at least the exact k-th score -- a row tied with the cutoff is as
good an answer. N/A when the exact top k is empty.

The index search reads the same snapshot as the exact search: the snapshot
that read the vectors is shared (``snapshot(like=…)``) before it ends.
Each query asks the index for ``max(depth, ef_search)`` rows (an HNSW scan
returns at most ``ef_search``); they are re-ordered by ptah's rule (score
descending, ties by key ascending). A missed required key is placed within
those candidates, else "not in the top ef_search".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ptah.core.corpus import Case
from ptah.core.errors import CapabilityUnavailable
from ptah.core.measures import Measure, mean_of
from ptah.core.parts import CaseAnn, RunAnn, RunGeneration, Search, SearchIndex
from ptah.core.ranking import find_ties, top_k
from ptah.core.report import CaseResult, Run, make_run, measure_case, ranking_depth
from ptah.core.request import VECTOR, SearchOptions
from ptah.services.channels.registry import CHANNELS


def check_search(
    project,
    options: SearchOptions,
    channels: Sequence[str] = (),
    generations: Sequence[str] | None = None,
) -> None:
    """Refuse, before any work, index search where it cannot be what was asked for (exit 3).

    A store without a vector index has none to search (unless every generation
    of ``generations`` is external: those search the table's own index); and
    the hybrid channel fuses the exact vector ranking, so it cannot honour an
    index search. The lexical channel is exact by nature and is measured as
    such beside the index-searched vector runs.
    """
    whole = [name for name in channels if getattr(CHANNELS.get(name), "whole_ranking", False)]
    if options.uses_index and whole:
        raise CapabilityUnavailable(
            lambda words: (
                f"{words.option('search', options.mode)} applies to the vector channel; the "
                f"{whole[0]} channel fuses the exact vector ranking, so run it with "
                f"{words.option('search', 'exact')} (or evaluate the index on "
                f"{words.option('channels', 'vector')})."
            )
        )
    if not options.uses_index:
        return
    if generations is not None and all(
        project.spec.generations[name].vectors is not None for name in generations
    ):
        # external generations only: each searches its table's own index (ptah.services.project)
        return
    if options.uses_index and not project.store_capabilities.vector_index:
        raise CapabilityUnavailable(
            lambda words: (
                f"{words.option('search', options.mode)} needs a vector index, and the SQLite store "
                "has none; keep the generations in PostgreSQL with pgvector (store: postgresql://…) "
                f"and {words.index('NAME')}, or evaluate with {words.option('search', 'exact')}."
            )
        )


def hold_index(project, store, snapshot, generation, options: SearchOptions) -> IndexSearch | None:
    """For index modes: check the generation has an HNSW index and pin a second transaction on
    ``snapshot``'s state.

    Call it while ``snapshot`` is open; None for exact search. Raises
    :class:`CapabilityUnavailable` (exit 3) when the generation has no index.
    """
    if not options.uses_index:
        return None
    check_search(project, options)
    identity = generation.identity.identity
    index = snapshot.index(identity)
    if index is None:
        raise CapabilityUnavailable(
            lambda words: (
                f'generation "{generation.name}" has no HNSW index in {store.where}; '
                f"{words.index(generation.name)}, or evaluate with {words.option('search', 'exact')}."
            )
        )
    stack = ExitStack()
    shared = stack.enter_context(store.snapshot(like=snapshot))
    return IndexSearch(identity, index, options, shared, stack)


@dataclass
class IndexSearch:
    """An index search pinned to the snapshot the exact search read.

    The exact search runs it first and then watches the exact scores of the
    keys it returned; :meth:`close` ends the pinned transaction and
    :meth:`run` makes the run.
    """

    identity: str
    index: dict
    options: SearchOptions
    # a store snapshot shared with the exact search, or a table's index (both answer nearest)
    snapshot: Any
    stack: ExitStack
    results: list[CaseResult] = field(default_factory=list)
    exact_scores: list[dict[str, float]] = field(
        default_factory=list
    )  # per case: the exact score of its index top k
    seconds: float = 0.0

    def close(self) -> None:
        self.stack.close()

    __del__ = close  # an evaluation that failed before run() still ends the pinned transaction

    def search(
        self, cases: Sequence[Case], queries: np.ndarray, measures: Sequence[Measure]
    ) -> list[CaseResult]:
        """Search the index for these cases and measure its rankings (kept for :meth:`run`; returned
        too).

        With mode both, :meth:`run` also needs each case's exact score of every
        key of its index ranking: the exact search sets :attr:`exact_scores`
        (:func:`ptah.services.channels.exact.search_exact`).
        """
        clock = time.perf_counter()
        ef_search = self.options.effective_ef_search
        depths = [max(ranking_depth(case, measures), ef_search) for case in cases]
        found = self.snapshot.nearest(self.identity, queries, depths, ef_search)
        results = [
            _measured(case, candidates, measures, ef_search)
            for case, candidates in zip(cases, found)
        ]
        self.results.extend(results)
        self.seconds += time.perf_counter() - clock
        return results

    def run(
        self, generation: RunGeneration, exact: list[CaseResult], measures: Sequence[Measure]
    ) -> Run:
        """The index search's run (mode both: with the exact comparison)."""
        self.close()
        search = Search(
            VECTOR,
            self.options.mode,
            "cosine",
            SearchIndex.from_dict(self.index),
            # an IVFFlat index (a table's own) searches its probes instead
            self.options.effective_ef_search if self.index["kind"] == "hnsw" else None,
        )
        if self.options.mode != "both":
            return make_run(generation, search, self.results, measures)
        results, ann = _compare_with_exact(self.results, exact, self.exact_scores, measures)
        return make_run(generation, search, results, measures, ann=ann)


def _measured(
    case: Case, candidates: list[tuple[str, float]], measures: Sequence[Measure], ef_search: int
) -> CaseResult:
    if candidates:
        keys = [key for key, _ in candidates]
        values = np.array([score for _, score in candidates], dtype=np.float64)
        ordered = top_k(values, keys, len(candidates))
        ties = find_ties(values, keys, case.k, case.expected_keys())
    else:
        ordered, ties = [], find_ties(np.empty(0), [], case.k, case.expected_keys())
    positions = {key: rank for rank, (key, _) in enumerate(ordered, start=1)}
    return measure_case(
        case, ordered, measures=measures, searched=ef_search, rank_of=positions.get, ties=ties
    )


def ann_recall(
    index_top: list[str], exact_top: list[tuple[str, float]], exact_score: dict[str, float]
) -> float | None:
    """Share of the exact top k that the index returned; a row tied with the exact cutoff counts
    (module docs)."""
    if not exact_top:
        return None
    wanted = {key for key, _ in exact_top}
    cutoff = exact_top[-1][1]
    hits = sum(
        1
        for key in dict.fromkeys(index_top)
        if key in wanted or exact_score.get(key, -np.inf) >= cutoff
    )
    return min(hits, len(exact_top)) / len(exact_top)


def _compare_with_exact(
    results: list[CaseResult],
    exact: list[CaseResult],
    exact_scores: list[dict[str, float]],
    measures: Sequence[Measure],
) -> tuple[list[CaseResult], RunAnn]:
    """Each case with its ``ann`` (recall, exact measures, deltas, missed keys), and the means'
    ``ann``.

    ``exact_scores[i]`` holds case i's exact score of each key of its index top k that is a row.
    """
    recalls: list[float | None] = []
    with_ann = []
    for index_result, exact_result, exact_score in zip(results, exact, exact_scores):
        exact_top = [(r.key, r.score) for r in exact_result.ranking]
        index_top = list(index_result.keys)
        recall = ann_recall(index_top, exact_top, exact_score)
        recalls.append(recall)
        values = {m.key: exact_result.values[str(m)] for m in measures}
        ann = CaseAnn(
            recall,
            MappingProxyType(values),
            MappingProxyType(
                {m.key: _delta(index_result.values[str(m)], values[m.key]) for m in measures}
            ),
            tuple(key for key, _ in exact_top if key not in set(index_top)),
        )
        with_ann.append(index_result.with_ann(ann))
    exact_means = {m.key: mean_of(r.values[str(m)] for r in exact) for m in measures}
    index_means = {m.key: mean_of(r.values[str(m)] for r in results).value for m in measures}
    return with_ann, RunAnn(
        mean_of(recalls),
        MappingProxyType(exact_means),
        MappingProxyType(
            {m.key: _delta(index_means[m.key], exact_means[m.key].value) for m in measures}
        ),
    )


def _delta(index: float | None, exact: float | None) -> float | None:
    return None if index is None or exact is None else index - exact
