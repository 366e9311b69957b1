"""HNSW indexes on a generation's vectors table, and search through them (pgvector).

One index kind: ``hnsw`` over cosine distance (``vector_cosine_ops``), named
``<vectors table>_hnsw``. Search is ``ORDER BY embedding <=> query LIMIT n``
with ``SET LOCAL hnsw.ef_search`` and sequential scans switched off, so the
planner can never answer a small table exactly instead and pass it off as the
index's answer. Scores are cosine similarities, ``1 - (embedding <=> query)``,
computed by pgvector.

pgvector's limits apply: ``m`` 2..100, ``ef_construction`` 4..1000 and at
least ``2 * m``, ``ef_search`` 1..1000; an HNSW scan returns at most
``ef_search`` rows whatever the limit.
"""

from __future__ import annotations

import numpy as np
from psycopg import sql

from ptah.adapters.postgres import plan_uses_index, vector_literal
from ptah.core.errors import CapabilityUnavailable

HNSW_OPERATOR_CLASS = "vector_cosine_ops"
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_EF_SEARCH = 40  # pgvector's own default


def describe_index(connection, table: str) -> dict | None:
    """The HNSW cosine index on ``table`` as ``{name, kind, m, ef_construction, operator_class}``,
    or None."""
    row = connection.execute(
        """
        SELECT i.relname, i.reloptions FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
        JOIN pg_opclass o ON o.oid = x.indclass[0]
        WHERE x.indrelid = to_regclass(quote_ident(%s)) AND am.amname = 'hnsw' AND o.opcname = %s
        ORDER BY i.relname LIMIT 1
        """,
        (table, HNSW_OPERATOR_CLASS),
    ).fetchone()
    if row is None:
        return None
    options = dict(option.split("=", 1) for option in row[1] or ())
    return {
        "name": row[0],
        "kind": "hnsw",
        "m": int(options.get("m", DEFAULT_M)),
        "ef_construction": int(options.get("ef_construction", DEFAULT_EF_CONSTRUCTION)),
        "operator_class": HNSW_OPERATOR_CLASS,
    }


def create_hnsw_index(connection, table: str, m: int, ef_construction: int) -> None:
    """Replace ``table``'s HNSW index with one of these parameters (inside the caller's
    transaction)."""
    index = sql.Identifier(f"{table}_hnsw")
    connection.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(index))
    connection.execute(
        sql.SQL(
            "CREATE INDEX {} ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})"
        ).format(
            index,
            sql.Identifier(table),
            sql.Identifier(HNSW_OPERATOR_CLASS),
            sql.Literal(int(m)),
            sql.Literal(int(ef_construction)),
        )
    )


def nearest(
    connection, table: str, vectors: np.ndarray, limits: list[int], ef_search: int
) -> list[list[tuple[str, float]]]:
    """Each query's nearest rows through the index: ``(key, cosine similarity)`` in the index's
    order.

    Runs inside the caller's (read-only) transaction; the settings are
    ``SET LOCAL``, so they end with it.
    """
    connection.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(ef_search))))
    connection.execute("SET LOCAL enable_seqscan = off")
    query = sql.SQL(
        "SELECT key, 1 - (embedding <=> %s::vector) FROM {} ORDER BY embedding <=> %s::vector LIMIT %s"
    ).format(sql.Identifier(table))
    if len(vectors):
        _require_index_plan(connection, query, table, vector_literal(vectors[0]), max(limits))
    results = []
    for vector, limit in zip(vectors, limits):
        literal = vector_literal(vector)
        results.append(
            [
                (key, float(score))
                for key, score in connection.execute(query, (literal, literal, int(limit)))
            ]
        )
    return results


def _require_index_plan(connection, query, table: str, literal: str, limit: int) -> None:
    """Refuse unless the planner answers the query through the HNSW index
    (:func:`plan_uses_index`)."""
    plan = connection.execute(
        sql.SQL("EXPLAIN (FORMAT JSON) ") + query, (literal, literal, int(limit))
    ).fetchone()[0]
    index = f"{table}_hnsw"
    if not plan_uses_index(plan, index):
        raise CapabilityUnavailable(
            f"PostgreSQL would not answer the search through the HNSW index {index}; "
            "index search would be exact search in disguise, so it is refused. Rebuild the index with "
            "`ptah inference index NAME --hnsw`, or use --search exact."
        )
