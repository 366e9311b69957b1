"""The ``bi-encoder`` reranker: a generation's model re-scores the candidates another channel found.

A score is the float64 dot product of the query's vector (``embed_queries``)
and the text's (``embed_documents``), summed in dimension order
(:func:`ptah.core.ranking.pair_scores`), so it depends only on the two vectors.
Texts' vectors are kept by text for the reranker's life (candidates come back
query after query: at most cases x candidates vectors). A text missing from
them is embedded by itself, never batched with others: a batch's padding moves
a model's last bits, and a text's vector would then depend on which query met
it first and beside which texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from ptah.adapters.embedders.base import Embedder, as_matrix
from ptah.adapters.rerankers.base import RerankContext
from ptah.core.errors import InputError
from ptah.core.ranking import pair_scores
from ptah.core.spec import RerankSettings

KIND = "bi-encoder"


class BiEncoderKind:
    name = KIND
    service = False

    def check(self, settings: RerankSettings, written: AbstractSet[str]) -> list[tuple[str, str]]:
        """What ``settings`` lack, as (field, message) pairs."""
        if settings.generation is None and "generation" not in written:
            return [
                ("generation", "missing; a bi-encoder re-scores with a generation's model: name it")
            ]
        return []

    def open(self, settings: RerankSettings, context: RerankContext) -> BiEncoderReranker:
        if not settings.generation:
            raise InputError(
                "the bi-encoder reranker needs generation: the generation whose model re-scores the "
                "candidates"
            )
        return BiEncoderReranker(settings.generation, context.embedder(settings.generation))


class BiEncoderReranker:
    def __init__(self, generation: str, embedder: Embedder):
        self.generation, self.embedder = generation, embedder
        self._documents: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        dimension = self.embedder.dimension
        for text in dict.fromkeys(texts):
            if text not in self._documents:
                self._documents[text] = as_matrix(self.embedder.embed_documents([text]), dimension)[
                    0
                ]
        if query not in self._queries:
            self._queries[query] = as_matrix(self.embedder.embed_queries([query]), dimension)[0]
        rows = (
            np.stack([self._documents[text] for text in texts])
            if texts
            else np.zeros((0, dimension), np.float32)
        )
        return pair_scores(
            self._queries[query][None, :],
            rows,
            np.zeros(len(texts), dtype=np.int64),
            np.arange(len(texts)),
        )

    def describe(self) -> dict:
        return {"kind": KIND, "generation": self.generation, "dimension": self.embedder.dimension}
