"""One partition worker, run in this process (no Ray), against a real PostgreSQL: what it asks the store.

A partition reads its key range's stored digests in one statement, whatever
its row count, and finds the rows gone in what that statement returned: the
store is not asked again per block of rows, nor scanned a second time. With
the keys index the driver makes, that statement reads the range through it,
and finds the very rows a scan of the whole table finds.
"""

from __future__ import annotations

import ptah
from ptah.adapters.sources.postgres_partitions import KeyRange, PartitionedSource
from ptah.services.engines.partition import BuildPlan, PartitionWorker
from tests.ray.test_ray_build import SEP, Databases, databases, equals_a_local_build  # noqa: F401 (fixture)

ROWS = 5_000  # more than a block of 2,000 rows in each of the two partitions


def _statements(connection) -> list[str]:
    """Every statement ``connection.execute`` runs from now on, as SQL text, in order."""
    seen: list[str] = []
    execute = connection.execute

    def spy(query, *args, **kwargs):
        seen.append(query if isinstance(query, str) else query.as_string(connection))
        return execute(query, *args, **kwargs)

    connection.execute = spy
    return seen


def test_a_partition_reads_its_ranges_stored_digests_in_one_statement(databases: Databases):
    databases.execute("INSERT INTO items SELECT 't5', i, 'title ' || i, 'body ' || i, 'published' "
                      "FROM generate_series(1000, %s) AS i", (1000 + ROWS - 300 - 1,))
    spec = databases.spec("worker", batch_size=64)
    with ptah.open_project(spec) as project:
        assert project.build().embedded == 272 + ROWS - 300
        inner = project._project
        generation = inner.generation(None)
        source_spec, root, store = inner.spec.source, inner.spec.root, inner.spec.store
    databases.execute("UPDATE items SET body = 'rewritten' WHERE (tenant, id) IN (('t1', 1), ('t5', 4000))")
    databases.execute("UPDATE items SET title = 'renamed' WHERE tenant = %s AND id = 7", (f"a{SEP}b",))
    databases.execute("DELETE FROM items WHERE (tenant, id) IN (('t0', 3), ('t5', 4500))")
    plan = BuildPlan.sealing(source_spec, generation.settings, root, store, generation.identity.identity, 1024)
    worker = PartitionWorker(plan)
    worker.open()
    statements = _statements(worker._store._connection)
    with PartitionedSource(source_spec, root) as source:
        worker.begin(source.export_snapshot(), 32)
        ranges = source.partitions(2)
        results = [worker.run(index, within) for index, within in enumerate(ranges)]
    worker.close()
    assert len(ranges) == 2 and [result.index for result in results] == [0, 1]
    assert sum(result.rows for result in results) == 272 + ROWS - 300 - 2
    assert [(result.embedded, result.deleted) for result in results] == [(2, 1), (1, 1)]
    assert worker.progress() == (1, results[1].rows, 1)
    reads = [text.split(" FROM ")[0] + (" by identity" if "= ANY(" in text else " by range")
             for text in statements if text.startswith("SELECT row_identity")]
    assert reads == ["SELECT row_identity, text_sha256 by range",  # partition 1: its range, once
                     "SELECT row_identity, text_sha256 by identity",  # its row whose key holds U+001F
                     "SELECT row_identity, text_sha256 by range"]  # partition 2
    equals_a_local_build(databases, spec)


def test_a_range_reads_the_same_rows_through_the_keys_index(databases: Databases):
    from ptah.adapters.stores.pgvector import PgvectorStore
    from ptah.adapters.stores.pgvector_ranges import ensure_range_index, stored_in_range, stored_unsplittable

    spec = databases.spec("indexed")
    with ptah.open_project(spec) as project:
        project.build()
        inner = project._project
        identity, source_spec, url = inner.generation(None).identity.identity, inner.spec.source, inner.spec.store
    with PartitionedSource(source_spec) as source:
        ranges, kinds = [*source.partitions(3), KeyRange(None, None)], source.key_kinds
    assert kinds == ("text", "bigint")
    with PgvectorStore(url, create=False) as store:
        scanned = [stored_in_range(store, identity, kinds, within) for within in ranges]
        odd = stored_unsplittable(store, identity, kinds)
        ensure_range_index(store, identity, kinds)
        ensure_range_index(store, identity, kinds)  # once is enough: the second finds it
        store._connection.execute("SET enable_seqscan = off")
        plans = [_plan(store, lambda: stored_in_range(store, identity, kinds, ranges[1])),
                 _plan(store, lambda: stored_unsplittable(store, identity, kinds))]
        indexed = [stored_in_range(store, identity, kinds, within) for within in ranges]
        assert stored_unsplittable(store, identity, kinds) == odd == {f"3:a{SEP}b1:7": f"a{SEP}b{SEP}7"}
        index = f"{store._table(identity)[0]}_keys_tb"
        table = store._table(identity)[0]
        # a key whose integer component is not an integer (the key column's type changed since): the index's
        # expression must not raise, or every later write to the table would fail; at most the range its text
        # component falls in holds it (whose worker deletes it: the source has no such row)
        store._connection.execute(f"INSERT INTO {table} SELECT 'odd', 'a' || chr(31) || '12x', text_sha256, embedding "
                                  f"FROM {table} LIMIT 1")
        found = [stored_in_range(store, identity, kinds, within) for within in ranges[:3]]
        assert [{key: digest for key, digest in got.items() if key != "odd"} for got in found] == indexed[:3]
        assert [("odd" in got) for got in found] == [True, False, False]  # "a" sorts before every "t…" key
        store._connection.execute(f"DELETE FROM {table} WHERE row_identity = 'odd'")
    assert [f"Index Scan on {index}" in plan or f"Index Scan using {index}" in plan for plan in plans] == [True, True]
    assert indexed == scanned and all(scanned)
    assert sum(len(found) for found in scanned[:3]) == len(scanned[3]) == 271  # all but the key holding U+001F


def _plan(store, call) -> str:
    """PostgreSQL's plan for the last statement ``call()`` runs on the store."""
    seen = _statements(store._connection)
    call()
    del store._connection.execute  # the spy
    return "\n".join(row[0] for row in store._connection.execute("EXPLAIN " + seen[-1]))
