"""Reading source rows from a PostgreSQL table or view (psycopg 3).

The contract is :class:`ptah.adapters.sources.sqlite.SqliteSource`'s, exactly: the same keys, row
identities, texts (:func:`~ptah.adapters.sources.rows.source_rows`), filter semantics, order,
``lookup`` answers, errors and exit codes.

* Safety: identifiers are quoted and values bound; only ``source.filter`` is taken as written, as
  one parenthesised ``WHERE`` clause without ``;`` or a comment
  (:func:`~ptah.adapters.sources.rows.filter_problem`), through the extended query protocol, which
  accepts one statement, so it can never ``COMMIT`` and write. A filter the server refuses in the
  read-only transaction is a :class:`SpecError` (exit 2); every statement stops after
  ``source.statement_timeout_s`` (exit 3 naming the setting).
* Snapshot: one ``REPEATABLE READ READ ONLY`` transaction per :class:`PostgresSource`, pinned when
  opened; rows stream through server-side cursors, so a table larger than memory is read in
  pieces.
* Order: by the key columns, integers numerically, text by code point (``COLLATE "C"``, SQLite's
  ``BINARY`` for UTF-8), whatever the database's collation.
* Types: a key column is an integer or a text type, anything else refused at opening; a template
  column renders as :func:`ptah.core.spec.render_value` says (``numeric`` exact, ``boolean`` as
  ``True``/``False``, dates as ``str()``); ``bytea`` is refused like a BLOB.
* Column names match exactly, else case-insensitively when that names one column (as SQLite).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable, Iterator
from typing import cast

from psycopg import IsolationLevel, sql

from ptah.adapters.postgres import connect, pg_errors, psycopg, reason
from ptah.adapters.sources.postgres_index import TableIndexSearch, find_index
from ptah.adapters.sources.rows import (
    OneSnapshot,
    filter_problem,
    is_int64,
    key_splits,
    keyed_records,
    keyed_texts,
    mark_found,
    no_such_column,
    record_identities,
    source_rows,
    text_digests,
)
from ptah.adapters.sources.vectors import TableVectors, table_vectors
from ptah.core.errors import OperationalError, Problem, SourceUnavailable, SpecError
from ptah.core.provenance import RowDigest
from ptah.core.spec import SourceRow, SourceSpec, parse_template, template_columns

LOOKUP_BATCH = 10_000  # keys per statement: one array parameter per key column
ROWS_PER_FETCH = 2_000  # rows per round trip of a server-side cursor
INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})
# Template columns whose text PostgreSQL writes as render_value does: text as it is, an integer as
# str(int). (char(n) is not: psycopg reads its padding, a cast to text drops it.)
_RENDERED_IN_SQL = INTEGER_TYPES | {"text", "character varying"}
# SQLSTATEs that mean the filter cannot run in a read-only snapshot: class 42 syntax, unknown name
# or wrong type; 25 invalid transaction state (a write, or set_config of transaction_read_only); 0A
# not supported there; 22 data (the filter is the only expression ptah's statements evaluate on a
# row's values); 08P01 a $1 nobody binds.
_FILTER_FAULTS = ("42", "25", "0A", "22", "08P01")

_COLUMNS = """
    SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum
"""


class PostgresSource(OneSnapshot):
    """The rows of ``source.table`` as ptah sees them, from one read-only snapshot."""

    def __init__(self, source: SourceSpec, root: str | None = None, *, snapshot: str | None = None):
        self.source = source
        self.where = f"{source.redacted_database} table {source.table}"
        self._names = itertools.count(1)
        if source.filter is not None and (problem := filter_problem(source.filter)):
            raise SpecError([Problem(problem, field="source.filter")])
        self._db = connect(source.database, SourceUnavailable, "source database")
        try:
            self._db.isolation_level = IsolationLevel.REPEATABLE_READ
            self._db.read_only = True
            self._db.execute(
                sql.SQL("SET LOCAL statement_timeout = {}").format(
                    sql.Literal(f"{source.statement_timeout_s}s")
                )
            )
            if (
                snapshot is not None
            ):  # a partition of a distributed build reads the driver's exported snapshot
                self._db.execute(
                    sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot))
                )
            relation = self._relation()
            self._types: dict[str, tuple[str, str]] = {
                name: (kind, category)
                for name, kind, category in self._db.execute(_COLUMNS, (relation,))
            }
            self._table = sql.SQL("{}.{}").format(
                *(sql.Identifier(part) for part in self._qualified(relation))
            )
            self._key_columns = [self._column(k, "source.key_fields") for k in source.key_fields]
            self._keys = sql.SQL(", ").join(sql.Identifier(c) for c in self._key_columns)
            self._kinds = [self._key_kind(name) for name in self._key_columns]
            self._where = (
                sql.SQL("WHERE ({})").format(sql.SQL(source.filter))
                if source.filter
                else sql.SQL("")
            )
            # Used beside bound parameters, where a literal % must be written %%.
            passes = source.filter.replace("%", "%%") if source.filter else None
            self._passes = (
                sql.SQL("CASE WHEN ({}) THEN 1 ELSE 0 END").format(sql.SQL(passes))
                if passes
                else sql.SQL("1")
            )
            self._where_bound = (
                sql.SQL("WHERE ({})").format(sql.SQL(passes)) if passes else sql.SQL("")
            )
            self._check_filter()
        except psycopg.Error as exc:
            self.close()
            raise self._timed_out(exc) or SourceUnavailable(
                f"{self.where}: cannot be read ({reason(exc, source.database)})"
            ) from None
        except (
            BaseException
        ):  # SourceUnavailable, SpecError, and a Ctrl-C while opening: no session left open
            self.close()
            raise

    # --- opening ------------------------------------------------------------------

    def _relation(self) -> int:
        """The table's oid: the name as written (search_path applies), else ``schema.table`` split
        at the dot."""
        table = self.source.table
        oid = self._db.execute("SELECT to_regclass(quote_ident(%s))::oid", (table,)).fetchone()[0]
        if oid is None and "." in table:
            schema, _, name = table.partition(".")
            oid = self._db.execute(
                "SELECT to_regclass(quote_ident(%s) || '.' || quote_ident(%s))::oid", (schema, name)
            ).fetchone()[0]
        if oid is None:
            raise SourceUnavailable(
                f"{self.source.redacted_database}: no table or view named {table}"
            )
        return oid

    def _qualified(self, relation: int) -> tuple[str, str]:
        return self._db.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
            (relation,),
        ).fetchone()

    def _column(self, name: str, field: str) -> str:
        """The table's column ``name`` names: exact, else the one matching case-insensitively."""
        if name in self._types:
            return name
        folded = [column for column in self._types if column.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        raise no_such_column(self.where, name, field, list(self._types))

    def _key_kind(self, column: str) -> str:
        kind, category = self._types[column]
        if kind in INTEGER_TYPES:
            return "bigint"
        if category == "S":
            return "text"
        raise SourceUnavailable(
            f'{self.where}: key column "{column}" is of type {kind}; key columns must hold integers or text'
        )

    def _check_filter(self) -> None:
        """Run the filter once on no rows: a filter PostgreSQL cannot run is the specification's
        fault (exit 2)."""
        query = sql.SQL("SELECT {} FROM {} {} LIMIT 0").format(self._keys, self._table, self._where)
        try:
            self._db.execute(query, prepare=True)
        except pg_errors.InsufficientPrivilege as exc:
            raise SourceUnavailable(
                f"{self.where}: permission denied ({reason(exc, self.source.database)}); grant SELECT on it"
            ) from None
        except psycopg.Error as exc:
            raise self._fault(exc) from None

    def _timed_out(self, exc: psycopg.Error) -> SourceUnavailable | None:
        """The SourceUnavailable (exit 3) to raise when ``exc`` is ``source.statement_timeout_s``
        running out."""
        if not isinstance(exc, pg_errors.QueryCanceled):
            return None
        return SourceUnavailable(
            f"{self.where}: a statement ran longer than source.statement_timeout_s ({self.source.statement_timeout_s} "
            "s) and was stopped; raise the setting, or make source.filter cheaper"
        )

    def _fault(
        self, exc: psycopg.Error, what: str = "cannot be read"
    ) -> OperationalError | SpecError:
        """The error for a failed statement: the filter's fault (SpecError, exit 2), a timeout, or
        else the source unreadable (SourceUnavailable, exit 3) saying ``what``."""
        if (timed_out := self._timed_out(exc)) is not None:
            return timed_out
        if not self.source.filter or not (exc.sqlstate or "").startswith(_FILTER_FAULTS):
            return SourceUnavailable(f"{self.where}: {what} ({reason(exc, self.source.database)})")
        return SpecError(
            [
                Problem(
                    f"PostgreSQL cannot run the filter on table {self.source.table}: "
                    f"{reason(exc, self.source.database)}; fix the SQL expression (a filter is one read-only "
                    "boolean expression)",
                    field="source.filter",
                )
            ]
        )

    # --- reading ------------------------------------------------------------------

    def _execute(self, query: sql.Composable, parameters: list | None = None):
        """Run one statement, always prepared: the extended protocol refuses a second statement."""
        try:
            return self._db.execute(query, parameters, prepare=True)
        except psycopg.Error as exc:
            raise self._fault(exc) from None

    def count(self) -> int:
        """How many rows pass the filter."""
        return int(
            self._execute(
                sql.SQL("SELECT count(*) FROM {} {}").format(self._table, self._where)
            ).fetchone()[0]
        )

    def rows(self, template: str) -> Iterator[SourceRow]:
        """Every row passing the filter, ordered by the key columns, with its rendered text.

        Raises :class:`SourceUnavailable` at the first row whose key is NULL,
        whose key another row already has, or whose template column holds
        binary data.
        """
        columns = template_columns(template)
        actual = [self._column(c, "the text template") for c in columns]
        selected = sql.SQL(", ").join(sql.Identifier(c) for c in (*self._key_columns, *actual))
        cursor = self._cursor(
            sql.SQL("SELECT {} FROM {} {} ORDER BY {}").format(
                selected, self._table, self._where, self._order()
            )
        )
        return self._guarded(
            cursor,
            "rows",
            source_rows(cursor, self.source.key_fields, template, columns, self.where),
        )

    def digests(self, template: str) -> Iterator[RowDigest]:
        """:meth:`rows`, each as its key, identity and text digest -- hashed by the server, 32 bytes
        a row read instead of the text, when it can render ``template`` exactly as ptah does
        (:meth:`_rendered`); else read from the text."""
        rendered = self._rendered(template) if self.digests_in_database else None
        if rendered is None:
            return text_digests(self.rows(template))
        query = sql.SQL("SELECT {}, sha256(convert_to({}, 'UTF8')) FROM {} {} ORDER BY {}").format(
            self._keys, rendered, self._table, self._where, self._order()
        )
        cursor = self._cursor(query, binary=True)
        records = keyed_records(cursor, self.source.key_fields, self.where)
        digests = (
            RowDigest(key, identity, cast(bytes, values[0]).hex())
            for key, identity, values in records
        )
        return self._guarded(cursor, "rows", digests)

    def identities(self) -> Generator[str, None, None] | None:
        """Sorted by the server on the identity spelled in SQL, ``COLLATE "C"`` (no PostgreSQL text
        holds a NUL)."""
        spelled = sql.SQL(" || ").join(
            sql.SQL("length({0}::text) || ':' || {0}::text").format(sql.Identifier(c))
            for c in self._key_columns
        )
        cursor = self._cursor(
            sql.SQL('SELECT {} FROM {} {} ORDER BY ({}) COLLATE "C"').format(
                self._keys, self._table, self._where, spelled
            )
        )
        return self._guarded(
            cursor, "rows", record_identities(cursor, self.source.key_fields, self.where)
        )

    digests_in_database = (
        True  # False reads every digest from the text (the tests compare both ways)
    )

    def _rendered(self, template: str) -> sql.Composable | None:
        """``template`` as one SQL text expression equal to ptah's rendering (NULL as nothing, an
        integer as its decimal text), or None when it cannot be: a column of another type, a literal
        with a NUL (no PostgreSQL text holds one), a database not encoded in UTF-8."""
        if self._db.info.parameter_status("server_encoding") != "UTF8":
            return None
        parts: list[sql.Composable] = [sql.SQL("''::text")]
        for is_column, value in parse_template(template):
            if not is_column:
                if "\x00" in value:
                    return None
                parts.append(sql.SQL("{}::text").format(sql.Literal(value)))
                continue
            name = self._column(value, "the text template")
            if self._types[name][0].split("(")[0] not in _RENDERED_IN_SQL:
                return None
            parts.append(sql.SQL("coalesce({}::text, '')").format(sql.Identifier(name)))
        return sql.SQL(" || ").join(parts)

    def _order(self) -> sql.Composable:
        """The key columns, integers numerically and text by code point."""
        return sql.SQL(", ").join(self._key_expressions())

    def _key_expressions(self) -> list[sql.Composable]:
        """Each key column as it orders: integers as they are, text ``COLLATE "C"`` (code point
        order)."""
        return [
            sql.SQL('{} COLLATE "C"' if kind == "text" else "{}").format(sql.Identifier(c))
            for c, kind in zip(self._key_columns, self._kinds)
        ]

    def _cursor(self, query: sql.Composable, binary: bool = False):
        """A server-side cursor running ``query`` (one statement, extended protocol; ``binary``:
        values read in PostgreSQL's binary form, a ``bytea`` as its bytes)."""
        cursor = self._db.cursor(name=f"ptah_rows_{next(self._names)}", binary=binary)
        cursor.itersize = ROWS_PER_FETCH
        try:
            cursor.execute(
                query
            )  # DECLARE … CURSOR: psycopg sends it through the extended protocol
        except psycopg.Error as exc:
            raise self._fault(exc) from None
        return cursor

    def _guarded(self, cursor, what: str, items: Iterator) -> Generator:
        """``items`` (read from ``cursor``) with a failed read said in one sentence; the cursor
        closed at the end."""
        try:
            yield from items
        except psycopg.Error as exc:
            raise self._fault(exc, f"reading {what} failed") from None
        finally:
            try:
                cursor.close()
            except psycopg.Error:
                pass  # the transaction already failed; closing the connection ends the cursor

    def vectors(self, column: str) -> TableVectors:
        """Every row passing the filter with the vector ``column`` holds, by key (the order of
        :meth:`rows`).

        The column must be a pgvector ``vector`` or ``halfvec``; it is read as
        its text form ``[1,2,3]`` (no adapter registered on psycopg), through
        a server-side cursor of this source's one snapshot.
        """
        name = self._column(column, "vectors.column")
        kind = self._types[name][0]
        if not kind.startswith(("vector", "halfvec")):
            raise SourceUnavailable(
                f'{self.where}: column "{name}" is of type {kind}; vectors: reads a pgvector '
                "vector or halfvec column"
            )
        selected = sql.SQL(", ").join(
            [
                *(sql.Identifier(c) for c in self._key_columns),
                sql.SQL("{}::text").format(sql.Identifier(name)),
            ]
        )
        cursor = self._cursor(
            sql.SQL("SELECT {} FROM {} {} ORDER BY {}").format(
                selected, self._table, self._where, self._order()
            )
        )
        return table_vectors(
            self._guarded(cursor, "vectors", cursor), self.source.key_fields, column, self.where
        )

    def index_search(self, column: str, *, unit_vectors: bool) -> TableIndexSearch:
        """Search ``column`` through the index the table has on it
        (:mod:`~ptah.adapters.sources.postgres_index`).

        InputError (exit 2) when it has none whose operator class ranks by cosine.
        """
        name = self._column(column, "vectors.column")
        try:
            index = find_index(
                self._db, self._relation(), self.source.table, name, unit_vectors=unit_vectors
            )
        except psycopg.Error as exc:
            raise SourceUnavailable(
                f"{self.where}: cannot be read ({reason(exc, self.source.database)})"
            ) from None
        return TableIndexSearch(
            self._db,
            index,
            self._table,
            self._key_columns,
            self.source.key_fields,
            name,
            self._types[name][0].split("(")[0],
            self._where_bound,
            self.where,
            self._execute,
        )

    # --- lookup -------------------------------------------------------------------

    def texts_of(self, template: str, keys: Iterable[str]) -> dict[str, str]:
        """The text ``template`` renders for each of ``keys`` that is a row passing the filter, read
        through the key's index (:data:`LOOKUP_BATCH` keys a statement), not by reading the table.

        The same texts :meth:`rows` gives those keys; a key no row has, or whose rows the filter
        excludes, is left out. Raises as :meth:`rows` does for the rows read.
        """
        columns = template_columns(template)
        actual = [self._column(c, "the text template") for c in columns]
        selected = sql.SQL(", ").join(sql.Identifier(c) for c in (*self._key_columns, *actual))
        wanted = key_splits(keys, len(self._key_columns))
        # The filter inside CASE WHEN … THEN, as lookup() holds it: one expression, whatever
        # parentheses it closes.
        statements = (
            self._execute(
                sql.SQL("SELECT {} FROM {} WHERE {} AND {} = 1").format(
                    selected, self._table, match, self._passes
                ),
                parameters,
            )
            for match, parameters in self._matching(wanted)
        )
        return keyed_texts(
            statements, self.source.key_fields, template, columns, wanted, self.where
        )

    def _find(self, found: dict[tuple[str, ...], str], result: dict[str, str]) -> None:
        """Mark in ``result`` each of ``found``'s components (for its key or identity) that a row
        has."""
        for match, parameters in self._matching(found):
            query = sql.SQL("SELECT {}, {} FROM {} WHERE {}").format(
                self._keys, self._passes, self._table, match
            )
            mark_found(self._execute(query, parameters), self.source.key_fields, found, result)

    def _matching(self, wanted: Iterable[tuple[str, ...]]) -> Iterator[tuple[sql.Composable, list]]:
        """The condition on the key columns matching ``wanted``'s components, with its parameters
        (one array per key column), :data:`LOOKUP_BATCH` at a time; components no key column can
        hold (``0042`` or ``x`` for an integer column, a NUL in any text) are left out, and the
        caller compares the rendered keys."""
        arrays = sql.SQL(", ").join(sql.SQL(f"%s::{kind}[]") for kind in self._kinds)
        match = sql.SQL("({}) IN (SELECT * FROM unnest({}))").format(self._keys, arrays)
        pending = [
            components
            for components in wanted
            if all(
                is_int64(c) if kind == "bigint" else "\x00" not in c
                for c, kind in zip(components, self._kinds)
            )
        ]
        for start in range(0, len(pending), LOOKUP_BATCH):
            batch = pending[start : start + LOOKUP_BATCH]
            yield (
                match,
                [
                    [int(c[i]) if kind == "bigint" else c[i] for c in batch]
                    for i, kind in enumerate(self._kinds)
                ],
            )
