"""Reciprocal rank fusion (RRF): one ranking from several channels' rankings.

Cormack, Clarke and Buettcher (SIGIR 2009). For each row,

    fused score = sum over channels that ranked the row of 1 / (c + rank)

where rank is the row's 1-based rank in that channel and ``c`` is the RRF
constant (default 60, the paper's value). A row no channel ranked scores 0.

What a channel contributes: its first ``depth`` rows (default 1000, at least
ptah's largest case depth, so the fused top k never reaches unranked rows when
the table has k rows) in ptah's ranking order -- score descending, ties broken
by key ascending -- so tied rows take consecutive ranks by key. A channel may
also leave rows out (the lexical channel leaves out rows matching no query
term: their BM25 score of 0 says nothing about them, and ranking them by key
would only add noise).

The fused scores are then ranked like any other score (score descending, ties
by key ascending; :mod:`ptah.core.ranking`). Sums are float64 and added in
channel order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ptah.core.request import DEFAULT_RRF_K, MAX_RRF_DEPTH
from ptah.core.visible import abbreviated


def check_fusion(k: float, depth: int) -> None:
    """``ValueError`` unless ``k`` >= 0 is finite and 1 <= ``depth`` <= :data:`MAX_RRF_DEPTH`."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not np.isfinite(k) or k < 0:
        raise ValueError(f"the RRF constant must be a finite number >= 0, got {k!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_RRF_DEPTH:
        raise ValueError(
            f"the RRF depth must be a whole number from 1 to {MAX_RRF_DEPTH}, got {abbreviated(repr(depth))}"
        )


def rrf_scores(
    rankings: Sequence[Sequence[int]], rows: int, k: float = DEFAULT_RRF_K
) -> np.ndarray:
    """The fused float64 score of each of ``rows`` rows.

    ``rankings`` holds one ranking per channel: row indices, best first, each
    row at most once. ``fused[i] = sum of 1 / (k + rank)`` over the channels
    that ranked row i (rank 1-based).
    """
    check_fusion(k, 1)
    fused = np.zeros(rows, dtype=np.float64)
    for ranking in rankings:
        indices = np.asarray(ranking, dtype=np.int64)
        if len(np.unique(indices)) != len(indices):
            raise ValueError("a channel's ranking must name each row at most once")
        if len(indices) and (indices.min() < 0 or indices.max() >= rows):
            raise ValueError(f"a channel's ranking names a row outside 0..{rows - 1}")
        fused[indices] += 1.0 / (k + np.arange(1, len(indices) + 1, dtype=np.float64))
    return fused
