"""One partition worker, run in this process (no Ray), against a real PostgreSQL: what it asks the
store.

A partition reads its rows a block at a time and asks the store for each
block's stored digests by row identity; it counts its range's vectors once,
and reads the range's stored row identities (in a snapshot of the store) only
when some of them have no row left. With a block smaller than the partition,
and batches that straddle blocks, its results and the store it leaves are
those of a local build.
"""

from __future__ import annotations

import pytest
from distributed import SEP, Databases, equals_a_local_build

import ptah
from ptah.adapters.stores.pgvector import PgvectorStore
from ptah.services import verify
from ptah_ray.partition import BuildPlan, PartitionWorker
from ptah_ray.partitions import KeyRange, PartitionedSource

ROWS = 5_000  # more than a block of 2,048 rows in each of the two partitions


def _statements(connection) -> list[str]:
    """Every statement ``connection.execute`` runs from now on, as SQL text, in order."""
    seen: list[str] = []
    execute = connection.execute

    def spy(query, *args, **kwargs):
        seen.append(query if isinstance(query, str) else query.as_string(connection))
        return execute(query, *args, **kwargs)

    connection.execute = spy
    return seen


def _snapshots(monkeypatch) -> list[int]:
    """One entry for each store snapshot opened from now on (the worker reads the range's stored
    rows in one)."""
    opened: list[int] = []
    snapshot = PgvectorStore.snapshot

    def counted(self, *args, **kwargs):
        opened.append(1)
        return snapshot(self, *args, **kwargs)

    monkeypatch.setattr(PgvectorStore, "snapshot", counted)
    return opened


def _worker(spec: str, batch_rows: int) -> tuple[PartitionWorker, object]:
    with ptah.open_project(spec) as project:
        generation = project.generation(None)
        source_spec, root, store = project.spec.source, project.spec.root, project.spec.store
    worker = PartitionWorker(
        BuildPlan.sealing(
            source_spec, generation.settings, root, store, generation.identity.identity, batch_rows
        )
    )
    worker.open()
    return worker, source_spec


def _run(worker: PartitionWorker, source_spec, partitions: int) -> list:
    """Each of ``partitions`` key ranges of the source run by ``worker``, in one exported
    snapshot."""
    with PartitionedSource(source_spec, worker.plan.root) as source:
        worker.begin(source.export_snapshot(), 32)
        ranges = source.partitions(partitions)
        assert len(ranges) == partitions
        return [worker.run(index, within) for index, within in enumerate(ranges)]


def test_a_partition_asks_the_store_a_block_of_rows_at_a_time(databases: Databases, monkeypatch):
    databases.execute(
        "INSERT INTO items SELECT 't5', i, 'title ' || i, 'body ' || i, 'published' "
        "FROM generate_series(1000, %s) AS i",
        (1000 + ROWS - 300 - 1,),
    )
    spec = databases.spec("worker", batch_size=64)
    with ptah.open_project(spec) as project:
        assert project.build().embedded == 272 + ROWS - 300
    databases.execute(
        "UPDATE items SET body = 'rewritten' WHERE (tenant, id) IN (('t1', 1), ('t5', 4000))"
    )
    databases.execute(
        "UPDATE items SET title = 'renamed' WHERE tenant = %s AND id = 7", (f"a{SEP}b",)
    )
    databases.execute("DELETE FROM items WHERE (tenant, id) IN (('t0', 3), ('t5', 4500))")
    worker, source_spec = _worker(spec, 1024)
    statements, snapshots = _statements(worker._store._connection), _snapshots(monkeypatch)
    results = _run(worker, source_spec, 2)
    assert [result.index for result in results] == [0, 1]
    assert sum(result.rows for result in results) == 272 + ROWS - 300 - 2
    assert [result.rows for result in results] == [2_485, 2_485]  # 2 blocks each
    assert [(result.embedded, result.deleted) for result in results] == [(2, 1), (1, 1)]
    assert [result.unsplittable for result in results] == [
        [(f"a{SEP}b{SEP}7", f"3:a{SEP}b1:7")],
        [],
    ]
    assert worker.progress() == (1, results[1].rows, 1)
    assert (
        len(snapshots) == 2
    )  # each partition lost a row: its stored rows read once, in a snapshot
    assert _reads(statements) == ["count", "by identity", "by identity"] * 2
    equals_a_local_build(databases, spec)

    statements.clear(), snapshots.clear()
    again = _run(
        worker, source_spec, 2
    )  # nothing changed: no row gone, so no stored row of the range is read
    worker.close()
    assert [(result.rows, result.embedded, result.deleted) for result in again] == [
        (2_485, 0, 0),
        (2_485, 0, 0),
    ]
    assert not snapshots and _reads(statements) == ["count", "by identity", "by identity"] * 2


def _reads(statements: list[str]) -> list[str]:
    """The store's reads among ``statements``: ``count`` (the range's vectors) and ``by identity``
    (a block's)."""
    return [
        "count" if text.startswith("SELECT count(*)") else "by identity"
        for text in statements
        if text.startswith(("SELECT row_identity", "SELECT count(*)"))
    ]


@pytest.mark.parametrize("block", [7, 100])
def test_a_block_smaller_than_the_partition_gives_the_results_and_store_of_a_whole_one(
    databases: Databases, monkeypatch, block
):
    spec = databases.spec("small", batch_size=4)
    with ptah.open_project(spec) as project:
        assert project.build().embedded == 272
    databases.execute(
        "UPDATE items SET body = 'rewritten ' || id WHERE id % 13 = 1"
    )  # 23 rows, 2 of them drafts
    databases.execute(
        "UPDATE items SET title = 'renamed' WHERE tenant = %s AND id = 7", (f"a{SEP}b",)
    )
    databases.execute(
        "DELETE FROM items WHERE id % 17 = 2 OR id BETWEEN 100 AND 119"
    )  # 37 rows, 2 drafts
    databases.execute(
        "INSERT INTO items SELECT 't' || (i % 4), i, 'title ' || i, 'new ' || i, 'published' "
        "FROM generate_series(300, 339) AS i"
    )
    monkeypatch.setattr(verify, "BLOCK_ROWS", block)
    worker, source_spec = _worker(spec, 5)  # batches of 5 straddle blocks of 7
    results = _run(worker, source_spec, 3)
    worker.close()
    assert sum(result.rows for result in results) == 272 - 35 + 40
    assert (
        sum(result.embedded for result in results) == 21 - 4 + 1 + 40
    )  # edited, less those deleted; U+001F; new
    assert sum(result.deleted for result in results) == 35
    assert [
        (result.rows, result.embedded, result.deleted) for result in results
    ] == EXPECTED_PARTITIONS
    assert [len(result.unsplittable) for result in results] == [1, 0, 0]
    equals_a_local_build(databases, spec)


EXPECTED_PARTITIONS = [
    (93, 17, 12),
    (93, 16, 13),
    (91, 25, 10),
]  # (rows, embedded, deleted) of each range


def test_a_range_reads_the_same_rows_through_the_keys_index(databases: Databases):
    from ptah_ray.ranges import (
        count_in_range,
        ensure_range_index,
        stored_in_range_in_order,
        stored_unsplittable,
    )

    spec = databases.spec("indexed")
    with ptah.open_project(spec) as project:
        project.build()
        identity, source_spec, url = (
            project.generation(None).identity.identity,
            project.spec.source,
            project.spec.store,
        )
    with PartitionedSource(source_spec) as source:
        ranges, kinds = [*source.partitions(3), KeyRange(None, None)], source.key_kinds
    in_ranges = [_identities(source_spec, within) for within in ranges]
    assert kinds == ("text", "bigint")

    def read(store, within) -> tuple[int, list[str]]:
        return count_in_range(store, identity, kinds, within), list(
            stored_in_range_in_order(store, identity, kinds, within)
        )

    with PgvectorStore(url, create=False) as store:
        scanned = [read(store, within) for within in ranges]
        odd = stored_unsplittable(store, identity, kinds)
        ensure_range_index(store, identity, kinds)
        ensure_range_index(store, identity, kinds)  # once is enough: the second finds it
        store._connection.execute("SET enable_seqscan = off")
        plans = [
            _plan(store, lambda: count_in_range(store, identity, kinds, ranges[1])),
            _plan(store, lambda: stored_unsplittable(store, identity, kinds)),
        ]
        indexed = [read(store, within) for within in ranges]
        assert (
            stored_unsplittable(store, identity, kinds)
            == odd
            == {f"3:a{SEP}b1:7": f"a{SEP}b{SEP}7"}
        )
        index = f"{store._table(identity)[0]}_keys_tb"
        table = store._table(identity)[0]
        # a key whose integer component is not an integer (the key column's type changed since): the
        # index's expression must not raise, or every later write to the table would fail; at most
        # the range its text component falls in holds it (whose worker deletes it: the source has no
        # such row)
        store._connection.execute(
            f"INSERT INTO {table} SELECT 'odd', 'a' || chr(31) || '12x', text_sha256, embedding "
            f"FROM {table} LIMIT 1"
        )
        found = [read(store, within) for within in ranges[:3]]
        assert [("odd" in rows) for _, rows in found] == [
            True,
            False,
            False,
        ]  # "a" sorts before every "t…" key
        assert [(count, [row for row in rows if row != "odd"]) for count, rows in found] == [
            (count + (at == 0), rows) for at, (count, rows) in enumerate(indexed[:3])
        ]
        store._connection.execute(f"DELETE FROM {table} WHERE row_identity = 'odd'")
    assert [
        f"Index Scan on {index}" in plan
        or f"Index Scan using {index}" in plan
        or f"Index Only Scan using {index}" in plan
        for plan in plans
    ] == [True, True]
    assert indexed == scanned and all(rows for _, rows in scanned)
    assert (
        [count for count, _ in scanned] == [len(rows) for _, rows in scanned] == [90, 91, 90, 271]
    )
    assert all(rows == sorted(rows) for rows in in_ranges) and f"3:a{SEP}b1:7" in in_ranges[0]
    # the range's rows in the source's code point order, but for the row whose key holds U+001F (the
    # driver's)
    assert [rows for _, rows in scanned] == [
        [row for row in rows if row != f"3:a{SEP}b1:7"] for rows in in_ranges
    ]
    assert (
        sum(len(rows) for _, rows in scanned[:3]) == len(scanned[3][1]) == 271
    )  # all but the key holding U+001F


def _identities(source_spec, within: KeyRange) -> list[str]:
    with PartitionedSource(source_spec, within=within) as source:
        return list(source.identities())


def _plan(store, call) -> str:
    """PostgreSQL's plan for the last statement ``call()`` runs on the store."""
    seen = _statements(store._connection)
    call()
    del store._connection.execute  # the spy
    return "\n".join(row[0] for row in store._connection.execute("EXPLAIN " + seen[-1]))
