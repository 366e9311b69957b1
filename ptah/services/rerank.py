"""The rerank stage of a variant: re-score the top candidates of its channel and rank them again.

A variant's ``rerank`` (:class:`~ptah.core.spec.RerankSettings`) takes the
top ``candidates`` rows its channel ranked for each case (the channel is
measured at that depth, so index search and fusion hand over exactly what
they would serve), renders each candidate's text with the template of
``rerank.generation`` (default the variant's), has the reranker
(:mod:`ptah.adapters.rerankers`) score every (query, text) pair, and ranks
the candidates by that score, descending, ties by key ascending -- the one
ranking rule. The case is then measured on that ranking like any other, so
its holes, ties and bounds are the final ranking's. A key missed from the
candidates reads "not among the N candidates"; one among them but below k
has its rank in the reranked candidates.

Each case's rerank is timed on its own (the stage's p50/p95 per query);
opening the reranker and reading the candidates' text count in the stage's
seconds, not in any query's.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from ptah.adapters.sources.base import texts_of
from ptah.core.errors import ModelUnavailable, ServiceUnavailable, VariantUnavailable
from ptah.core.parts import VariantRerank
from ptah.core.ranking import find_ties, top_k
from ptah.core.report import CaseResult, Run, measure_case
from ptah.core.spec import RerankSettings
from ptah.services.channels import RunPlan, Sides


@dataclass
class Reranked:
    """The cases measured on their reranked candidates, each case's seconds, and what the report
    keeps."""

    results: list[CaseResult]
    seconds: list[float]
    controls: VariantRerank


def rerank(plan: RunPlan, sides: Sides, candidates: Run, settings: RerankSettings) -> Reranked:
    """Rerank ``candidates`` (the plan's channel measured at the candidate depth) case by case
    (module docs)."""
    from ptah.adapters.embedders.base import usage_of
    from ptah.adapters.rerankers import RerankContext, open_reranker

    project = sides.project
    context = RerankContext(
        root=project.spec.root,
        env=os.environ,
        embedder=lambda name: project.embedder(project.spec.generation(name)),
    )
    try:
        reranker = open_reranker(settings, context)
    except ModelUnavailable as exc:  # a model that is not there; a service that fails stays exit 3
        if isinstance(exc, ServiceUnavailable):
            raise
        raise VariantUnavailable(
            f'variant "{plan.name}": its reranker cannot be opened: {exc}'
        ) from None
    template = project.spec.generation(settings.generation or plan.generation).template(
        project.spec.source
    )
    texts = texts_of(
        project.source,
        template,
        {result.key for case in candidates.cases for result in case.ranking},
    )
    results, seconds = [], []
    for case, listed in zip(sides.corpus.cases, candidates.cases):
        clock = time.perf_counter()
        keys = [result.key for result in listed.ranking]
        scores = (
            np.asarray(reranker.scores(case.query, [texts[key] for key in keys]), dtype=np.float64)
            if keys
            else np.zeros(0)
        )
        ranked = top_k(scores, keys, len(keys)) if keys else []
        rank = {key: index for index, (key, _) in enumerate(ranked, start=1)}
        results.append(
            measure_case(
                case,
                ranked,
                measures=sides.measures,
                searched=len(keys),
                rank_of=rank.get,
                ties=find_ties(scores, keys, case.k, case.expected_keys()) if keys else None,
                unranked=f"not among the {len(keys):,} candidates reranked",
            )
        )
        seconds.append(time.perf_counter() - clock)
    usage = usage_of(reranker)
    scorer = dict(reranker.describe())
    if settings.generation is not None:  # a bi-encoder knows its embedder, not the model's name
        scorer.setdefault("model", project.spec.generation(settings.generation).model)
    controls = settings.controls() | {"scorer": scorer, "usage": usage or None}
    return Reranked(results, seconds, VariantRerank.from_dict(controls))
