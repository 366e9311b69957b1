"""What only the SQLite store does, on real files: its folder, WAL mode, little-endian blobs,
chunked reads.

The behaviour both stores share (migrations, vectors, snapshots, query cache,
build lock) is held by ``tests/contract/test_store_contract.py``; damage by
``tests/hostile/test_damaged_store.py``.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ptah.adapters.stores.sqlite import SqliteStore
from tests.contract.test_store_contract import IDENTITY, record


@pytest.fixture
def store(tmp_path):
    with SqliteStore(tmp_path / ".ptah" / "ptah.db") as opened:
        opened.register_generation(record())
        yield opened


def test_opening_creates_the_folder_and_a_wal_file_with_every_table(tmp_path):
    path = tmp_path / ".ptah" / "ptah.db"
    SqliteStore(path).close()
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert {
        "migrations",
        "generations",
        "vectors",
        "query_cache",
        "lexical_indexes",
        "records",
    } <= tables


def test_vectors_are_stored_as_little_endian_float32(store):
    store.write_vectors(
        IDENTITY, [("1:b", "b", "d1")], np.array([[1.0, 2.0, 3.0]], dtype=np.float64)
    )
    blob = (
        sqlite3.connect(store.path)
        .execute("SELECT vector FROM vectors WHERE key = 'b'")
        .fetchone()[0]
    )
    assert blob == np.array([1.0, 2.0, 3.0], dtype="<f4").tobytes()


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
