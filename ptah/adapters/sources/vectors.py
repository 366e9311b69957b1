"""Reading the vectors a table already holds (an *external* generation's), the part every source
reader shares.

A source reader selects the key columns, then the vector column, in key order
(the order of :meth:`Source.rows`), from its one read-only snapshot;
:func:`table_vectors` renders each key as :func:`ptah.adapters.sources.rows.source_rows`
does (same keys, same identities, same refusals) and decodes each vector:

* a BLOB (``bytes``): little-endian float32, 4 bytes a component;
* text: a JSON array of numbers -- also pgvector's text form ``[1,2,3]``;
* NULL: the row has no vector; it is *missing* (coverage), not an error.

Anything else, a vector with a non-finite component, or vectors of more than
one dimension is refused (:class:`InputError`, exit 2) naming the first few
rows' keys.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ptah.adapters.sources.rows import Twin, source_rows
from ptah.core.errors import InputError

MAX_NAMED = 5  # rows named in a message about bad vectors


@dataclass
class TableVectors:
    """The vectors of the rows passing the filter: ``keys``/``identities``/``vectors`` for rows that
    have one."""

    keys: list[str]
    identities: list[str]
    vectors: np.ndarray  # float32, one row per key
    rows: int  # rows passing the filter, with or without a vector
    missing_keys: list[str] = field(
        default_factory=list
    )  # every row whose vector is NULL, in key order

    @property
    def missing(self) -> int:
        return len(self.missing_keys)


def table_vectors(
    records: Iterable[Sequence[object]],
    key_fields: tuple[str, ...],
    column: str,
    where: str,
    twin: Twin | None = None,
) -> TableVectors:
    """Each record (key values, then the vector column's value) read into a :class:`TableVectors`
    (``twin``: as :func:`~ptah.adapters.sources.rows.keyed_records` asks it)."""
    width = len(key_fields)
    raw: list[object] = [None]

    def keys_only() -> Iterator[Sequence[object]]:
        for values in records:
            raw[0] = values[width]
            yield values[:width]

    keys: list[str] = []
    identities: list[str] = []
    vectors: list[np.ndarray] = []
    missing: list[str] = []
    bad: dict[str, list[str]] = {}  # why -> keys
    rows = 0
    for row in source_rows(keys_only(), key_fields, "", (), where, twin):
        rows += 1
        value = raw[0]
        if value is None:
            missing.append(row.key)
            continue
        vector = _decode(value)
        if isinstance(vector, str):  # why it holds none
            bad.setdefault(vector, []).append(row.key)
            continue
        keys.append(row.key)
        identities.append(row.identity)
        vectors.append(vector)
    _refuse(bad, where, column)
    dimensions = Counter(len(v) for v in vectors)
    if len(dimensions) > 1:
        common = dimensions.most_common(1)[0][0]
        odd = [key for key, vector in zip(keys, vectors) if len(vector) != common]
        shown = ", ".join(repr(k) for k in odd[:MAX_NAMED])
        raise InputError(
            f"{where}: column {column} holds vectors of {len(dimensions)} dimensions "
            f"({', '.join(f'{d}: {n} rows' for d, n in sorted(dimensions.items()))}); {len(odd)} rows differ from "
            f"the {common} of most, e.g. the rows with keys {shown}; every vector of a generation has one dimension"
        )
    matrix = np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
    return TableVectors(
        keys, identities, np.ascontiguousarray(matrix, dtype=np.float32), rows, missing
    )


def _decode(value: object) -> np.ndarray | str:
    """The vector ``value`` holds, or why it holds none."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if not data or len(data) % 4:
            return f"a BLOB of {len(data)} bytes (a vector is little-endian float32, 4 bytes a component)"
        vector = np.frombuffer(data, dtype="<f4").astype(np.float32)
    elif isinstance(value, str):
        try:
            items = json.loads(value)
        except (
            ValueError,
            RecursionError,
        ):  # RecursionError: arrays nested deeper than Python's parser goes
            return "text that is not a JSON array of numbers"
        if (
            not isinstance(items, list)
            or not items
            or not all(type(x) in (int, float) for x in items)
        ):
            return "text that is not a JSON array of numbers"
        if not all(math.isfinite(x) for x in items):
            return "a component that is not a finite number"
        vector = np.array(items, dtype=np.float32)
    else:
        return (
            f"a value of type {type(value).__name__} (a vector is a float32 BLOB or a JSON array)"
        )
    if not np.isfinite(vector).all():
        return "a component that is not a finite number (or beyond float32)"
    return vector


def _refuse(bad: dict[str, list[str]], where: str, column: str) -> None:
    if not bad:
        return
    parts = [
        f"{len(keys)} rows hold {why}, e.g. the rows with keys {', '.join(repr(k) for k in keys[:MAX_NAMED])}"
        for why, keys in bad.items()
    ]
    raise InputError(f"{where}: column {column} cannot be read as vectors: {'; '.join(parts)}")
