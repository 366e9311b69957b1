"""The client of an HTTP rerank API (see :mod:`ptah.adapters.rerankers.service` for the shapes it
speaks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ptah.adapters.embedders.http_client import Connection, ServiceClient
from ptah.adapters.rerankers.base import batches

ANSWER_BYTES = 1024 * 1024  # the most bytes of an answer read, beyond BYTES_PER_RESULT a document
BYTES_PER_RESULT = (
    512  # {"index": n, "relevance_score": s} and a server's extras, e.g. a document's id
)


class RerankClient(ServiceClient):
    """Scores documents for a query with one model of one rerank server."""

    service = "rerank service"

    def __init__(self, base_url: str, model: str | None, api: str, connection: Connection):
        super().__init__(base_url.rstrip("/") + "/rerank", connection)
        self.model, self.api = model, api
        self.field = "score" if api == "tei" else "relevance_score"

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One float64 score per text, in order; ``batch_size`` texts a request."""
        parts = self.in_parallel(
            lambda batch: self._request(query, [texts[i] for i in batch]),
            batches(len(texts), self.batch_size),
        )
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    def _request(self, query: str, documents: list[str]) -> np.ndarray:
        body: dict[str, Any] = (
            {"query": query, "texts": documents, "truncate": True}
            if self.api == "tei"
            else {
                "model": self.model,
                "query": query,
                "documents": documents,
                "top_n": len(documents),
                "return_documents": False,
            }
        )
        raw = self.post(body, ANSWER_BYTES + len(documents) * BYTES_PER_RESULT)
        return self._scores(self.document(raw, constants=True), len(documents))

    def _scores(self, document: Any, count: int) -> np.ndarray:
        if self.api == "tei":
            results = document if isinstance(document, list) else None
            shape = "a list of {index, score}"
        else:
            results = document.get("results") if isinstance(document, dict) else None
            shape = "a rerank answer (no results: [{index, relevance_score}])"
            served = document.get("model") if isinstance(document, dict) else None
            if served is not None and served != self.model:
                self.refuse(
                    f'answered with model "{self.visible(str(served))}", not "{self.model}" as asked'
                )
        if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
            self.refuse(f"answered JSON that is not {shape}")
        if len(results) != count:
            self.refuse(f"answered {len(results)} scores for {count} documents")
        indices = [item.get("index") for item in results]
        if any(
            not isinstance(index, int) or isinstance(index, bool) for index in indices
        ) or sorted(indices) != list(range(count)):
            self.refuse("answered results whose index fields are not each of 0 to n-1 once")
        values = [item.get(self.field) for item in results]
        if any(not isinstance(value, (int, float)) or isinstance(value, bool) for value in values):
            self.refuse(f"answered a {self.field} that is not a number")
        scores = np.zeros(count, dtype=np.float64)
        try:
            scores[indices] = values
        except OverflowError:  # an integer of 400 digits
            scores[:] = np.inf
        if not np.isfinite(scores).all():
            self.refuse(f"answered a {self.field} that is not a finite number")
        return scores
