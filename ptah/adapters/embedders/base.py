"""The one small interface every embedder offers.

Documents and queries are embedded separately so asymmetric models can give
each its own prefix (``document_prefix`` / ``query_prefix``); the embedder
applies the prefix itself, so callers pass the bare texts. Results are
``float32`` matrices of shape ``(len(texts), dimension)``, C-contiguous, and
L2-normalised when the generation's ``normalize`` is true.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors for one generation."""

    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of source rows' texts, ``document_prefix`` applied."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries, ``query_prefix`` applied."""
        ...


def as_matrix(vectors: object, dimension: int) -> np.ndarray:
    """``vectors`` as a C-contiguous float32 ``(n, dimension)`` matrix (``(0, dimension)`` when empty)."""
    matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if matrix.size == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    return matrix.reshape(-1, dimension)


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length; an all-zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0), dtype=np.float32)
