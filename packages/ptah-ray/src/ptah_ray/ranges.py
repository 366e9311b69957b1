"""What a pgvector store holds for a set of rows or a key range (a distributed build's partitions).

A partition worker needs the stored text digests of a block of its rows, by
row identity (the primary key), to compare with the rows it reads; and, to find
the stored rows the source no longer has, how many vectors its key range holds
and, when some are gone, their row identities in order. The store keeps each
row's key as the corpus spells it (components joined with U+001F), so a range
is tested on the components split back out, cast to the key column's kind
(``bigint``, or text compared by code point): the source's own order. A key
with more separators than its width allows (a component holding U+001F)
cannot be split back unambiguously; such rows are never matched by a range:
:func:`stored_unsplittable` lists them for the driver, which settles them
once every partition is done.
"""

from __future__ import annotations

from collections.abc import Generator

from psycopg import sql

from ptah.adapters.stores.pgvector import PgvectorStore
from ptah_ray.partitions import KeyRange, range_clause

_IDENTITIES_PER_FETCH = 8192  # row identities per round trip of stored_in_range_in_order's cursor
_SEPARATORS = sql.SQL("length(key) - length(replace(key, chr(31), ''))")


def _selected(
    store: PgvectorStore, identity: str, query, parameters: tuple | None = None
) -> dict[str, str]:
    """The two columns ``query(table)`` selects from the generation's vectors table, as a dict ({}
    when the generation is not registered)."""
    with store._guarded():
        found = store._table(identity)
        if found is None:
            return {}
        return dict(
            store._connection.execute(query(sql.Identifier(found[0])), parameters).fetchall()
        )


def stored_digests(
    store: PgvectorStore, identity: str, row_identities: list[str]
) -> dict[str, str]:
    """``row identity -> text SHA-256`` of those of ``row_identities`` the generation holds a vector
    for."""
    if not row_identities:
        return {}
    return _selected(
        store,
        identity,
        sql.SQL(
            "SELECT row_identity, text_sha256 FROM {} WHERE row_identity = ANY(%s::text[])"
        ).format,
        (row_identities,),
    )


def _components(kinds: tuple[str, ...]) -> list[sql.Composable]:
    """Each key component as the source orders it (``bigint``, or text by code point); NULL for
    every component of a key that does not split into ``len(kinds)`` (no range holds it).

    An integer component is cast to ``numeric`` (the integers' order, and no
    overflow) only when it is written as an integer: these expressions are
    also an index's (:func:`ensure_range_index`), and an expression that
    raised on one stored key -- a key column whose type changed since the
    build -- would fail every later write to the table. Such a key is in no
    range, like an unsplittable one; verify reports its vector if its row is gone.
    """
    width = len(kinds)
    expressions: list[sql.Composable] = []
    for position, kind in enumerate(kinds):
        part = (
            sql.SQL("key")
            if width == 1
            else sql.SQL("split_part(key, chr(31), {})").format(position + 1)
        )
        separated = sql.SQL("{} = {}").format(_SEPARATORS, width - 1)
        if kind == "bigint":
            separated = sql.SQL("{} AND {} ~ '^-?[0-9]+$'").format(separated, part)
            part = sql.SQL("({})::numeric").format(part)
        component = sql.SQL("(CASE WHEN {} THEN {} END)").format(separated, part)
        expressions.append(
            component if kind == "bigint" else sql.SQL('{} COLLATE "C"').format(component)
        )
    return expressions


def ensure_range_index(store: PgvectorStore, identity: str, kinds: tuple[str, ...]) -> None:
    """Index the generation's vectors by key components of these kinds, unless they are already:
    each partition's :func:`count_in_range` and :func:`stored_in_range_in_order` then read its range
    through the index, not the whole table.

    Built once per generation and kinds (a sort of the keys; instant on an empty table), kept up to
    date by every write after, and dropped with the generation's table.
    """
    with store._guarded():
        found = store._table(identity)
        if found is None:
            return
        name = f"{found[0]}_keys_{''.join(kind[0] for kind in kinds)}"[:63]
        store._connection.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({})").format(
                sql.Identifier(name),
                sql.Identifier(found[0]),
                sql.SQL(", ").join(_components(kinds)),
            )
        )


def _in_range(kinds: tuple[str, ...], within: KeyRange) -> sql.Composable:
    """The vectors whose key splits cleanly and lies in ``within``: read through the index of
    :func:`ensure_range_index` where there is one."""
    return sql.SQL("{} AND {} = {}").format(
        range_clause(_components(kinds), within), _SEPARATORS, len(kinds) - 1
    )


def count_in_range(
    store: PgvectorStore, identity: str, kinds: tuple[str, ...], within: KeyRange
) -> int:
    """How many of the generation's vectors have a key that lies in ``within`` (keys that split
    cleanly)."""
    with store._guarded():
        found = store._table(identity)
        if found is None:
            return 0
        return int(
            store._connection.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE {}").format(
                    sql.Identifier(found[0]), _in_range(kinds, within)
                )
            ).fetchone()[0]
        )


def stored_in_range_in_order(
    store: PgvectorStore, identity: str, kinds: tuple[str, ...], within: KeyRange
) -> Generator[str, None, None]:
    """The row identity of each of the generation's vectors whose key lies in ``within``, in code
    point order (``COLLATE "C"``), through a server-side cursor of a snapshot of the store (its own
    connection: the store may write meanwhile, and the snapshot does not see it)."""
    with store.snapshot() as snapshot, store._guarded():
        found = store._table(identity)
        if found is None:
            return
        with snapshot._connection.cursor(name="ptah_stored_in_range") as cursor:
            cursor.itersize = _IDENTITIES_PER_FETCH
            cursor.execute(
                sql.SQL(
                    'SELECT row_identity FROM {} WHERE {} ORDER BY row_identity COLLATE "C"'
                ).format(sql.Identifier(found[0]), _in_range(kinds, within))
            )
            yield from (row_identity for (row_identity,) in cursor)


def stored_unsplittable(
    store: PgvectorStore, identity: str, kinds: tuple[str, ...]
) -> dict[str, str]:
    """``row identity -> key`` of the vectors whose key has more separators than ``len(kinds)``
    components allow (their first component is NULL: read through the index of
    :func:`ensure_range_index` where there is one)."""
    return _selected(
        store,
        identity,
        lambda table: sql.SQL("SELECT row_identity, key FROM {} WHERE {} IS NULL").format(
            table, _components(kinds)[0]
        ),
    )
