"""The hybrid channel: reciprocal rank fusion (:mod:`ptah.core.fusion`) of the lexical and vector
channels.

Each row scores ``sum of 1 / (c + rank)`` over the two channels, each
contributing its top ``depth`` rows in ranking order (the lexical channel only
rows matching a query term: a BM25 score of 0 says nothing). Fused scores
(float64) are ranked descending, ties by key ascending; a row in neither
channel's top rows is not a result. The vector side must be built, complete
and fresh (or allowed stale), as for the vector channel, and is shared with it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace

import numpy as np

from ptah.core.fusion import rrf_scores
from ptah.core.parts import Search, SearchFusion, read_only
from ptah.core.ranking import key_columns, query_blocks, top_k
from ptah.core.report import CaseResult, Run, make_run
from ptah.core.request import HYBRID, LEXICAL
from ptah.services.channels.base import RunPlan, Sides, measure_scores
from ptah.services.channels.lexical import LexicalSide, lexical_side
from ptah.services.channels.vector import VectorSide, vector_side


class HybridChannel:
    name = HYBRID
    whole_ranking = True  # it fuses the exact vector ranking of every row
    needs_vectors = True

    def measure(self, plan: RunPlan, sides: Sides) -> Run:
        vector, lexical = vector_side(sides, plan.generation), lexical_side(sides, plan.generation)
        clock = time.perf_counter()
        keys = list(
            dict.fromkeys([*vector.keys, *lexical.keys])
        )  # the vector side's rows, then any it lacks
        results = _fused(sides, vector, lexical, keys)
        sides.charge("fusion", clock)
        fusion = sides.request.fusion
        side = vector.run.generation
        parts = {
            "vector": side.identity,
            "lexical": lexical.generation.identity,
            "rrf_k": fusion.k,
            "depth": fusion.depth,
        }
        identity = (
            "sha256:"
            + hashlib.sha256(
                json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
            ).hexdigest()
        )
        settings = {
            "rrf_k": fusion.k,
            "depth": fusion.depth,
            "vector": side.settings,
            "lexical": lexical.generation.settings,
        }
        generation = replace(
            side,  # a service's probe and usage as the vector run's
            name=plan.name,
            identity=identity,
            settings=read_only(settings),
            rows=len(keys),
            versions=read_only({**(side.versions or {}), **(lexical.generation.versions or {})}),
            index=lexical.generation.index,
        )
        search = Search(
            HYBRID,
            "exact",
            "rrf",
            fusion=SearchFusion(
                "reciprocal rank fusion",
                fusion.k,
                fusion.depth,
                (f"{LEXICAL}:{plan.generation}", plan.generation),
            ),
        )
        return make_run(generation, search, results, sides.measures)


def _fused(
    sides: Sides, vector: VectorSide, lexical: LexicalSide, keys: list[str]
) -> list[CaseResult]:
    """Every case measured on its fused scores, a block of cases at a time (neither grows with cases
    x rows)."""
    fusion = sides.request.fusion
    position = key_columns(keys)
    cases = sides.corpus.cases
    queries = [case.query for case in cases]
    results: list[CaseResult] = []
    for start, stop in query_blocks(
        len(cases), 2 * len(keys)
    ):  # a float64 score takes the room of two
        lexical_scores = lexical.index.scores(queries[start:stop])
        vector_top = vector.top(start, stop, fusion.depth)
        fused = np.empty((stop - start, len(keys)), dtype=np.float64)
        for i in range(stop - start):
            lexical_ranking = [
                position[key]
                for key, score in top_k(lexical_scores[i], lexical.keys, fusion.depth)
                if score > 0
            ]
            fused[i] = rrf_scores(
                [lexical_ranking, [position[key] for key, _ in vector_top[i]]], len(keys), fusion.k
            )
        results.extend(
            measure_scores(
                cases[start:stop],
                keys,
                position,
                fused,
                sides.measures,
                matched_only=True,
                matched_by=f"either channel ranked in its top {fusion.depth:,}",
            )
        )
    return results
