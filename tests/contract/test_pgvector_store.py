"""What only the pgvector store does: a snapshot shared by a second transaction, the index, its
search."""

from __future__ import annotations

import numpy as np
import psycopg

from ptah.adapters.stores.pgvector import PgvectorStore
from ptah.adapters.stores.pgvector_index import vector_literal
from ptah.adapters.stores.pgvector_schema import vectors_table
from tests.contract.test_store_contract import IDENTITY, record


def test_a_shared_snapshot_outlives_the_one_it_copied(postgres_url):
    with PgvectorStore(postgres_url) as store:
        store.register_generation(record())
        store.write_vectors(IDENTITY, [("1:a", "a", "d")], np.ones((1, 3)))
        with store.snapshot() as first:
            shared = store.snapshot(like=first)
            copy = shared.__enter__()
        store.write_vectors(IDENTITY, [("1:b", "b", "d")], np.ones((1, 3)))
        try:
            assert copy.matrix(IDENTITY).keys == ["a"]
        finally:
            shared.__exit__(None, None, None)
        with store.snapshot() as later:
            assert later.matrix(IDENTITY).keys == ["a", "b"]


def test_the_vectors_table_is_named_after_the_identity_and_holds_pgvector_values(postgres_url):
    with PgvectorStore(postgres_url) as store:
        store.register_generation(record())
        store.write_vectors(
            IDENTITY, [("1:a", "a", "d")], np.array([[0.1, -2.5, 3.0]], dtype=np.float32)
        )
    assert vectors_table(IDENTITY) == "ptah_vectors_" + "ab" * 16
    with psycopg.connect(postgres_url) as connection:
        (text,) = connection.execute(
            f"SELECT embedding::text FROM {vectors_table(IDENTITY)}"
        ).fetchone()
    assert text == "[0.1,-2.5,3]"
    assert (
        vector_literal(np.array([0.1, -2.5, 3.0], dtype=np.float32))
        == "[0.10000000149011612,-2.5,3.0]"
    )


def test_index_search_uses_the_index_and_scores_by_cosine(postgres_url):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    rows = [(f"3:{i:03d}", f"{i:03d}", "d") for i in range(300)]
    with PgvectorStore(postgres_url) as store:
        store.register_generation(record(dimension=16))
        store.write_vectors(IDENTITY, rows, vectors)
        with store.snapshot() as snapshot:
            assert snapshot.index(IDENTITY) is None
        built = store.create_hnsw_index(IDENTITY, m=4, ef_construction=8)
        assert (built["m"], built["ef_construction"], built["operator_class"]) == (
            4,
            8,
            "vector_cosine_ops",
        )
        with store.snapshot() as snapshot:
            assert snapshot.index(IDENTITY) == built
            query = vectors[:2] + 0.01
            wide, narrow = snapshot.nearest(IDENTITY, query, [50, 50], 5)
    assert (
        len(wide) == len(narrow) == 5
    )  # HNSW returns at most ef_search rows: the index answered, not a scan
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = unit @ (query[0] / np.linalg.norm(query[0]))
    for key, score in wide:
        assert abs(score - float(expected[int(key)])) < 1e-6
    assert [score for _, score in wide] == sorted((score for _, score in wide), reverse=True)
