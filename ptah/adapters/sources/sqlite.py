"""Reading source rows from a SQLite table with the standard library.

* Safety: identifiers are quoted and values bound; only ``source.filter``, the user's own SQL, is
  taken as written, as one parenthesised expression without ``;`` or a comment
  (:func:`~ptah.adapters.sources.rows.filter_problem`), and ``execute`` refuses a second
  statement. Nothing can write: the file is opened read-only with ``PRAGMA query_only`` on (no
  ``ATTACH``, no pragma, no extension). ``source.statement_timeout_s`` is PostgreSQL's alone.
* Snapshot: opened read-only (``file:…?mode=ro``) with a read transaction pinned at once, so all
  one :class:`SqliteSource` answers comes from one snapshot while others write; :meth:`close`
  ends it.
* Errors: a missing file, table or column, an unreadable database, a key that is not an integer
  or text, two rows with one key, or a BLOB in a template column is :class:`SourceUnavailable`
  (exit 3), naming table, column, row and the redacted database; a ``filter`` SQLite cannot run is
  :class:`SpecError` (exit 2) with SQLite's reason.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Generator, Iterable, Iterator
from urllib.parse import quote

from ptah.adapters.sources.rows import (
    OneSnapshot,
    filter_problem,
    is_int64,
    key_splits,
    keyed_texts,
    mark_found,
    no_such_column,
    record_identities,
    rendered_components,
    source_rows,
    text_digests,
)
from ptah.adapters.sources.vectors import TableVectors, table_vectors
from ptah.core.errors import Problem, SourceUnavailable, SpecError
from ptah.core.provenance import RowDigest
from ptah.core.spec import SourceRow, SourceSpec, sqlite_database_path, template_columns

LOOKUP_PARAMETERS = 900  # below SQLite's oldest default limit of 999 bound parameters per statement


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier: double-quoted, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


class SqliteSource(OneSnapshot):
    """The rows of ``source.table`` as ptah sees them, from one read-only snapshot."""

    def __init__(self, source: SourceSpec, root: str):
        self.source = source
        self.where = f"{source.redacted_database} table {source.table}"
        path = sqlite_database_path(source.database, root)
        if path is None:
            raise SourceUnavailable(
                f"{source.redacted_database}: not a sqlite:/// URL; the SQLite reader cannot open it"
            )
        self.path = path
        if source.filter is not None and (problem := filter_problem(source.filter)):
            raise SpecError([Problem(problem, field="source.filter")])
        if not os.path.isfile(path):
            raise SourceUnavailable(f"{source.redacted_database}: no such database file {path}")
        try:
            self._db = sqlite3.connect(
                f"file:{quote(path)}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
            self._db.execute("PRAGMA query_only = ON")
            self._db.execute("BEGIN")
            # The first read pins the snapshot; later statements see the same one.
            self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            names = [
                row[0]
                for row in self._db.execute(
                    "SELECT name FROM pragma_table_xinfo(?)", (source.table,)
                )
            ]
        except sqlite3.Error as exc:
            self.close()
            raise SourceUnavailable(
                f"{source.redacted_database}: cannot be read as SQLite ({exc})"
            ) from None
        self._table = quote_identifier(source.table)
        self._keys = ", ".join(quote_identifier(k) for k in source.key_fields)
        # Text by code point whatever a column's declared collation (PostgreSQL's COLLATE "C"):
        # equal keys are neighbours, and both sources list rows in one order.
        self._order = ", ".join(f"{quote_identifier(k)} COLLATE BINARY" for k in source.key_fields)
        self._where = f"WHERE ({source.filter})" if source.filter else ""
        self._passes = f"CASE WHEN ({source.filter}) THEN 1 ELSE 0 END" if source.filter else "1"
        self._columns = {name.lower(): name for name in names}
        try:
            if not names:
                raise SourceUnavailable(
                    f"{source.redacted_database}: no table or view named {source.table}"
                )
            self._check_columns(source.key_fields, "source.key_fields")
            self._execute(
                f"SELECT 1 FROM {self._table} {self._where} LIMIT 0"
            )  # the filter, checked once
        except (SourceUnavailable, SpecError):
            self.close()
            raise

    def _check_columns(self, columns: Iterable[str], field: str) -> None:
        for column in columns:
            if column.lower() not in self._columns:
                raise no_such_column(self.where, column, field, list(self._columns.values()))

    def _execute(self, sql: str, parameters: tuple | list = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def _fault(
        self, exc: sqlite3.Error, what: str = "cannot be read"
    ) -> SpecError | SourceUnavailable:
        """The SpecError (exit 2) when ``exc`` is the filter's fault, else SourceUnavailable (exit
        3) saying ``what``.

        With the table and columns checked at open, SQLite's generic error
        (``SQLITE_ERROR``: syntax, unknown name, ``load_extension`` not
        authorized…) or the driver's refusal (a second statement, a
        parameter) can only come from the filter; a busy, damaged or
        unreadable file cannot.
        """
        code = getattr(exc, "sqlite_errorcode", None)
        if not self.source.filter or (code is not None and code & 0xFF != sqlite3.SQLITE_ERROR):
            return SourceUnavailable(f"{self.where}: {what} ({exc})")
        return SpecError(
            [
                Problem(
                    f"SQLite cannot run the filter on table {self.source.table}: {exc}; fix the SQL "
                    "expression",
                    field="source.filter",
                )
            ]
        )

    def count(self) -> int:
        """How many rows pass the filter."""
        return int(self._execute(f"SELECT count(*) FROM {self._table} {self._where}").fetchone()[0])

    def rows(self, template: str) -> Iterator[SourceRow]:
        """Every row passing the filter, ordered by the key columns, with its rendered text.

        Raises :class:`SourceUnavailable` at the first row whose key is not
        integers/text, whose key another row already has, or whose template
        column holds a BLOB.
        """
        columns = template_columns(template)
        self._check_columns(columns, "the text template")
        selected = ", ".join(quote_identifier(c) for c in (*self.source.key_fields, *columns))
        cursor = self._execute(
            f"SELECT {selected} FROM {self._table} {self._where} ORDER BY {self._order}"
        )
        return self._guarded(
            source_rows(cursor, self.source.key_fields, template, columns, self.where, self._twin)
        )

    def digests(self, template: str) -> Iterator[RowDigest]:
        """:meth:`rows`, each as its key, identity and text digest (SQLite has no SHA-256: hashed
        here)."""
        return text_digests(self.rows(template))

    def identities(self) -> Generator[str, None, None] | None:
        """Sorted by SQLite on the identity spelled in SQL; None when a key holds a NUL (``length``
        stops at one)."""
        columns = [quote_identifier(k) for k in self.source.key_fields]
        nul = " OR ".join(f"instr(CAST({column} AS BLOB), x'00') > 0" for column in columns)
        passes = f"({self.source.filter}) AND " if self.source.filter else ""
        if self._execute(
            f"SELECT EXISTS (SELECT 1 FROM {self._table} WHERE {passes}({nul}))"
        ).fetchone()[0]:
            return None
        spelled = " || ".join(
            f"length(CAST({column} AS TEXT)) || ':' || CAST({column} AS TEXT)" for column in columns
        )
        cursor = self._execute(
            f"SELECT {self._keys} FROM {self._table} {self._where} ORDER BY {spelled} COLLATE BINARY"
        )
        return self._guarded(record_identities(cursor, self.source.key_fields, self.where))

    def _guarded(self, items: Iterator) -> Generator:
        """``items`` (read from a cursor) with a failed read said in one sentence."""
        try:
            yield from items
        except sqlite3.Error as exc:
            raise self._fault(exc, "reading rows failed") from None

    def _twin(self, components: tuple[str, ...]) -> bool:
        """Whether more than one row passing the filter renders to ``components`` (``1`` and
        ``'1'``)."""
        fields = self.source.key_fields
        candidates = _candidates(components)
        term = "(" + " AND ".join(f"{quote_identifier(k)} = ?" for k in fields) + ")"
        passes = f" AND ({self.source.filter})" if self.source.filter else ""
        sql = f"SELECT {self._keys} FROM {self._table} WHERE ({' OR '.join([term] * len(candidates))}){passes}"
        found = self._execute(sql, [value for candidate in candidates for value in candidate])
        return sum(1 for values in found if rendered_components(values, fields) == components) > 1

    def vectors(self, column: str) -> TableVectors:
        """Every row passing the filter with the vector ``column`` holds (see
        :mod:`~ptah.adapters.sources.vectors`), by key."""
        self._check_columns((column,), "vectors.column")
        selected = f"{self._keys}, {quote_identifier(self._columns[column.lower()])}"
        cursor = self._execute(
            f"SELECT {selected} FROM {self._table} {self._where} ORDER BY {self._order}"
        )
        try:
            return table_vectors(cursor, self.source.key_fields, column, self.where, self._twin)
        except sqlite3.Error as exc:
            raise self._fault(exc, "reading vectors failed") from None

    def texts_of(self, template: str, keys: Iterable[str]) -> dict[str, str]:
        """The text ``template`` renders for each of ``keys`` that is a row passing the filter, read
        through the key's index (a few statements of at most :data:`LOOKUP_PARAMETERS` values), not
        by reading the table.

        The same texts :meth:`rows` gives those keys; a key no row has, or whose rows the filter
        excludes, is left out. Raises as :meth:`rows` does for the rows read.
        """
        columns = template_columns(template)
        self._check_columns(columns, "the text template")
        selected = ", ".join(quote_identifier(c) for c in (*self.source.key_fields, *columns))
        wanted = key_splits(keys, len(self.source.key_fields))
        # The filter inside CASE WHEN … THEN, as lookup() holds it: one expression, whatever
        # parentheses it closes.
        statements = (
            self._execute(
                f"SELECT {selected} FROM {self._table} WHERE ({match}) AND {self._passes} = 1",
                parameters,
            )
            for match, parameters in self._matching(wanted)
        )
        try:
            return keyed_texts(
                statements, self.source.key_fields, template, columns, wanted, self.where
            )
        except sqlite3.Error as exc:
            raise self._fault(exc, "reading rows failed") from None

    def _find(self, wanted: dict[tuple[str, ...], str], result: dict[str, str]) -> None:
        """Mark in ``result`` each of ``wanted``'s components (for its key or identity) found."""
        for match, parameters in self._matching(wanted):
            found = self._execute(
                f"SELECT {self._keys}, {self._passes} FROM {self._table} WHERE {match}", parameters
            )
            mark_found(found, self.source.key_fields, wanted, result)

    def _matching(self, wanted: Iterable[tuple[str, ...]]) -> Iterator[tuple[str, list]]:
        """The condition on the key columns matching ``wanted``'s components, with its parameters,
        one statement's worth (:data:`LOOKUP_PARAMETERS`) at a time; SQL only narrows, the caller
        compares the rendered keys."""
        width = len(self.source.key_fields)
        batch: list[tuple] = []
        for components in wanted:
            candidates = _candidates(components)
            if batch and (len(batch) + len(candidates)) * width > LOOKUP_PARAMETERS:
                yield self._match(batch)
                batch = []
            batch.extend(candidates)
        if batch:
            yield self._match(batch)

    def _match(self, candidates: list[tuple]) -> tuple[str, list]:
        if len(self.source.key_fields) == 1:
            match = f"{self._keys} IN ({', '.join('?' * len(candidates))})"
        else:  # an OR of equalities: SQLite searches the key index for each (a row-value IN scans)
            term = (
                "("
                + " AND ".join(f"{quote_identifier(k)} = ?" for k in self.source.key_fields)
                + ")"
            )
            match = " OR ".join([term] * len(candidates))
        return match, [value for candidate in candidates for value in candidate]


def _candidates(components: tuple[str, ...]) -> list[tuple]:
    """Every way the key's components can be stored: as text, and as an integer where it renders
    back exactly.

    SQL only narrows the search; the caller compares the rendered keys.
    """
    options: list[list] = [[c, int(c)] if is_int64(c) else [c] for c in components]
    combos: list[tuple] = [()]
    for choice in options:
        combos = [combo + (value,) for combo in combos for value in choice]
    return combos
