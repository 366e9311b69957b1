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
from ptah.core.corpus import Corpus
from ptah.core.errors import CapabilityUnavailable, InputError, UnknownGeneration
from ptah.core.fusion import DEFAULT_RRF_DEPTH, DEFAULT_RRF_K, check_fusion, rrf_scores
from ptah.core.metrics import evaluate_case
from ptah.core.ranking import find_ties, rank_of, top_k, top_k_many
from ptah.core.report import CaseOutcome, run_dict
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
    with ``run``, ``timings``, ``keys`` and ``scores`` (the full score matrix,
    queries x rows). ``check_keys(project, corpus, keys)`` raises when the
    corpus names a key outside ``keys``.
    """
    vectors: dict[str, object] = {}
    lexicals: dict[str, tuple[dict, np.ndarray]] = {}
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
            info, scores, timings = _lexical_scores(project, corpus, settings, check_keys)
            lexicals[template] = (info, scores)
            charge(timings)
        return lexicals[template]

    measured = []
    for plan in plans:
        if plan.channel == VECTOR:
            run = vector_side(plan.generation).run
        elif plan.channel == LEXICAL:
            run = _lexical_run(plan, corpus, *lexical_side(plan.generation))
        else:
            sides = vector_side(plan.generation), lexical_side(plan.generation)
            clock = time.perf_counter()
            run = _hybrid_run(plan, corpus, *sides, fusion)
            charge({"fusion": time.perf_counter() - clock})
        measured.append(ChannelRun(run, dict(spent)))
        spent.clear()
    return measured


def _lexical_scores(
    project: Project, corpus: Corpus, settings: GenerationSettings, check_keys
) -> tuple[dict, np.ndarray, dict]:
    """The lexical index of the generation's text (loaded or built), its description and every case's scores."""
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
    clock = time.perf_counter()
    scores = index.scores([case.query for case in corpus.cases])
    timings["lexical_search"] = time.perf_counter() - clock
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
    return info, scores, timings


def _lexical_run(plan: RunPlan, corpus: Corpus, info: dict, scores: np.ndarray) -> dict:
    keys = info["keys"]
    generation = {"name": plan.name, **{n: v for n, v in info.items() if n != "keys"}, "text_of": plan.generation}
    search = {"channel": LEXICAL, "mode": "exact", "similarity": "bm25"}
    return run_dict(generation, search, outcomes(corpus, keys, scores), searched=len(keys))


def _hybrid_run(plan: RunPlan, corpus: Corpus, vector, lexical_side: tuple[dict, np.ndarray], fusion: Fusion) -> dict:
    """The RRF of the lexical and vector channels' top ``fusion.depth`` rows, measured (see ptah.core.fusion)."""
    info, lexical_matrix = lexical_side
    keys = list(dict.fromkeys([*vector.keys, *info["keys"]]))  # the vector side's rows, then any it lacks
    position = {key: i for i, key in enumerate(keys)}
    fused = np.empty((len(corpus.cases), len(keys)), dtype=np.float64)
    for i in range(len(corpus.cases)):
        lexical_ranking = [position[key] for key, score in top_k(lexical_matrix[i], info["keys"], fusion.depth) if score > 0]
        vector_ranking = [position[key] for key, _ in top_k(vector.scores[i], vector.keys, fusion.depth)]
        fused[i] = rrf_scores([lexical_ranking, vector_ranking], len(keys), fusion.k)
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
    return run_dict(generation, search, outcomes(corpus, keys, fused), searched=len(keys))


def outcomes(corpus: Corpus, keys: list[str], scores: np.ndarray) -> list[CaseOutcome]:
    """Every case measured on its row of ``scores`` (queries x rows, one column per key).

    For the lexical and hybrid channels a score of 0 means the row did not
    match at all (no query term, or in neither fused channel's top rows):
    such rows are not results. A case's ranking holds only the rows it
    matched -- possibly fewer than k -- and a missed key that was not matched
    has no rank, rather than one that key order alone would give it.
    """
    rankings = top_k_many(scores, keys, [case.k for case in corpus.cases])
    present = set(keys)
    result = []
    for row, case, ranked in zip(scores, corpus.cases, rankings):
        def full_rank(key: str, row=row) -> int | None:
            if key not in present:
                return None
            return rank_of(row, keys, key) if row[keys.index(key)] > 0 else None

        matched = [(key, score) for key, score in ranked if score > 0]
        metrics = evaluate_case(case, matched, full_rank)
        ties = find_ties(row, keys, case.k, case.expected_keys())
        result.append(CaseOutcome(case, tuple(matched), metrics, ties, matched=int(np.count_nonzero(row > 0))))
    return result
