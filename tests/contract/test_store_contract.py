"""One contract, two stores: the SQLite file and pgvector must behave the same, on real databases.

Every test here runs once over each store (``store_kind``). The store-level
tests speak the store interface; the build tests go through
``ptah.services.build`` with the recording deterministic embedder the project
opens, and real second processes for the lock and SIGKILL tests.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.adapters.stores.records import MIGRATIONS as SQLITE_MIGRATIONS
from ptah.adapters.stores.sqlite import GenerationRecord, SqliteStore
from ptah.core.errors import EXIT_OPERATIONAL, StoreUnavailable
from ptah.core.provenance import text_digest
from ptah.services.build import build
from ptah.services.verify import verify
from tests.services.test_build import SLOW_MODEL, model_of, slow_build_of

IDENTITY = "sha256:" + "ab" * 32
OTHER = "sha256:" + "ef" * 32


def record(identity: str = IDENTITY, dimension: int = 3, name: str = "docs") -> GenerationRecord:
    return GenerationRecord(
        identity=identity,
        name=name,
        model="ptah/deterministic",
        settings={"normalize": True, "batch_size": 4},
        dimension=dimension,
        model_digest="sha256:" + "cd" * 32,
        identity_parts={"model": "ptah/deterministic"},
        library_versions={"ptah": "0.1.0"},
    )


class Location:
    """Where one kind of store lives, and the few things a test does to it behind the store's
    back."""

    def __init__(self, kind: str, target):
        self.kind = kind
        self.target = target  # a path (sqlite) or a URL (pgvector)

    def open(self):
        if self.kind == "sqlite":
            return SqliteStore(self.target)
        from ptah.adapters.stores.pgvector import PgvectorStore

        return PgvectorStore(self.target)

    def known_migrations(self) -> list[str]:
        if self.kind == "sqlite":
            return [name for name, _ in SQLITE_MIGRATIONS]
        from ptah.adapters.stores.pgvector_schema import MIGRATIONS

        return [name for name, _ in MIGRATIONS]

    def applied_migrations(self) -> list[str]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as connection:
                return [
                    row[0]
                    for row in connection.execute("SELECT name FROM migrations ORDER BY rowid")
                ]
        import psycopg

        with psycopg.connect(self.target) as connection:
            return [
                row[0]
                for row in connection.execute("SELECT name FROM ptah_migrations ORDER BY position")
            ]

    def record_future_migration(self) -> None:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as connection:
                connection.execute(
                    "INSERT INTO migrations VALUES ('9999_from_the_future', '2099-01-01')"
                )
            return
        import psycopg

        with psycopg.connect(self.target, autocommit=True) as connection:
            connection.execute(
                "INSERT INTO ptah_migrations VALUES ('9999_from_the_future', 9999, '2099-01-01')"
            )


@pytest.fixture
def location(store_kind, tmp_path, request) -> Location:
    if store_kind == "sqlite":
        return Location("sqlite", tmp_path / ".ptah" / "ptah.db")
    return Location("pgvector", request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(location):
    with location.open() as opened:
        opened.register_generation(record())
        yield opened


# --- schema -----------------------------------------------------------------------------


def test_opening_records_each_migration_once(location):
    location.open().close()
    location.open().close()
    assert location.applied_migrations() == location.known_migrations()


def test_a_store_from_a_newer_schema_is_refused(location):
    location.open().close()
    location.record_future_migration()
    with pytest.raises(StoreUnavailable, match="9999_from_the_future") as raised:
        location.open()
    assert raised.value.exit_code == EXIT_OPERATIONAL
    assert "written by a newer ptah" in str(raised.value)


def test_a_reader_never_creates_a_store(store_workspace):
    with store_workspace.project() as project:
        assert project.store() is None
    with store_workspace.project() as project:
        assert project.store() is None  # still nothing: reading created nothing


# --- vectors ----------------------------------------------------------------------------


def test_vectors_round_trip_exactly_ordered_by_row_identity(store):
    vectors = np.array([[1.0, 2.0, 3.0], [-0.5, 0.25, 0.125]], dtype=np.float64)
    store.write_vectors(IDENTITY, [("1:b", "b", "d1"), ("1:a", "a", "d2")], vectors)
    with store.snapshot() as snapshot:
        keys, row_identities, matrix = snapshot.matrix(IDENTITY)
        assert snapshot.digests(IDENTITY) == {"1:a": ("a", "d2"), "1:b": ("b", "d1")}
        assert list(snapshot.digests(IDENTITY)) == ["1:a", "1:b"]
        assert snapshot.vector_count(IDENTITY) == 2
    assert (keys, row_identities) == (["a", "b"], ["1:a", "1:b"])
    assert matrix.dtype == np.float32 and matrix.flags["C_CONTIGUOUS"]
    assert matrix.tolist() == [[-0.5, 0.25, 0.125], [1.0, 2.0, 3.0]]


def test_rewriting_a_row_replaces_its_vector_and_digest(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "old")], np.zeros((1, 3)))
    store.write_vectors(IDENTITY, [("1:a", "a", "new")], np.ones((1, 3)))
    with store.snapshot() as snapshot:
        assert snapshot.digests(IDENTITY) == {"1:a": ("a", "new")}
        assert snapshot.matrix(IDENTITY).vectors.tolist() == [[1.0, 1.0, 1.0]]


def test_delete_vectors_counts_what_it_deleted(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "d"), ("1:b", "b", "d")], np.zeros((2, 3)))
    assert store.delete_vectors(IDENTITY, ["1:a", "1:z"]) == 1
    assert store.delete_vectors(IDENTITY, []) == 0
    assert store.delete_vectors("sha256:never", ["1:b"]) == 0
    with store.snapshot() as snapshot:
        assert list(snapshot.digests(IDENTITY)) == ["1:b"]


def test_an_unregistered_generation_reads_as_empty(store):
    with store.snapshot() as snapshot:
        assert snapshot.generation("sha256:other") is None
        assert snapshot.digests("sha256:other") == {}
        assert snapshot.vector_count("sha256:other") == 0
        assert snapshot.matrix("sha256:other").vectors.shape == (0, 0)


def test_registering_again_keeps_created_at_and_takes_the_new_name(store):
    first = store.generation(IDENTITY)
    store.register_generation(record(name="renamed"))
    again = store.generation(IDENTITY)
    assert (again.name, again.created_at, again.dimension) == ("renamed", first.created_at, 3)
    assert again.settings == {"normalize": True, "batch_size": 4}
    assert again.identity_parts == {"model": "ptah/deterministic"}
    assert again.library_versions == {"ptah": "0.1.0"}
    assert again.model_digest == "sha256:" + "cd" * 32
    assert [g.identity for g in store.generations()] == [IDENTITY]


def test_a_changed_dimension_is_refused(store):
    with pytest.raises(StoreUnavailable) as raised:
        store.register_generation(record(dimension=4))
    assert (
        str(raised.value)
        == f"generation {IDENTITY} is stored with dimension 3, but its model now gives 4."
    )
    assert store.generation(IDENTITY).dimension == 3


def test_a_snapshot_does_not_see_writes_committed_after_it_began(store, location):
    store.write_vectors(IDENTITY, [("1:a", "a", "d")], np.zeros((1, 3)))
    with store.snapshot() as snapshot:
        assert snapshot.vector_count(IDENTITY) == 1
        with location.open() as writer:
            writer.write_vectors(IDENTITY, [("1:b", "b", "d"), ("1:c", "c", "d")], np.ones((2, 3)))
            writer.delete_vectors(IDENTITY, ["1:a"])
            writer.register_generation(record(OTHER))
        assert snapshot.vector_count(IDENTITY) == 1
        assert snapshot.matrix(IDENTITY).keys == ["a"]
        assert list(snapshot.digests(IDENTITY)) == ["1:a"]
        assert snapshot.generation(OTHER) is None
    with store.snapshot() as later:
        assert later.matrix(IDENTITY).keys == ["b", "c"]
        assert later.generation(OTHER) is not None


# --- query cache ------------------------------------------------------------------------


def test_query_cache_returns_only_what_was_cached_overwritten_and_reads_many(store):
    store.cache_queries(
        IDENTITY, {"hello": np.array([1.0, 0.0, 0.5]), "world": np.array([0.0, 1.0, 0.0])}
    )
    found = store.cached_queries(IDENTITY, ["hello", "absent", "hello"])
    assert list(found) == ["hello"]
    assert found["hello"].dtype == np.float32
    assert found["hello"].tolist() == [1.0, 0.0, 0.5]
    assert store.cached_queries("sha256:other", ["hello"]) == {}
    store.cache_queries(IDENTITY, {})
    store.cache_queries(IDENTITY, {f"q{i}": np.full(3, i, dtype=np.float32) for i in range(1200)})
    store.cache_queries(IDENTITY, {"q7": np.full(3, -1.0)})
    found = store.cached_queries(IDENTITY, [f"q{i}" for i in range(1200)])
    assert len(found) == 1200
    assert found["q7"].tolist() == [-1.0, -1.0, -1.0]
    assert found["q1199"].tolist() == [1199.0, 1199.0, 1199.0]


# --- build lock -------------------------------------------------------------------------

HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from tests.contract.test_store_contract import Location
    kind, target, identity = sys.argv[1:4]
    with Location(kind, target).open() as store, store.build_lock(identity, "docs"):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_the_build_lock_refuses_a_second_holder_and_dies_with_the_first(location):
    location.open().close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, location.kind, str(location.target), IDENTITY],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with location.open() as store, pytest.raises(StoreUnavailable) as raised:
            with store.build_lock(IDENTITY, "docs"):
                pass
        assert str(raised.value) == (
            f"another build of generation docs is running (pid {holder.pid}); "
            "wait for it to finish, then run the build again."
        )
        assert raised.value.exit_code == EXIT_OPERATIONAL
        with location.open() as store, store.build_lock(OTHER, "other"):
            pass  # another generation's lock is free
    finally:
        holder.kill()
        holder.wait()
    with location.open() as store:  # the killed holder's lock was released by the OS / the server
        for _attempt in range(50):
            try:
                with store.build_lock(IDENTITY, "docs"):
                    break
            except StoreUnavailable:
                time.sleep(0.1)  # the server notices a dead client's socket within moments
        else:
            pytest.fail("the lock of a killed holder was never released")


# --- builds through the services ---------------------------------------------------------


def recorder() -> DeterministicEmbedder:
    return DeterministicEmbedder(dimension=32)


def test_builds_are_incremental_and_hold_the_embedders_vectors(store_workspace):
    space = store_workspace
    with space.project() as project:
        embedder = model_of(project)
        summary = build(project)
        identity = project.generation().identity.identity
        matrix = project.matrix(project.generation())
    assert (
        summary.rows,
        summary.embedded,
        summary.unchanged,
        summary.deleted,
        summary.dimension,
    ) == (10, 10, 0, 0, 32)
    assert embedder.embedded_texts() == [space.text(row) for row in space.docs]
    assert matrix.keys == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
    assert np.array_equal(
        matrix.vectors, recorder().embed_documents([space.text(row) for row in space.docs])
    )

    space.execute("UPDATE articles SET body = body || ' Updated.' WHERE id IN (2, 5, 8)")
    space.execute("DELETE FROM articles WHERE id = 4")
    with space.project() as project:
        embedder = model_of(project)
        summary = build(project)
        result = verify(project)
        with project.store().snapshot() as snapshot:
            digests = snapshot.digests(identity)
    assert embedder.embedded_texts() == [
        space.text(space.docs[i - 1]) + " Updated." for i in (2, 5, 8)
    ]
    assert (summary.rows, summary.embedded, summary.unchanged, summary.deleted) == (9, 3, 6, 1)
    assert digests["1:2"] == ("2", text_digest(space.text(space.docs[1]) + " Updated."))
    assert "1:4" not in digests and len(digests) == 9
    assert (result.rows, result.covered, result.fresh, result.orphans, result.ok) == (
        9,
        9,
        9,
        0,
        True,
    )

    with space.project() as project:
        embedder = model_of(project)
        summary = build(project)
    assert (summary.embedded, summary.unchanged, summary.deleted, embedder.calls) == (0, 9, 0, [])


def test_both_stores_hold_the_same_generation_after_the_same_builds(tmp_path, postgres_url):
    from tests.contract.conftest import make_workspace

    results = []
    for folder, store in (("sqlite", None), ("pgvector", postgres_url)):
        space = make_workspace(tmp_path / folder, store)
        space.write_spec(filter="status = 'published'")
        with space.project() as project:
            build(project, batch_rows=3)
        space.execute("UPDATE articles SET title = 'Cancel a plan' WHERE id = 1")
        with space.project() as project:
            build(project, batch_rows=3)
            identity = project.generation().identity.identity
            with project.store().snapshot() as snapshot:
                results.append(
                    (
                        identity,
                        snapshot.generation(identity).settings,
                        snapshot.digests(identity),
                        snapshot.matrix(identity),
                    )
                )
    (identity_a, settings_a, digests_a, matrix_a), (identity_b, settings_b, digests_b, matrix_b) = (
        results
    )
    assert (identity_a, settings_a, digests_a) == (identity_b, settings_b, digests_b)
    assert (matrix_a.keys, matrix_a.row_identities) == (matrix_b.keys, matrix_b.row_identities)
    assert len(matrix_a.keys) == 9
    assert np.array_equal(matrix_a.vectors, matrix_b.vectors)


@pytest.fixture
def slow_build(store_workspace):
    with slow_build_of(store_workspace) as process:
        yield process


def test_a_second_build_of_the_same_generation_refuses(store_workspace, slow_build, embedders):
    embedders[SLOW_MODEL] = recorder()
    with store_workspace.project() as project, pytest.raises(StoreUnavailable) as raised:
        build(project)
    assert str(raised.value) == (
        f"another build of generation docs is running (pid {slow_build.pid}); "
        "wait for it to finish, then run the build again."
    )
    assert raised.value.exit_code == EXIT_OPERATIONAL


def test_a_build_killed_with_sigkill_resumes_with_only_the_remainder(
    store_workspace, slow_build, embedders
):
    os.kill(slow_build.pid, signal.SIGKILL)
    assert slow_build.wait() == -signal.SIGKILL
    with store_workspace.project() as project:
        identity = project.generation().identity.identity
    assert store_workspace.store_keys(identity) == ["1", "2", "3"]  # the first batch, committed
    embedder = embedders[SLOW_MODEL] = recorder()
    with store_workspace.project() as project:
        summary = None
        for _attempt in range(50):  # the server may take a moment to notice the killed client
            try:
                summary = build(project)
                break
            except StoreUnavailable:
                time.sleep(0.1)
        result = verify(project)
    assert embedder.embedded_texts() == [
        store_workspace.text(row) for row in store_workspace.docs[3:]
    ]
    assert (summary.embedded, summary.unchanged) == (7, 3)
    assert (result.rows, result.covered, result.fresh, result.ok) == (10, 10, 10, True)


# --- lexical indexes ----------------------------------------------------------------------


def test_lexical_indexes_are_kept_and_replaced_per_template(store):
    assert store.lexical_index("sha256:f1", "settings") is None
    store.save_lexical_index("sha256:f1", "settings", "t" * 64, 10, 50, b"first\x00bytes")
    assert store.lexical_index("sha256:f1", "settings") == b"first\x00bytes"
    assert store.lexical_index("sha256:f1", "other settings") is None
    store.save_lexical_index(
        "sha256:f2", "settings", "t" * 64, 11, 51, b"second"
    )  # the same template, new text
    assert store.lexical_index("sha256:f1", "settings") is None
    assert store.lexical_index("sha256:f2", "settings") == b"second"
    store.save_lexical_index("sha256:f2", "settings", "t" * 64, 11, 51, b"again")
    assert store.lexical_index("sha256:f2", "settings") == b"again"
