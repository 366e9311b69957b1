"""Retrieval channels: what each run of an evaluation searches with, named and recorded.

Channels (each run's ``search.channel``):

* ``vector`` -- a generation's vectors, exact cosine (the default; measured by
  :func:`ptah.services.evaluate.evaluate`'s vector path);
* ``lexical`` -- BM25 (:mod:`ptah.adapters.lexical`) over the text the
  generation's template renders for each source row. It needs no model and
  never imports torch: only the template is read from the generation, which
  need not have been built. Its index is kept in the store and rebuilt only
  when the text fingerprint changes;
* ``hybrid`` -- reciprocal rank fusion (:mod:`ptah.core.fusion`) of the
  lexical channel and the generation's vector channel: constant ``--rrf-k``
  (default 60), each channel contributing its top ``--rrf-depth`` rows
  (default 1000), the lexical channel only rows matching a query term. The
  vector side must be built, complete and fresh (or ``--allow-stale``), as
  for ``vector``.

Runs: every ``--channel`` (in the order given, default ``vector``) with every
``--generation`` (in the order given, default the active one), channel-major:
``--channel vector --channel lexical -g A -g B`` measures A, B, lexical:A,
lexical:B. A (channel, generation) pair named twice is measured once. The
first run is the reference of the comparison. A run's name is the
generation's for ``vector``, ``lexical:NAME`` or ``hybrid:NAME`` otherwise.

Nothing here falls back: a channel that is not one of the three, a
generation not declared (exit 2), a hybrid with no generation named or
active (exit 2), a vector side never built or stale (exit 3) are errors.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ptah.adapters import lexical
from ptah.core.corpus import Case, Corpus
from ptah.core.errors import CapabilityUnavailable, InputError, UnknownGeneration
from ptah.core.fusion import DEFAULT_RRF_DEPTH, DEFAULT_RRF_K, check_fusion, rrf_scores
from ptah.core.metrics import evaluate_case
from ptah.core.ranking import key_columns, rank_many, top_k
from ptah.core.outcomes import CaseOutcome, run_dict
from ptah.core.scoring import query_blocks
from ptah.core.spec import GenerationSettings, Spec
from ptah.services.build import text_digest
from ptah.services.project import Project

VECTOR, LEXICAL, HYBRID = "vector", "lexical", "hybrid"
CHANNELS = (VECTOR, LEXICAL, HYBRID)


@dataclass(frozen=True)
class Fusion:
    """How the hybrid channel fuses: the RRF constant and how deep each channel's ranking counts."""

    k: float = DEFAULT_RRF_K
    depth: int = DEFAULT_RRF_DEPTH

    def __post_init__(self) -> None:
        try:
            check_fusion(self.k, self.depth)
        except ValueError as exc:
            raise InputError(f"--rrf-k / --rrf-depth: {exc}") from None


@dataclass(frozen=True)
class RunPlan:
    """One run to measure: a channel over a declared generation."""

    channel: str
    generation: str

    @property
    def name(self) -> str:
        return self.generation if self.channel == VECTOR else f"{self.channel}:{self.generation}"


@dataclass
class ChannelRun:
    """One measured run: its report part and what it cost (seconds per step)."""

    run: dict
    timings: dict = field(default_factory=dict)


def plan_runs(spec: Spec, names: Sequence[str | None] | None, channels: Sequence[str] | None) -> list[RunPlan]:
    """The runs to measure, in order (see the module docs); typed errors for what does not exist."""
    channels = list(channels or [VECTOR])
    unknown = [c for c in channels if c not in CHANNELS]
    if unknown:
        raise InputError(f"unknown channel {unknown[0]!r}; use {', '.join(CHANNELS)}")
    plans: list[RunPlan] = []
    for channel in channels:
        for name in names or [None]:
            if name is None and channel != VECTOR and spec.active is None:
                raise UnknownGeneration(
                    f"{spec.path}: --channel {channel} reads its text (and, for hybrid, its vectors) from a "
                    "generation, and none is named or active; pass --generation NAME"
                )
            plan = RunPlan(channel, spec.generation(name).name)
            if plan not in plans:
                plans.append(plan)
    return plans


def measure_runs(
    project: Project,
    corpus: Corpus,
    plans: Sequence[RunPlan],
    *,
    measure_vector: Callable,
    check_keys: Callable[[Project, Corpus, set[str]], None],
    fusion: Fusion = Fusion(),
) -> list[ChannelRun]:
    """Measure every planned run; each generation's vector side and each template's lexical side once.

    ``measure_vector(generation)`` measures a vector run and returns an object
    with ``run``, ``timings``, ``keys`` and ``blocks`` (which yields the cases'
    scores a block of cases at a time: ``(start, stop, scores)``, see
    :mod:`ptah.core.scoring`). ``check_keys(project, corpus, keys)`` raises
    when the corpus names a key outside ``keys``. No run holds every case's
    scores at once: memory does not grow with cases x rows.
    """
    vectors: dict[str, object] = {}
    lexicals: dict[str, tuple[dict, lexical.LexicalIndex]] = {}
    lexical_outcomes: dict[str, list[CaseOutcome]] = {}
    spent: dict[str, float] = {}  # each side's cost, charged to the first run that needed it

    def charge(timings: dict) -> None:
        for step, seconds in timings.items():
            spent[step] = spent.get(step, 0.0) + seconds

    def vector_side(name: str):
        if name not in vectors:
            vectors[name] = measure_vector(project.generation(name))
            charge(vectors[name].timings)
        return vectors[name]

    def lexical_side(name: str):
        settings = project.spec.generation(name)
        template = settings.template(project.spec.source)
        if template not in lexicals:
            info, index, timings = _lexical_index(project, corpus, settings, check_keys)
            lexicals[template] = (info, index)
            charge(timings)
        return template, *lexicals[template]

    def lexical_run(plan: RunPlan) -> dict:
        template, info, index = lexical_side(plan.generation)
        if template not in lexical_outcomes:
            clock = time.perf_counter()
            queries = [case.query for case in corpus.cases]
            columns = key_columns(info["keys"])
            lexical_outcomes[template] = [
                outcome for start, stop in query_blocks(len(queries), len(info["keys"]))
                for outcome in outcomes(corpus.cases[start:stop], info["keys"], columns, index.scores(queries[start:stop]))
            ]
            charge({"lexical_search": time.perf_counter() - clock})
        return _lexical_run(plan, info, lexical_outcomes[template])

    measured = []
    for plan in plans:
        if plan.channel == VECTOR:
            run = vector_side(plan.generation).run
        elif plan.channel == LEXICAL:
            run = lexical_run(plan)
        else:
            sides = vector_side(plan.generation), lexical_side(plan.generation)[1:]
            clock = time.perf_counter()
            run = _hybrid_run(plan, corpus, *sides, fusion)
            charge({"fusion": time.perf_counter() - clock})
        measured.append(ChannelRun(run, dict(spent)))
        spent.clear()
    return measured


def _lexical_index(
    project: Project, corpus: Corpus, settings: GenerationSettings, check_keys
) -> tuple[dict, lexical.LexicalIndex, dict]:
    """The lexical index of the generation's text (loaded or built) and its description."""
    clock = time.perf_counter()
    template = settings.template(project.spec.source)
    rows = sorted(project.source.rows(template), key=lambda row: row.identity)
    fingerprint = lexical.text_fingerprint((row.identity, text_digest(row.text)) for row in rows)
    values = lexical.settings()
    key = lexical.settings_key(values)
    store = project.store(create=True)
    if not hasattr(store, "lexical_index"):
        raise CapabilityUnavailable(f"the {type(store).__name__} store cannot keep a lexical index; use a SQLite store")
    where = str(getattr(store, "path", "the store"))
    blob = store.lexical_index(fingerprint, key)
    reused = blob is not None
    if reused:
        index = lexical.LexicalIndex.from_bytes(blob, where)
    else:
        index = lexical.build_index([row.key for row in rows], [row.text for row in rows], fingerprint)
        template_sha256 = hashlib.sha256(template.encode("utf-8")).hexdigest()
        store.save_lexical_index(fingerprint, key, template_sha256, len(rows), index.vocabulary, index.to_bytes())
    timings = {"lexical_index": time.perf_counter() - clock}
    check_keys(project, corpus, set(index.keys))
    identity = "sha256:" + hashlib.sha256(
        json.dumps({"fingerprint": fingerprint, "settings": values}, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    info = {
        "identity": identity,
        "model": f"bm25 ({values['method']}, k1={values['k1']}, b={values['b']})",
        "settings": {"text": template, **values},
        "dimension": index.vocabulary,
        "rows": len(index.keys),
        "model_digest": None,
        "versions": {"bm25s": values["version"]},
        "verification": {"ok": True, "allow_stale": False, "fingerprint": fingerprint},
        "index": {"fingerprint": fingerprint, "reused": reused},
        "keys": index.keys,
    }
    return info, index, timings


def _lexical_run(plan: RunPlan, info: dict, measured: list[CaseOutcome]) -> dict:
    generation = {"name": plan.name, **{n: v for n, v in info.items() if n != "keys"}, "text_of": plan.generation}
    search = {"channel": LEXICAL, "mode": "exact", "similarity": "bm25"}
    return run_dict(generation, search, measured, searched=len(info["keys"]))


def _hybrid_run(plan: RunPlan, corpus: Corpus, vector, lexical_side: tuple[dict, lexical.LexicalIndex],
                fusion: Fusion) -> dict:
    """The RRF of the lexical and vector channels' top ``fusion.depth`` rows, measured (see ptah.core.fusion).

    The vector side's scores come block by block as its own run computed
    them; within a block the fused scores (float64) are made and measured for
    a few cases at a time, so neither grows with cases x rows.
    """
    info, index = lexical_side
    keys = list(dict.fromkeys([*vector.keys, *info["keys"]]))  # the vector side's rows, then any it lacks
    position = key_columns(keys)
    queries = [case.query for case in corpus.cases]
    measured: list[CaseOutcome] = []
    for start, stop, vector_scores in vector.blocks():
        for first, last in query_blocks(stop - start, 2 * len(keys)):  # a float64 score takes the room of two
            lexical_scores = index.scores(queries[start + first:start + last])
            fused = np.empty((last - first, len(keys)), dtype=np.float64)
            for i in range(last - first):
                lexical_ranking = [position[key] for key, score in top_k(lexical_scores[i], info["keys"], fusion.depth)
                                   if score > 0]
                vector_ranking = [position[key] for key, _ in top_k(vector_scores[first + i], vector.keys, fusion.depth)]
                fused[i] = rrf_scores([lexical_ranking, vector_ranking], len(keys), fusion.k)
            measured.extend(outcomes(corpus.cases[start + first:start + last], keys, position, fused))
    side = vector.run["generation"]
    parts = {"vector": side["identity"], "lexical": info["identity"], "rrf_k": fusion.k, "depth": fusion.depth}
    identity = "sha256:" + hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    channels = [f"{LEXICAL}:{plan.generation}", plan.generation]
    generation = {
        "name": plan.name,
        "identity": identity,
        "model": side["model"],
        "settings": {"rrf_k": fusion.k, "depth": fusion.depth, "vector": side["settings"], "lexical": info["settings"]},
        "dimension": side["dimension"],
        "rows": len(keys),
        "model_digest": side.get("model_digest"),
        "versions": {**side.get("versions", {}), **info["versions"]},
        "verification": side["verification"],
        "queries_from_cache": side.get("queries_from_cache"),
        "index": info["index"],
    }
    search = {
        "channel": HYBRID,
        "mode": "exact",
        "similarity": "rrf",
        "fusion": {"method": "reciprocal rank fusion", "k": fusion.k, "depth": fusion.depth, "channels": channels},
    }
    return run_dict(generation, search, measured, searched=len(keys))


def outcomes(cases: Sequence[Case], keys: list[str], columns: dict[str, int], scores: np.ndarray) -> list[CaseOutcome]:
    """Each case measured on its row of ``scores`` (cases x rows, one column per key; ``columns`` by key).

    For the lexical and hybrid channels a score of 0 means the row did not
    match at all (no query term, or in neither fused channel's top rows):
    such rows are not results. A case's ranking holds only the rows it
    matched -- possibly fewer than k -- and a missed key that was not matched
    has no rank, rather than one that key order alone would give it.
    """
    rankings = rank_many(scores, keys, [case.k for case in cases], expected=[case.expected_keys() for case in cases],
                         asked=[case.required for case in cases], columns=columns)
    result = []
    for row, case, ranking in zip(scores, cases, rankings):
        def full_rank(key: str, row=row, ranks=ranking.ranks) -> int | None:
            return ranks[key] if key in ranks and row[columns[key]] > 0 else None

        matched = [(key, score) for key, score in ranking.ranked if score > 0]
        metrics = evaluate_case(case, matched, full_rank)
        result.append(CaseOutcome(case, tuple(matched), metrics, ranking.ties, matched=int(np.count_nonzero(row > 0))))
    return result
