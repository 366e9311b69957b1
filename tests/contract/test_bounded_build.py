"""A build whose memory is a block of rows: planned by one pass over the source's digests, the rows
gone found by a merge, the rows to embed read again a block at a time; and the pgvector store's
check read by blocks.

Blocks of 3 rows (``BLOCK_ROWS``) make the ten DOCS span several, on both
stores and both sources; a plug-in's store and source, which read no blocks,
build as ptah's own.
"""

from __future__ import annotations

from contextlib import contextmanager

import psycopg
import pytest

from ptah.adapters.stores import pgvector_snapshot
from ptah.adapters.stores.base import BlockDigests
from ptah.adapters.stores.pgvector_schema import vectors_table
from ptah.core.spec import redact_url
from ptah.services import verify as verification
from ptah.services.build import build
from ptah.services.verify import verify
from tests.conftest import run_cli
from tests.contract.conftest import make_workspace
from tests.contract.test_merge_verify import Plain
from tests.services.conftest import Workspace


def edit(space) -> None:
    """Two rows edited, two deleted, two inserted."""
    space.execute("UPDATE articles SET body = 'edited' WHERE id IN (2, 7)")
    space.execute("DELETE FROM articles WHERE id IN (4, 9)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(11, "New one", "Fresh text.", "published"), (12, "New two", "More text.", "published")],
    )


def counts(summary) -> tuple[int, int, int, int]:
    return summary.rows, summary.embedded, summary.deleted, summary.unchanged


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(verification, "BLOCK_ROWS", 3)


@pytest.mark.parametrize("source_kind", ["sqlite", "postgresql"])
def test_an_incremental_build_over_many_blocks_embeds_what_changed_and_deletes_what_went(
    store_kind, source_kind, tmp_path, request, small_blocks
):
    server = request.getfixturevalue("postgres_server")
    store = server.url(server.create_database()) if store_kind == "pgvector" else None
    space = make_workspace(
        tmp_path,
        store,
        server.url(server.create_database()) if source_kind == "postgresql" else None,
    )
    with space.project() as project:
        assert counts(build(project, batch_rows=2)) == (10, 10, 0, 0)
    edit(space)
    seen: list[tuple[int, int]] = []
    with space.project() as project:
        assert counts(build(project, batch_rows=3, progress=lambda *call: seen.append(call))) == (
            10,
            4,
            2,
            6,
        )
        result = verify(project)
        identity = project.generation().identity.identity
    assert seen == [(0, 4), (3, 4), (4, 4)]
    assert (result.ok, result.rows, result.vectors, result.fresh) == (True, 10, 10, 10)
    assert space.store_keys(identity) == ["1", "2", "3", "5", "6", "7", "8", "10", "11", "12"]
    with space.project() as project:
        assert counts(build(project)) == (10, 0, 0, 10)


class PlainStore:
    """A store whose snapshots read no blocks of digests, as a plug-in's might."""

    def __init__(self, inner):
        self._inner = inner

    @contextmanager
    def snapshot(self):
        with self._inner.snapshot() as snapshot:
            yield Plain(snapshot, ("digests_of", "stored_in_order", "held_keys"))

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def test_a_plug_ins_store_and_source_build_as_ptahs_own(tmp_path, small_blocks):
    space = make_workspace(tmp_path, None)
    with space.project() as project:
        build(project)
    edit(space)
    with space.project() as project:
        store = PlainStore(project.store())
        with store.snapshot() as snapshot:
            assert not isinstance(snapshot, BlockDigests)
        project.store = lambda create=False: store
        project.source = Plain(project.source, ("digests", "identities", "lookup_identities"))
        assert counts(build(project, batch_rows=3)) == (10, 4, 2, 6)
    with space.project() as project:
        assert verify(project).ok


def test_rows_gone_are_looked_up_when_the_source_cannot_sort_its_keys(tmp_path, small_blocks):
    space = Workspace(tmp_path)
    space.execute("CREATE TABLE articles (id TEXT PRIMARY KEY, title TEXT, body TEXT)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?)",
        [(key, "t", "b") for key in ("a\x00bc", "b", "zz", "é\x00", "q", "r", "s")],
    )
    space.write_spec()
    with space.project() as project:
        assert counts(build(project)) == (7, 7, 0, 0)
        assert project.source.identities() is None  # SQLite's length() stops at the NUL
    space.execute("DELETE FROM articles WHERE id = ?", [("zz",), ("b",), ("a\x00bc",)])
    with space.project() as project:
        assert counts(build(project)) == (4, 0, 3, 4)
        assert verify(project).ok


def test_the_sqlite_store_s_wal_stays_small_while_a_build_writes(
    tmp_path, small_blocks, monkeypatch
):
    """No read transaction stays open while the build writes: one would keep SQLite from
    checkpointing, and the write-ahead log would grow with every vector written."""
    monkeypatch.setattr(verification, "BLOCK_ROWS", 512)
    space = Workspace(tmp_path)
    space.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?)",
        [(i, f"title {i}", f"body {i}") for i in range(12_000)],
    )
    space.write_spec(generations={"docs": {"model": "ptah/deterministic", "dimension": 256}})
    wal = tmp_path / ".ptah" / "ptah.db-wal"
    largest = []

    def progress(done, total):
        largest.append(wal.stat().st_size if wal.exists() else 0)

    with space.project() as project:
        build(project)  # the vectors written, 1 KiB each: ~13 MiB in all
    space.execute("UPDATE articles SET body = 'edited'")
    with space.project() as project:  # every row read again in the store, then written
        assert build(project, batch_rows=256, progress=progress).embedded == 12_000
    assert 0 < max(largest) < 6 * 2**20  # SQLite checkpoints at 1,000 pages (4 MiB)


def test_the_pgvector_check_reads_blocks_and_counts_every_vector(
    tmp_path, postgres_url, capsys, monkeypatch
):
    monkeypatch.setattr(pgvector_snapshot, "_CHECK_ROWS", 3)
    space = make_workspace(tmp_path / "project", postgres_url)
    monkeypatch.chdir(space.folder)
    assert run_cli(capsys, "inference", "verify")[0] == 1
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    assert run_cli(capsys, "inference", "verify")[0] == 0
    with space.project() as project:
        identity = project.generation().identity.identity
    table = vectors_table(identity)
    with psycopg.connect(
        postgres_url, autocommit=True
    ) as connection:  # rows 2 and 10 trade keys: blocks 1 and 4
        connection.execute(f"UPDATE {table} SET key = 'x' WHERE key = '2'")
        connection.execute(f"UPDATE {table} SET key = '2' WHERE key = '10'")
        connection.execute(f"UPDATE {table} SET key = '10' WHERE key = 'x'")
    assert run_cli(capsys, "inference", "verify") == (
        3,
        "",
        f"store {redact_url(postgres_url)} is damaged: 2 of 10 vectors of generation docs are stored under a "
        "key that is not their row's, the first under key '10'; ptah never writes such keys; delete those rows "
        f"from table {table} and run `ptah inference build` to embed them again.\n",
    )
