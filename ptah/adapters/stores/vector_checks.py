"""Whether stored vectors can be measured: finite float32 values of their generation's dimension,
each under its own row's key.

ptah never writes a vector holding NaN or an infinity (a build refuses a model
that returns one), nor a key that is not the one its row identity spells
(:mod:`ptah.core.identity`), so finding either means the store was damaged or
changed outside ptah. Both stores check every matrix they read, and ``verify``
checks the generation's vectors, with these.
"""

from __future__ import annotations

import numbers
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ptah.core.corpus import COMPOSITE_KEY_SEPARATOR, join_key

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


def key_of(identity: str) -> str | None:
    """The key a row identity spells (its length-prefixed components joined as a corpus joins them);
    None when ``identity`` is not a row identity."""
    components, at = [], 0
    while at < len(identity):
        colon = identity.find(":", at)
        length = identity[at:colon]
        if colon < 0 or not (length.isascii() and length.isdigit()):
            return None
        at = colon + 1 + int(length)
        if at > len(identity):
            return None
        components.append(identity[colon + 1 : at])
    return join_key(components) if components else None


def misfiled(keys: Sequence[str], row_identities: Sequence[str]) -> tuple[int, str | None]:
    """How many rows are stored under a key other than the one their row identity spells, and the
    first such key.

    A vector whose key was changed to another row's would be ranked as that
    row: measured, it raises or lowers recall with no vector out of place.
    Compared a block at a time, as one key column's identities and then as
    composite keys' (split at U+001F), before row by row (a component holding
    U+001F splits wrongly, so only :func:`key_of` settles a row that differs).
    """
    identities = list(row_identities)
    if [f"{len(key)}:{key}" for key in keys] == identities:
        return 0, None
    # row_identity(key.split(U+001F)) (ptah.core.identity) inlined: a call a row would double the
    # cost
    if [
        "".join([f"{len(c)}:{c}" for c in key.split(COMPOSITE_KEY_SEPARATOR)]) for key in keys
    ] == identities:
        return 0, None
    wrong = [key for key, identity in zip(keys, identities) if key_of(identity) != key]
    return len(wrong), (wrong[0] if wrong else None)


def one_row_each(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``key -> row identity`` of the ``(key, row identity)`` pairs whose key no other pair has."""
    rows: dict[str, str] = {}
    shared = set()
    for key, row_identity in pairs:
        if key in rows:
            shared.add(key)
        rows[key] = row_identity
    return {key: row_identity for key, row_identity in rows.items() if key not in shared}


def misfiled_text(count: int, total: int, name: str, first: str | None) -> str:
    """What :func:`misfiled` found, in words."""
    return (
        f"{count} of {total} vectors of generation {name} are stored under a key that is not their row's, "
        f"the first under key {first!r}; ptah never writes such keys"
    )


def block_rows(rows: int) -> int:
    """``rows`` for a snapshot's ``vector_blocks``: a whole number of at least 1, else
    ValueError."""
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
        raise ValueError(
            f"blocks of vectors need a whole number of rows of at least 1, not {rows!r}"
        )
    return int(rows)


def sound_blocks(
    blocks: Iterable[Matrix], name: str, damaged: Callable[[str], Exception]
) -> Iterator[Matrix]:
    """``blocks`` of generation ``name`` as they come while every vector is finite and under its own
    row's key.

    At the first block holding NaN or an infinity, or a key another row
    identity spells, that block and the rest are read without being yielded,
    to count them all, and ``damaged(what was found, in words)`` is raised
    (non-finite vectors first): a stream of blocks reports damage in the same
    sentence as the whole matrix (which is one block).
    """
    bad = [0, 0]
    first: list[str | None] = [None, None]
    total = 0
    for block in blocks:
        total += len(block.keys)
        for kind, (found, key) in enumerate(
            (non_finite(block.vectors, block.keys), misfiled(block.keys, block.row_identities))
        ):
            first[kind] = key if found and not bad[kind] else first[kind]
            bad[kind] += found
        if not any(bad):
            yield block
    if bad[0]:
        raise damaged(non_finite_text(bad[0], total, name, first[0]))
    if bad[1]:
        raise damaged(misfiled_text(bad[1], total, name, first[1]))


def usable_query_vector(
    blob: bytes, dimension: int | None, crc32: int | None = None
) -> np.ndarray | None:
    """A cached query vector as float32; None (to embed it again) unless it is ``dimension`` finite
    values whose CRC-32 is ``crc32`` (when one was kept)."""
    if (
        dimension is None
        or not isinstance(blob, bytes)
        or len(blob) != dimension * VECTOR_DTYPE.itemsize
    ):
        return None
    if crc32 is not None and zlib.crc32(blob) != crc32:
        return None
    vector = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
    return vector if np.isfinite(vector).all() else None
