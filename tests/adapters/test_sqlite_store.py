"""The SQLite store on real files: migrations, vectors, snapshots, query cache, build lock."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ptah.adapters.stores.migrations import MIGRATIONS
from ptah.adapters.stores.sqlite import GenerationRecord, SqliteStore
from ptah.core.errors import EXIT_OPERATIONAL, StoreUnavailable

IDENTITY = "sha256:" + "ab" * 32


def record(identity: str = IDENTITY, dimension: int = 3, name: str = "docs") -> GenerationRecord:
    return GenerationRecord(
        identity=identity,
        name=name,
        model="ptah/deterministic",
        settings={"normalize": True},
        dimension=dimension,
        model_digest="sha256:" + "cd" * 32,
        identity_parts={"model": "ptah/deterministic"},
        library_versions={"ptah": "0.1.0"},
    )


@pytest.fixture
def store(tmp_path):
    with SqliteStore(tmp_path / ".ptah" / "ptah.db") as opened:
        opened.register_generation(record())
        yield opened


def test_opening_creates_the_folder_a_wal_file_and_records_each_migration(tmp_path):
    path = tmp_path / ".ptah" / "ptah.db"
    SqliteStore(path).close()
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    names = [row[0] for row in connection.execute("SELECT name FROM migrations ORDER BY rowid")]
    assert names == [name for name, _ in MIGRATIONS]
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"migrations", "generations", "vectors", "query_cache"} <= tables


def test_reopening_applies_nothing_twice(tmp_path):
    path = tmp_path / "ptah.db"
    SqliteStore(path).close()
    SqliteStore(path).close()
    count = sqlite3.connect(path).execute("SELECT count(*) FROM migrations").fetchone()[0]
    assert count == len(MIGRATIONS)


def test_a_store_from_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "ptah.db"
    SqliteStore(path).close()
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO migrations VALUES ('9999_from_the_future', '2099-01-01')")
    connection.commit()
    connection.close()
    with pytest.raises(StoreUnavailable, match="9999_from_the_future") as raised:
        SqliteStore(path)
    assert raised.value.exit_code == EXIT_OPERATIONAL


def test_a_missing_store_is_not_created_by_a_reader(tmp_path):
    with pytest.raises(StoreUnavailable, match="nothing has been built yet"):
        SqliteStore(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_file_that_is_not_sqlite_is_unavailable(tmp_path):
    path = tmp_path / "ptah.db"
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(StoreUnavailable, match="cannot be used"):
        SqliteStore(path)


def test_vectors_round_trip_as_little_endian_float32(store):
    vectors = np.array([[1.0, 2.0, 3.0], [-0.5, 0.25, 0.125]], dtype=np.float64)
    store.write_vectors(IDENTITY, [("1:b", "b", "d1"), ("1:a", "a", "d2")], vectors)
    blob = sqlite3.connect(store.path).execute("SELECT vector FROM vectors WHERE key = 'b'").fetchone()[0]
    assert blob == np.array([1.0, 2.0, 3.0], dtype="<f4").tobytes()
    with store.snapshot() as snapshot:
        keys, row_identities, matrix = snapshot.matrix(IDENTITY)
        assert snapshot.digests(IDENTITY) == {"1:a": ("a", "d2"), "1:b": ("b", "d1")}
    assert keys == ["a", "b"]  # ordered by row identity
    assert row_identities == ["1:a", "1:b"]
    assert matrix.dtype == np.float32 and matrix.flags["C_CONTIGUOUS"]
    assert matrix.tolist() == [[-0.5, 0.25, 0.125], [1.0, 2.0, 3.0]]


def test_matrix_reads_across_chunks(store, monkeypatch):
    import ptah.adapters.stores.sqlite as module

    monkeypatch.setattr(module, "_READ_CHUNK", 4)
    vectors = np.arange(30, dtype=np.float32).reshape(10, 3)
    rows = [(f"2:{i:02d}", f"{i:02d}", "d") for i in range(10)]
    store.write_vectors(IDENTITY, rows, vectors)
    with store.snapshot() as snapshot:
        matrix = snapshot.matrix(IDENTITY)
    assert matrix.keys == [f"{i:02d}" for i in range(10)]
    assert np.array_equal(matrix.vectors, vectors)


def test_a_damaged_vector_is_reported_not_misread(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "d")], np.ones((1, 3)))
    connection = sqlite3.connect(store.path)
    connection.execute("UPDATE vectors SET vector = x'0000'")
    connection.commit()
    with store.snapshot() as snapshot, pytest.raises(StoreUnavailable, match="damaged"):
        snapshot.matrix(IDENTITY)


def test_rewriting_a_row_replaces_its_vector_and_digest(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "old")], np.zeros((1, 3)))
    store.write_vectors(IDENTITY, [("1:a", "a", "new")], np.ones((1, 3)))
    with store.snapshot() as snapshot:
        assert snapshot.digests(IDENTITY) == {"1:a": ("a", "new")}
        assert snapshot.matrix(IDENTITY).vectors.tolist() == [[1.0, 1.0, 1.0]]


def test_delete_vectors_counts_what_it_deleted(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "d"), ("1:b", "b", "d")], np.zeros((2, 3)))
    assert store.delete_vectors(IDENTITY, ["1:a", "1:z"]) == 1
    with store.snapshot() as snapshot:
        assert list(snapshot.digests(IDENTITY)) == ["1:b"]


def test_an_unregistered_generation_reads_as_empty(store):
    with store.snapshot() as snapshot:
        assert snapshot.generation("sha256:other") is None
        assert snapshot.digests("sha256:other") == {}
        assert snapshot.matrix("sha256:other").vectors.shape == (0, 0)


def test_registering_again_keeps_created_at_and_takes_the_new_name(store):
    first = store.generation(IDENTITY)
    store.register_generation(record(name="renamed"))
    again = store.generation(IDENTITY)
    assert again.name == "renamed"
    assert again.created_at == first.created_at
    assert again.settings == {"normalize": True}
    assert again.library_versions == {"ptah": "0.1.0"}
    assert again.model_digest == "sha256:" + "cd" * 32


def test_a_snapshot_does_not_see_writes_committed_after_it_began(store):
    store.write_vectors(IDENTITY, [("1:a", "a", "d")], np.zeros((1, 3)))
    with store.snapshot() as snapshot:
        assert snapshot.vector_count(IDENTITY) == 1
        writer = SqliteStore(store.path)
        writer.write_vectors(IDENTITY, [("1:b", "b", "d"), ("1:c", "c", "d")], np.ones((2, 3)))
        writer.delete_vectors(IDENTITY, ["1:a"])
        writer.close()
        assert snapshot.vector_count(IDENTITY) == 1
        assert snapshot.matrix(IDENTITY).keys == ["a"]
        assert list(snapshot.digests(IDENTITY)) == ["1:a"]
    with store.snapshot() as later:
        assert later.matrix(IDENTITY).keys == ["b", "c"]


def test_query_cache_returns_only_what_was_cached(store):
    store.cache_queries(IDENTITY, {"hello": np.array([1.0, 0.0, 0.5]), "world": np.array([0.0, 1.0, 0.0])})
    found = store.cached_queries(IDENTITY, ["hello", "absent", "hello"])
    assert list(found) == ["hello"]
    assert found["hello"].dtype == np.float32
    assert found["hello"].tolist() == [1.0, 0.0, 0.5]
    assert store.cached_queries("sha256:other", ["hello"]) == {}


def test_query_cache_overwrites_and_reads_many(store):
    store.cache_queries(IDENTITY, {f"q{i}": np.full(3, i, dtype=np.float32) for i in range(1200)})
    store.cache_queries(IDENTITY, {"q7": np.full(3, -1.0)})
    found = store.cached_queries(IDENTITY, [f"q{i}" for i in range(1200)])
    assert len(found) == 1200
    assert found["q7"].tolist() == [-1.0, -1.0, -1.0]
    assert found["q1199"].tolist() == [1199.0, 1199.0, 1199.0]


def test_the_build_lock_refuses_a_second_holder_with_its_pid(tmp_path):
    path = tmp_path / "ptah.db"
    SqliteStore(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from ptah.adapters.stores.sqlite import SqliteStore
                with SqliteStore({str(path)!r}).build_lock({IDENTITY!r}, "docs"):
                    print("locked", flush=True)
                    time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with SqliteStore(path) as store, pytest.raises(StoreUnavailable) as raised:
            with store.build_lock(IDENTITY, "docs"):
                pass
        assert str(raised.value).startswith(f"another build of generation docs is running (pid {holder.pid})")
        assert raised.value.exit_code == EXIT_OPERATIONAL
    finally:
        holder.kill()
        holder.wait()
    # The OS released the killed holder's lock.
    with SqliteStore(path) as store, store.build_lock(IDENTITY, "docs"):
        assert store.lock_path(IDENTITY).read_text() == f"{__import__('os').getpid()}\n"


def test_different_generations_lock_separately(tmp_path):
    with SqliteStore(tmp_path / "ptah.db") as store:
        with store.build_lock(IDENTITY, "docs"), store.build_lock("sha256:" + "ef" * 32, "other"):
            assert store.lock_path(IDENTITY) != store.lock_path("sha256:" + "ef" * 32)
