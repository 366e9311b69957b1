"""The main job: evaluate generations on a corpus, compare with a baseline, judge the gates.

For each generation asked for (the spec's active one by default):

1. read the generation from one store snapshot -- its record, its rows' text
   digests and its vectors together, so a build running meanwhile is seen as
   of one commit;
2. verify it against the source (coverage and freshness); an incomplete or
   stale generation is refused (``StaleGeneration``, exit 3) unless
   ``allow_stale``, and the report records which;
3. check that every key the corpus names is a row of the generation; a key
   missing from the table, or excluded by the filter, is an ``UnknownKey``
   (exit 2) saying which;
4. embed the queries -- from the store's query cache when all are there, so a
   warm evaluate neither loads the model nor imports torch;
5. score the queries against every row (cosine, exact), a block of queries at
   a time so memory does not grow with cases x rows (:mod:`ptah.core.scoring`),
   keep each case's top k (score descending, ties by key ascending), and
   measure it.

Then the baseline comparison and the gates (``ptah.core.baseline``).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ptah import __version__
from ptah.adapters.files import read_bounded, write_text_atomically
from ptah.adapters.report_json import parse_report
from ptah.core.baseline import check_comparable, check_thresholds, compare, gates, read_report
from ptah.core.comparison import StatisticsSettings, against_baseline, compare_runs
from ptah.core.corpus import Corpus
from ptah.core.errors import InputError, ReportError, StaleGeneration, UnknownKey
from ptah.core.metrics import evaluate_case
from ptah.core.ranking import key_columns, rank_many
from ptah.core.outcomes import CaseOutcome, report_dict, run_dict
from ptah.core.scoring import score_blocks
from ptah.core.spec import GenerationSettings
from ptah.services.channels import LEXICAL, Fusion, measure_runs, plan_runs
from ptah.services.index_search import EXACT, SearchOptions, check_search, hold_index
from ptah.services.project import Generation, Project, normalize_rows
from ptah.services.search import embed_queries
from ptah.services.verify import VerifyResult, verify_stored

MAX_UNKNOWN_LISTED = 10
MAX_BASELINE_BYTES = 1024 * 1024 * 1024  # a report of 50,000 cases at k=100 is about 450 MB


@dataclass
class Measured:
    """One generation evaluated: its report run and what it cost."""

    run: dict
    timings: dict
    keys: list[str] | None = None  # the rows scored, and their scores block after block, for fusion
    blocks: Callable[[], Iterator[tuple[int, int, np.ndarray]]] | None = None


def load_baseline(path: str | os.PathLike) -> dict:
    """Read a baseline report; ``ReportError`` (exit 2, naming the field) when it is not a ptah report that
    matches the report schema and agrees with itself (``ptah.adapters.report_json``, ``ptah.core.report_checks``)."""
    path = str(path)
    try:
        text = read_bounded(path, limit=MAX_BASELINE_BYTES, what="baseline report").decode("utf-8")
    except InputError as exc:  # missing, not a regular file, over the limit, unreadable
        raise ReportError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: cannot be read: {exc}") from None
    return read_report(parse_report(text, path), path)


def evaluate(
    project: Project,
    corpus: Corpus,
    names: list[str | None] | None = None,
    *,
    baseline_path: str | None = None,
    thresholds: dict[str, float | None] | None = None,
    allow_stale: bool = False,
    embedder=None,
    channels: list[str] | None = None,
    fusion: Fusion = Fusion(),
    statistics: StatisticsSettings = StatisticsSettings(),
    search: SearchOptions = EXACT,
) -> dict:
    """Evaluate ``names`` (default: the active generation) on ``corpus``; return the report.

    ``channels`` (default ``["vector"]``) times ``names`` are the runs, the
    first the reference (:mod:`ptah.services.channels`); with two runs or more
    the report's ``comparison`` holds each against the reference
    (:mod:`ptah.core.comparison`), drawn as ``statistics`` says.
    ``embedder`` replaces the generations' models (tests). Raises typed errors
    for bad input (exit 2) and for what cannot be measured (exit 3); a
    negative verdict is not an error: it is the report's ``verdict``.
    ``search`` chooses exact or index search (:mod:`ptah.services.index_search`).
    """
    started = time.perf_counter()
    baseline = load_baseline(baseline_path) if baseline_path else None
    if baseline is not None:
        check_comparable(corpus.digest, baseline, baseline_path)
    given = check_thresholds(thresholds or {}, baseline is not None)
    check_search(project, search, channels)
    plans = plan_runs(project.spec, names, channels)
    measured = measure_runs(
        project, corpus, plans, fusion=fusion, check_keys=_check_keys,
        measure_vector=lambda generation: _measure(project, corpus, generation, allow_stale, embedder, search),
    )
    runs = [m.run for m in measured]
    comparisons = [
        compare(run, baseline["runs"][0])
        | {"against": run["generation"]["name"], "significance": against_baseline(baseline["runs"][0], run, statistics)}
        for run in runs
    ] if baseline else []
    verdicts = [
        gate for index, run in enumerate(runs) for gate in gates(run, comparisons[index] if baseline else None, given)
    ]
    timings = {"total": time.perf_counter() - started}
    for m in measured:
        for step, seconds in m.timings.items():
            timings[step] = timings.get(step, 0.0) + seconds
    return report_dict(
        corpus,
        runs,
        baseline={"path": baseline_path, "digest": baseline["corpus"]["digest"], "comparisons": comparisons} if baseline else None,
        gates=verdicts,
        comparison=compare_runs(runs, statistics),
        timings=timings,
        environment=environment(project.spec.generation(plan.generation) for plan in plans if plan.channel != LEXICAL),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _measure(project: Project, corpus: Corpus, generation: Generation, allow_stale: bool, embedder,
             search_options: SearchOptions = EXACT) -> Measured:
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    identity = generation.identity.identity
    store = project.store()
    if store is None:
        raise StaleGeneration(_never_built(generation))
    with store.snapshot() as snapshot:
        record = snapshot.generation(identity)
        if record is None:
            raise StaleGeneration(_never_built(generation))
        stored = snapshot.digests(identity)
        matrix = snapshot.matrix(identity)
        index_search = hold_index(project, store, snapshot, generation, search_options)  # None for exact search
    timings["load_vectors"] = time.perf_counter() - clock

    clock = time.perf_counter()
    verification = verify_stored(project, generation, built=True, stored=stored)
    timings["verify"] = time.perf_counter() - clock
    if not verification.ok and not allow_stale:
        raise StaleGeneration(_stale_message(verification))

    keys = list(matrix.keys)
    _check_keys(project, corpus, set(keys))
    vectors = matrix.vectors
    if not record.settings.get("normalize", True):
        normalize_rows(vectors)

    clock = time.perf_counter()
    queries, cached = _query_vectors(project, generation, corpus, store, embedder, vectors.shape[1])
    timings["embed_queries"] = time.perf_counter() - clock

    clock = time.perf_counter()
    columns = key_columns(keys)
    outcomes: list[CaseOutcome] = []
    try:
        for start, stop, scores in score_blocks(queries, vectors):
            cases = corpus.cases[start:stop]
            outcomes.extend(_vector_outcomes(cases, keys, columns, scores))
            if index_search is not None:  # the index's rankings of the same cases, held against these scores
                index_search.search_block(cases, queries[start:stop], scores, columns)
    finally:
        if index_search is not None:
            index_search.close()
    timings["search"] = time.perf_counter() - clock - (index_search.seconds if index_search is not None else 0.0)

    info = {
        "name": generation.name,
        "identity": identity,
        "model": record.model,
        "settings": dict(record.settings),
        "dimension": int(vectors.shape[1]),
        "rows": len(keys),
        "model_digest": record.model_digest,
        "versions": dict(record.library_versions),
        "verification": verification.as_dict() | {"allow_stale": allow_stale},
        "queries_from_cache": cached,
    }
    search = {"channel": "vector", "mode": "exact", "similarity": "cosine"}
    blocks = partial(score_blocks, queries, vectors)
    if index_search is not None:  # the index's rankings, measured (and with --search both, compared with exact)
        return Measured(index_search.run(info, outcomes, timings), timings, keys, blocks)
    return Measured(run_dict(info, search, outcomes, searched=len(keys)), timings, keys, blocks)


def _vector_outcomes(cases, keys: list[str], columns: dict[str, int], scores: np.ndarray) -> list[CaseOutcome]:
    """Each case measured on its row of ``scores`` (cases x rows): its top k, ties, and where missed keys ranked."""
    rankings = rank_many(scores, keys, [case.k for case in cases], expected=[case.expected_keys() for case in cases],
                         asked=[case.required for case in cases], columns=columns)
    return [
        CaseOutcome(case, tuple(ranking.ranked), evaluate_case(case, ranking.ranked, ranking.ranks.get), ranking.ties)
        for case, ranking in zip(cases, rankings)
    ]


def _never_built(generation: Generation) -> str:
    return (
        f'generation "{generation.name}" has not been built with its current settings '
        f"(identity {generation.identity.identity}); run `ptah inference build {generation.name}` first."
    )


def _stale_message(result: VerifyResult) -> str:
    parts = []
    if result.missing:
        parts.append(f"{result.missing} of {result.rows} rows have no vector (e.g. {', '.join(result.missing_keys[:3])})")
    if result.stale:
        parts.append(f"{result.stale} vectors are stale (e.g. {', '.join(result.stale_keys[:3])})")
    if result.orphans:
        parts.append(f"{result.orphans} vectors belong to rows gone from the source (e.g. {', '.join(result.orphan_keys[:3])})")
    return (
        f'generation "{result.generation}" is not complete and fresh: {"; ".join(parts)}. '
        f"Run `ptah inference build {result.generation}`, or pass --allow-stale to measure it as it is."
    )


def _check_keys(project: Project, corpus: Corpus, keys: set[str]) -> None:
    """Every expected key must be a row of the generation; say which are not, and why."""
    named: dict[str, list[str]] = defaultdict(list)
    for case in corpus.cases:
        for key in sorted(case.expected_keys() - keys):
            named[key].append(case.id)
    if not named:
        return
    status = project.source.lookup(list(named))
    # A key whose row is in the source but has no vector (an incomplete generation measured
    # with --allow-stale) is a miss, not a bad corpus.
    unknown = {key: cases for key, cases in named.items() if status.get(key) != "ok"}
    if not unknown:
        return
    lines = []
    for key in sorted(unknown)[:MAX_UNKNOWN_LISTED]:
        where = ", ".join(f'"{c}"' for c in unknown[key])
        if status.get(key) == "filtered":
            lines.append(
                f"key {key!r} (case {where}) is a row the filter excludes; a query whose answer is a row your filter "
                "excludes measures the filter, not the model"
            )
        else:
            lines.append(f"key {key!r} (case {where}) is not in table {project.spec.source.table}")
    more = len(unknown) - len(lines)
    suffix = f"\n... and {more} more unknown keys" if more > 0 else ""
    raise UnknownKey(f"{corpus.path}: " + f"\n{corpus.path}: ".join(lines) + suffix)


def _query_vectors(project: Project, generation: Generation, corpus: Corpus, store, embedder, dimension: int):
    """Unit-length query vectors in case order, from the cache where possible. Returns (vectors, cached count).

    The model is asked only for the queries the cache lacks, through the same
    step as ``ptah inference search`` (so both score a query alike), and the
    cache keeps those unit-length vectors.
    """
    identity = generation.identity.identity
    texts = list(dict.fromkeys(case.query for case in corpus.cases))
    found = store.cached_queries(identity, texts)
    missing = [text for text in texts if text not in found]
    if missing:
        model = embedder if embedder is not None else project.embedder(generation.settings)
        fresh = embed_queries(model, generation, missing, dimension)
        computed = {text: fresh[i] for i, text in enumerate(missing)}
        store.cache_queries(identity, computed)
        found.update(computed)
    vectors = np.stack([np.asarray(found[case.query], dtype=np.float32) for case in corpus.cases])
    return np.ascontiguousarray(vectors), len(texts) - len(missing)


def environment(embedded: Iterable[GenerationSettings] = ()) -> dict:
    """Versions and hardware, read without importing torch: the libraries of the embedders ``embedded`` use."""
    from ptah.adapters.embedders.registry import REGISTRY

    return {
        "ptah": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        **REGISTRY.versions_of(embedded),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "cpus": os.cpu_count(),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_report(report: dict, path: str | os.PathLike) -> None:
    """Write the report as indented JSON, atomically (a temporary sibling, then a rename)."""
    write_text_atomically(path, json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
