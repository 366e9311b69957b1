"""The ``encoder`` judge: a score per (query, judging text) pair, turned into a grade by thresholds.

The score is the bi-encoder reranker's (a generation's model: the float64 dot
product of the query's and the text's vectors) or the cross-encoder
reranker's (``model:``); the grade is the highest grade of the settings'
``thresholds`` whose least score the pair reaches, else 0. A weak judge, but a
real one the bundled model can run anywhere; its thresholds are best chosen on
a development split of judged pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from ptah.adapters.judges.base import JudgeContext
from ptah.adapters.rerankers import RerankContext, open_reranker
from ptah.core.errors import InputError
from ptah.core.spec import JudgeSettings, RerankSettings

KIND = "encoder"


class EncoderKind:
    name = KIND
    service = False  # scores with a local model

    def check(self, settings: JudgeSettings, written: AbstractSet[str]) -> list[tuple[str, str]]:
        """What ``settings`` lack, as (field, message) pairs (field "": the judge itself);
        ``written``: the fields the specification wrote."""
        problems = []
        if (settings.model is None) == (
            settings.generation is None and "generation" not in written
        ):
            problems.append(
                (
                    "",
                    "an encoder judge scores with a generation's model (generation:) or a "
                    "cross-encoder (model:); name exactly one",
                )
            )
        if not settings.thresholds and not {"threshold", "thresholds"} & written:
            problems.append(
                (
                    "threshold",
                    "missing; an encoder judge turns scores into grades: write threshold: SCORE "
                    "(grade 1 from it) or thresholds: {GRADE: SCORE, ...}",
                )
            )
        return problems

    def open(self, settings: JudgeSettings, context: JudgeContext) -> EncoderJudge:
        if not settings.thresholds:
            raise InputError(
                "an encoder judge needs threshold: (or thresholds:) to turn its scores into grades"
            )
        off_scale = sorted(grade for grade in settings.thresholds if grade not in context.scale)
        if off_scale:
            raise InputError(
                f"the encoder judge's thresholds name grade {off_scale[0]:g}, which the corpus does not "
                f"use (its grades: {', '.join(f'{g:g}' for g in context.scale)})"
            )
        kind = "cross-encoder" if settings.model is not None else "bi-encoder"
        reranker = open_reranker(
            RerankSettings(
                kind,
                generation=settings.generation,
                model=settings.model,
                batch_size=settings.batch_size,
            ),
            RerankContext(context.root, context.env, context.embedder),
        )
        return EncoderJudge(reranker, settings.thresholds)


class EncoderJudge:
    def __init__(self, reranker, thresholds):
        self.reranker = reranker
        self.thresholds = sorted(thresholds.items(), reverse=True)  # highest grade first

    def grades(self, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
        by_query: dict[str, list[int]] = {}
        for index, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(index)
        scores: dict[int, float] = {}
        for query, indexes in by_query.items():
            for index, score in zip(
                indexes, self.reranker.scores(query, [pairs[i][1] for i in indexes])
            ):
                scores[index] = float(score)
        return [
            next((grade for grade, least in self.thresholds if scores[index] >= least), 0.0)
            for index in range(len(pairs))
        ]

    def describe(self) -> dict:
        return {
            "kind": KIND,
            "scorer": self.reranker.describe(),
            "thresholds": [[grade, least] for grade, least in sorted(self.thresholds)],
        }
