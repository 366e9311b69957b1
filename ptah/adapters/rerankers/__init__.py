"""Rerankers: the kinds that re-score a query's candidate rows (docs/variants.md).

``cross-encoder`` (sentence-transformers, imported only when opened),
``bi-encoder`` (a generation's embedder) and ``service`` (an HTTP rerank API),
plus plug-ins' kinds (:mod:`ptah.adapters.rerankers.registry`). Importing this
package imports neither torch nor httpx, nor loads any plugin.
"""

from __future__ import annotations

from ptah.adapters.rerankers.base import RerankContext, Reranker, RerankerKind
from ptah.adapters.rerankers.registry import RerankerRegistry, open_reranker, reranker_kinds

__all__ = [
    "RerankContext",
    "Reranker",
    "RerankerKind",
    "RerankerRegistry",
    "open_reranker",
    "reranker_kinds",
]
