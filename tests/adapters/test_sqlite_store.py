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
from ptah.core.errors import EXIT_OPERATIONAL, StoreDamaged, StoreUnavailable

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


def test_a_missing_store_is_not_created_by_a_reader(tmp_path):
    with pytest.raises(StoreUnavailable, match="nothing has been built yet"):
        SqliteStore(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_file_that_is_not_sqlite_is_damaged(tmp_path):
    path = tmp_path / "ptah.db"
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(StoreDamaged) as info:
        SqliteStore(path)
    assert str(info.value) == (
        f"store {path} is damaged (SQLite: file is not a database); move it aside and run `ptah inference build` again."
    )
    assert info.value.exit_code == 3


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
    import ptah.adapters.stores.sqlite_snapshot as module

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
