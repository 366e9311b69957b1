"""Whether stored vectors can be measured: finite float32 values of their generation's dimension.

ptah never writes a vector holding NaN or an infinity (a build refuses a model
that returns one), so finding one means the store was damaged or changed
outside ptah. Both stores check every matrix they read, and ``verify`` checks
the generation's vectors, with these.
"""

from __future__ import annotations

import numbers
import zlib
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:
    from ptah.adapters.stores.records import Matrix

VECTOR_DTYPE = np.dtype("<f4")
# Rows checked per step: bounds the temporary flags beside the matrix.
READ_BLOCK = 8192


def non_finite(vectors: np.ndarray, keys: Sequence[str]) -> tuple[int, str | None]:
    """How many rows of ``vectors`` hold NaN or an infinity, and the first such row's key.

    Checked :data:`READ_BLOCK` rows at a time, so the temporary is one block's
    flags, not a copy of the matrix.
    """
    count, first = 0, None
    for start in range(0, vectors.shape[0], READ_BLOCK):
        bad = ~np.isfinite(vectors[start : start + READ_BLOCK]).all(axis=1)
        if bad.any():
            count += int(bad.sum())
            if first is None:
                first = keys[start + int(np.argmax(bad))]
    return count, first


def non_finite_text(count: int, total: int, name: str, first: str | None) -> str:
    """What :func:`non_finite` found, in words."""
    return (
        f"{count} of {total} vectors of generation {name} hold NaN or infinite values, the first for key {first!r}; "
        "ptah never writes such vectors"
    )


def block_rows(rows: int) -> int:
    """``rows`` for a snapshot's ``vector_blocks``: a whole number of at least 1, else ValueError."""
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
        raise ValueError(f"blocks of vectors need a whole number of rows of at least 1, not {rows!r}")
    return int(rows)


def finite_blocks(blocks: Iterable[Matrix], damaged: Callable[[int, int, str | None], Exception]) -> Iterator[Matrix]:
    """``blocks`` as they come while every vector is finite.

    At the first block holding NaN or an infinity, that block and the rest are
    read without being yielded, to count them all, and ``damaged(count, total,
    first key)`` is raised: a stream of blocks reports damage in the same
    sentence as the whole matrix (which is one block).
    """
    bad, total, first = 0, 0, None
    for block in blocks:
        found, key = non_finite(block.vectors, block.keys)
        total += len(block.keys)
        if found and not bad:
            first = key
        bad += found
        if not bad:
            yield block
    if bad:
        raise damaged(bad, total, first)


def usable_query_vector(blob: bytes, dimension: int | None, crc32: int | None = None) -> np.ndarray | None:
    """A cached query vector as float32; None (to embed it again) unless it is ``dimension`` finite values
    whose CRC-32 is ``crc32`` (when one was kept)."""
    if dimension is None or not isinstance(blob, bytes) or len(blob) != dimension * VECTOR_DTYPE.itemsize:
        return None
    if crc32 is not None and zlib.crc32(blob) != crc32:
        return None
    vector = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
    return vector if np.isfinite(vector).all() else None
