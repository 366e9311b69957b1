"""Search an external generation's column through the index the table already has (pgvector HNSW or
IVFFlat).

The index is found in the catalog: an HNSW or IVFFlat index whose only key is the column itself
(not an expression of it), whose operator class ranks as ptah scores, by cosine:
``vector_cosine_ops`` / ``halfvec_cosine_ops`` always; ``vector_ip_ops`` / ``halfvec_ip_ops``
only when the caller says every vector the filtered rows hold is unit length (``unit_vectors``);
anything else is refused. No such index is an :class:`InputError` (exit 2) naming table, column
and what was found: the table is the user's, and ptah never builds an index there.

Search runs in the source's read-only snapshot between a savepoint and its rollback, so its ``SET
LOCAL`` settings (``hnsw.ef_search``, ``enable_seqscan = off``) end with it. The query is the one
a service of the table would run, ``SELECT keys, score FROM table WHERE (filter) ORDER BY column
<=> query LIMIT n`` (``<#>`` for inner product); IVFFlat searches the session's
``ivfflat.probes`` (reported). The plan is checked to use the index: an exact answer is never
passed off as the index's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from ptah.adapters.postgres import plan_uses_index, vector_literal
from ptah.adapters.sources.rows import source_rows
from ptah.core.errors import CapabilityUnavailable, InputError

COSINE_CLASSES = ("vector_cosine_ops", "halfvec_cosine_ops")
INNER_PRODUCT_CLASSES = ("vector_ip_ops", "halfvec_ip_ops")
KINDS = ("hnsw", "ivfflat")
DEFAULTS = {
    "m": 16,
    "ef_construction": 64,
    "lists": 100,
}  # pgvector's, for options an index leaves unset

_INDEXES = """
    SELECT i.relname, am.amname, o.opcname, i.reloptions, x.indisvalid
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
    JOIN pg_opclass o ON o.oid = x.indclass[0]
    JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
    WHERE x.indrelid = %s AND a.attname = %s AND x.indnkeyatts = 1
    ORDER BY i.relname
"""


@dataclass(frozen=True)
class FoundIndex:
    name: str
    kind: str  # hnsw or ivfflat
    operator_class: str
    options: dict[str, int]

    @property
    def inner_product(self) -> bool:
        return self.operator_class in INNER_PRODUCT_CLASSES

    def describe(self, table: str, column: str) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            **self.options,
            "operator_class": self.operator_class,
            "table": table,
            "column": column,
        }


def find_index(db, relation: int, table: str, column: str, *, unit_vectors: bool) -> FoundIndex:
    """The index to search ``column`` through, or InputError (exit 2) saying what the column has
    instead."""
    found = db.execute(_INDEXES, (relation, column)).fetchall()
    usable, other = [], []
    for name, kind, operator_class, reloptions, valid in found:
        if kind not in KINDS or not valid:
            other.append(f"{name} ({kind}{'' if valid else ', not valid'})")
            continue
        options = {
            key: int(value) for key, value in (item.split("=", 1) for item in reloptions or ())
        }
        names = ("m", "ef_construction") if kind == "hnsw" else ("lists",)
        usable.append(
            FoundIndex(name, kind, operator_class, {n: options.get(n, DEFAULTS[n]) for n in names})
        )
    for accepted in (COSINE_CLASSES, INNER_PRODUCT_CLASSES if unit_vectors else ()):
        for index in usable:
            if index.operator_class in accepted:
                return index
    where = f"table {table}, column {column}"
    if not usable:
        has = f"only {', '.join(other)}" if other else "no index at all"
        raise InputError(
            f"{where} has no HNSW or IVFFlat index to search ({has}); create one with "
            f"USING hnsw ({column} vector_cosine_ops), or evaluate with --search exact"
        )
    seen = ", ".join(f"{index.name} ({index.kind}, {index.operator_class})" for index in usable)
    unit = (
        "; inner product would rank as cosine only if every vector were unit length, and some are not"
        if any(index.inner_product for index in usable)
        else ""
    )
    raise InputError(
        f"{where}: its index {seen} ranks by another measure than cosine, the similarity ptah "
        f"scores with (vector_cosine_ops or halfvec_cosine_ops){unit}; evaluate with --search exact"
    )


@dataclass
class TableIndexSearch:
    """Nearest rows through ``index``, in the source's snapshot (see the module docs)."""

    db: psycopg.Connection
    index: FoundIndex
    table: sql.Composable
    key_columns: list[str]
    key_fields: tuple[str, ...]
    column: str
    vector_type: str  # vector or halfvec: the query's cast
    where_clause: sql.Composable  # the filter, % written %% (the statement has parameters)
    where: str
    execute: Callable  # the source's prepared execution, saying a failure in one sentence

    def describe(self, table: str) -> dict:
        return self.index.describe(table, self.column)

    def nearest(
        self, identity: str, vectors: np.ndarray, limits: list[int], ef_search: int
    ) -> list[list[tuple[str, float]]]:
        """Each query's rows through the index, ``(key, cosine)`` in the index's order (``identity``
        unused)."""
        operator = "<#>" if self.index.inner_product else "<=>"
        score = "-({col} <#> %s::{t})" if self.index.inner_product else "1 - ({col} <=> %s::{t})"
        keys = sql.SQL(", ").join(sql.Identifier(c) for c in self.key_columns)
        column, cast = sql.Identifier(self.column), sql.SQL(self.vector_type)
        query = sql.SQL(
            "SELECT {keys}, "
            + score
            + " FROM {table} {where} ORDER BY {col} "
            + operator
            + " %s::{t} LIMIT %s"
        ).format(keys=keys, col=column, t=cast, table=self.table, where=self.where_clause)
        self.db.execute("SAVEPOINT ptah_index_search")
        try:
            if self.index.kind == "hnsw":
                self.db.execute(
                    sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(ef_search)))
                )
            self.db.execute("SET LOCAL enable_seqscan = off")
            results = []
            for number, (vector, limit) in enumerate(zip(vectors, limits)):
                literal = vector_literal(vector)
                if number == 0:
                    self._require_index_plan(query, (literal, literal, int(limit)))
                rows = self.execute(query, [literal, literal, int(limit)]).fetchall()
                results.append(list(zip(self._keys(rows), (float(row[-1]) for row in rows))))
            return results
        finally:
            self.db.execute("ROLLBACK TO SAVEPOINT ptah_index_search")
            self.db.execute("RELEASE SAVEPOINT ptah_index_search")

    def probes(self) -> int | None:
        """The ``ivfflat.probes`` a session of this server searches with (None for HNSW)."""
        if self.index.kind != "ivfflat":
            return None
        self.db.execute("SELECT NULL::vector")  # loads pgvector, so its settings exist
        return int(self.db.execute("SELECT current_setting('ivfflat.probes')").fetchall()[0][0])

    def _keys(self, rows) -> Iterator[str]:
        width = len(self.key_columns)
        return (
            row.key
            for row in source_rows((r[:width] for r in rows), self.key_fields, "", (), self.where)
        )

    def _require_index_plan(self, query: sql.Composable, parameters: tuple) -> None:
        plan = self.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, list(parameters)).fetchone()[
            0
        ]
        if not plan_uses_index(plan, self.index.name):
            raise CapabilityUnavailable(
                f"{self.where}: PostgreSQL would not answer the search through the index {self.index.name}; index "
                "search would be exact search in disguise, so it is refused; evaluate with --search exact"
            )
