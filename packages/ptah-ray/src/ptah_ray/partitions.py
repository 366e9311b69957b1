"""A PostgreSQL source cut into key ranges, all read inside one exported snapshot (distributed
builds).

A distributed build's driver opens a :class:`PartitionedSource` (the source's
one read-only ``REPEATABLE READ`` transaction, filter checked exactly as
:class:`~ptah.adapters.sources.postgres.PostgresSource` checks it), exports its
snapshot (:meth:`PartitionedSource.export_snapshot`) and cuts the filtered
rows into key ranges (:meth:`PartitionedSource.partitions`). Each worker opens
a :class:`PartitionedSource` with that snapshot id and its range: it sees the
very rows the driver saw, and only those of its range.

Ranges compare the key columns as the source orders them (integers
numerically, text by code point), as one row value: ``low`` inclusive, ``high``
exclusive, None unbounded. The cuts are keys of rows of the snapshot, so
every row of it falls in exactly one range. A NULL key is refused before any
range is cut, with the message reading the rows gives (a NULL compares with
nothing and would fall in no range).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from psycopg import sql

from ptah import SourceSpec
from ptah.adapters.sources.postgres import PostgresSource
from ptah.adapters.sources.rows import key_components

_ROW_NUMBER = sql.Identifier("ptah partition row")


class KeyRange(NamedTuple):
    """Rows whose key (as a tuple of key column values) is ``>= low`` and ``< high``; None:
    unbounded."""

    low: tuple | None
    high: tuple | None


class PartitionedSource(PostgresSource):
    """A PostgreSQL source, optionally inside an exported ``snapshot`` and narrowed to one key
    range."""

    def __init__(
        self,
        source: SourceSpec,
        root: str | None = None,
        *,
        snapshot: str | None = None,
        within: KeyRange | None = None,
    ):
        super().__init__(source, root, snapshot=snapshot)
        self.within = within
        self._narrowed = bool(source.filter)  # whether self._where holds a WHERE already
        if within is not None and (within.low is not None or within.high is not None):
            clause = range_clause(self._key_expressions(), within)
            glue = sql.SQL("{} AND {}") if self._narrowed else sql.SQL("{}WHERE {}")
            self._where, self._narrowed = glue.format(self._where, clause), True

    @property
    def key_kinds(self) -> tuple[str, ...]:
        """Each key column's kind: ``bigint`` or ``text``."""
        return tuple(self._kinds)

    def export_snapshot(self) -> str:
        """This source's snapshot id, for workers' ``snapshot=`` while this source stays open."""
        return self._execute(sql.SQL("SELECT pg_export_snapshot()")).fetchone()[0]

    def partitions(self, count: int, rows: int | None = None) -> list[KeyRange]:
        """At most ``count`` key ranges of about equal row counts covering every row that passes the
        filter (``rows``: their number, when the caller counted them in this snapshot already).

        Raises :class:`SourceUnavailable` for a row whose key is NULL, as reading the rows would.
        """
        self._refuse_null_keys()
        rows = self.count() if rows is None else rows
        step = max(1, math.ceil(rows / max(1, count)))
        query = sql.SQL(
            "SELECT {keys} FROM (SELECT {keys}, row_number() OVER (ORDER BY {order}) AS {n} FROM {table} {where}) "
            "AS ptah_ranked WHERE ({n} - 1) % {step} = 0 AND {n} > 1 ORDER BY {n}"
        ).format(
            keys=self._keys,
            order=self._order(),
            n=_ROW_NUMBER,
            table=self._table,
            where=self._where,
            step=sql.Literal(step),
        )
        cuts = [tuple(values) for values in self._execute(query)]
        return [KeyRange(low, high) for low, high in zip([None, *cuts], [*cuts, None])]

    def _refuse_null_keys(self) -> None:
        nulls = sql.SQL(" OR ").join(
            sql.SQL("{} IS NULL").format(sql.Identifier(c)) for c in self._key_columns
        )
        glue = sql.SQL("{} AND ({})") if self._narrowed else sql.SQL("{}WHERE ({})")
        query = sql.SQL("SELECT {} FROM {} {} LIMIT 1").format(
            self._keys, self._table, glue.format(self._where, nulls)
        )
        found = self._execute(query).fetchone()
        if found is not None:
            key_components(found, self.source.key_fields, self.where)  # raises, naming the row


def range_clause(expressions: list[sql.Composable], within: KeyRange) -> sql.Composable:
    """``(expressions) >= (low) AND (expressions) < (high)`` as SQL with literal bounds (TRUE when
    unbounded)."""
    row = (
        sql.SQL("({})").format(sql.SQL(", ").join(expressions))
        if len(expressions) > 1
        else expressions[0]
    )
    parts = []
    for bound, operator in ((within.low, ">="), (within.high, "<")):
        if bound is not None:
            values = sql.SQL(", ").join(sql.Literal(value) for value in bound)
            literal = sql.SQL("({})").format(values) if len(bound) > 1 else values
            parts.append(sql.SQL("{} {} {}").format(row, sql.SQL(operator), literal))
    return sql.SQL("({})").format(sql.SQL(" AND ").join(parts)) if parts else sql.SQL("TRUE")
